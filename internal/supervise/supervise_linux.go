package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatepipe/gatepipe/internal/procattr"
	"golang.org/x/sys/unix"
)

// parentEnv marks a process started as a supervisor; its value is the pid
// of the gatepipe process that started it.
const parentEnv = "GATEPIPE_SUPERVISOR_OF"

// Grace is how long the supervisor waits, after passing a SIGTERM on to
// the command's processes, before it kills them with SIGKILL.
const Grace = 5 * time.Second

// The supervisor takes over in init, before main (or a test binary's
// TestMain) runs, in any binary that links this package: Wrap re-executes
// that binary.
func init() {
	if parent := os.Getenv(parentEnv); parent != "" && len(os.Args) >= 3 {
		os.Exit(supervise(parent, os.Args[1], os.Args[2:]))
	}
}

// Wrap makes cmd, not yet started, run under a supervisor (the small
// gatepipe-supervisor beside this binary, else this binary re-executed),
// in its own process group, told to die with gatepipe
// (SIGTERM, which it passes on before SIGKILL). cmd keeps its environment,
// directory and standard streams; the command's exit status comes back
// as it was (a signal that killed it kills the supervisor). Where the
// binary cannot be found, cmd only gets its own process group and a
// parent-death signal.
func Wrap(cmd *exec.Cmd) {
	self, err := supervisor()
	if cmd.Err != nil || err != nil {
		cmd.SysProcAttr = procattr.Child()
		return
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(withoutParent(env), parentEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.Args = append([]string{self, cmd.Path}, cmd.Args...)
	cmd.Path = self
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// SupervisorName is the small supervisor binary make build puts beside
// gatepipe; it starts in about 1 ms, where gatepipe's own binary takes
// about 10 (its dependencies' package initialisation).
const SupervisorName = "gatepipe-supervisor"

// supervisor is the binary to run as the supervisor: SupervisorName beside
// this executable when it is there, else this executable itself.
func supervisor() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	small := filepath.Join(filepath.Dir(self), SupervisorName)
	if st, err := os.Stat(small); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return small, nil
	}
	return self, nil
}

func withoutParent(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, parentEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// supervise runs path with argv and returns its exit status. A SIGTERM,
// SIGINT or SIGHUP (gatepipe cancelling, or dying) is passed on to every
// descendant; Grace later, the survivors are killed. When the command
// exits, whatever it left running is killed too.
func supervise(parent, path string, argv []string) int {
	// Descendants whose parent dies are re-parented to us, not to init,
	// so that we can find them.
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if strconv.Itoa(os.Getppid()) != parent {
		return 1 // gatepipe died before the parent-death signal was set
	}
	child := &exec.Cmd{Path: path, Args: argv, Env: withoutParent(os.Environ()),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if err := child.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", argv[0], err)
		return 127
	}
	done := make(chan struct{})
	go func() {
		child.Wait()
		close(done)
	}()
	var grace <-chan time.Time
	for {
		select {
		case <-done:
			// Whatever the command left running was re-parented to us:
			// without a child left, there is nothing to look for.
			if hasChildren() {
				signalTree(syscall.SIGKILL)
				reapAll(2 * time.Second)
			}
			return exitStatus(child.ProcessState)
		case s := <-sigs:
			signalTree(s.(syscall.Signal))
			if grace == nil {
				grace = time.After(Grace)
			}
		case <-grace:
			signalTree(syscall.SIGKILL)
		}
	}
}

// exitStatus returns the command's exit code; a command killed by a
// signal takes the supervisor with the same signal, so that gatepipe sees
// what the command saw.
func exitStatus(st *os.ProcessState) int {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		signal.Reset(ws.Signal())
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		time.Sleep(100 * time.Millisecond)
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// signalTree sends sig to every descendant of this process, repeating
// while new ones appear (a process may fork while it is being killed).
func signalTree(sig syscall.Signal) {
	seen := map[int]bool{}
	for range 10 {
		fresh := false
		for _, pid := range descendants(os.Getpid()) {
			if !seen[pid] || sig == syscall.SIGKILL {
				fresh = fresh || !seen[pid]
				seen[pid] = true
				_ = syscall.Kill(pid, sig)
			}
		}
		if !fresh {
			return
		}
	}
}

// hasChildren reports whether this process still has a child, reaping
// those that already exited.
func hasChildren() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return false // ECHILD: none
		case pid == 0:
			return true // one runs
		}
	}
}

// reapAll collects the exit status of re-parented descendants, so that no
// zombie is left, for at most d.
func reapAll(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.ECHILD:
			return
		case err == nil && pid == 0:
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// descendants lists the processes below root, read from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid := parentOf(pid); ppid > 0 {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads a process's parent pid from /proc/PID/stat (0 if gone).
func parentOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
