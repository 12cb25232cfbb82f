//go:build linux

package supervise

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gone reports whether pid has exited (a zombie counts as exited).
func gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); !gone(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("pid %d still runs", pid)
		}
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written", path)
		}
	}
}

// TestExitStatusComesBack: the supervisor exits as the command did.
func TestExitStatusComesBack(t *testing.T) {
	cmd := exec.Command("sh", "-c", "echo out; echo err >&2; exit 3")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	Wrap(cmd)
	err := cmd.Run()
	if cmd.ProcessState.ExitCode() != 3 || out.String() != "out\n" || errOut.String() != "err\n" {
		t.Fatalf("err %v, exit %d, stdout %q, stderr %q", err, cmd.ProcessState.ExitCode(), out.String(), errOut.String())
	}
	cmd = exec.Command("sh", "-c", "kill -KILL $$")
	Wrap(cmd)
	cmd.Run()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("a command killed by SIGKILL: %v", cmd.ProcessState)
	}
}

// TestLeftoversAreKilled: what a command leaves running when it exits
// goes with it, a process that ignores SIGTERM included.
func TestLeftoversAreKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", `(trap '' TERM; exec sleep 300) & echo $! > `+pidFile)
	Wrap(cmd)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, readPid(t, pidFile), 5*time.Second)
}

// TestCancelReachesStubbornGrandchildren: cancelling as the command node
// does (SIGTERM to the process group) ends the command, and a grandchild
// that ignores SIGTERM is killed Grace later.
func TestCancelReachesStubbornGrandchildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "sh", "-c", `(trap '' TERM; exec sleep 300) & echo $! > `+pidFile+`; wait`)
	Wrap(cmd)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, pidFile)
	cancel()
	cmd.Wait()
	waitGone(t, pid, Grace+5*time.Second)
}
