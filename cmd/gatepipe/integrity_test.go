package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func tarOf(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body = "pwned"
			h.Size = int64(len(body))
		}
		h.Mode = 0o644
		tw.WriteHeader(&h)
		tw.Write([]byte(body))
	}
	tw.Close()
	return buf.Bytes()
}

// TestHostileArchivesThroughApply extracts each hostile archive shape
// with the real binary, as a dataset source, and checks that apply fails
// and that no entry landed anywhere (cache or pipeline directory).
func TestHostileArchivesThroughApply(t *testing.T) {
	sym, hard, reg := byte(tar.TypeSymlink), byte(tar.TypeLink), byte(tar.TypeReg)
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(make([]byte, 4<<20))
	zw.Close()
	tests := map[string]struct {
		archive, name, extra, want string
	}{
		"symlink chain": {string(tarOf(t,
			tar.Header{Name: "a", Typeflag: sym, Linkname: "."},
			tar.Header{Name: "a/b", Typeflag: sym, Linkname: ".."},
			tar.Header{Name: "b/pwned.txt", Typeflag: reg})), "x.tar", "", "resolves outside the target directory"},
		"hard link chain": {string(tarOf(t,
			tar.Header{Name: "a", Typeflag: sym, Linkname: "."},
			tar.Header{Name: "a/b", Typeflag: sym, Linkname: ".."},
			tar.Header{Name: "h", Typeflag: hard, Linkname: "b/x"},
			tar.Header{Name: "h/pwned.txt", Typeflag: reg})), "x.tar", "", "outside the target directory"},
		"dotdot":   {string(tarOf(t, tar.Header{Name: "../pwned.txt", Typeflag: reg})), "x.tar", "", "escapes the target directory"},
		"absolute": {string(tarOf(t, tar.Header{Name: "/tmp/pwned.txt", Typeflag: reg})), "x.tar", "", "absolute path"},
		"bomb":     {bomb.String(), "zeros.bin.gz", "max_extract_bytes = 100000", "raise max_extract_bytes"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			cache, dir := filepath.Join(base, "cache"), filepath.Join(base, "pipeline")
			writeFile(t, filepath.Join(dir, tc.name), tc.archive)
			writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
dataset "d" {
  source {
    url = %q
    %s
  }
  format = "raw"
}
`, tc.name, tc.extra))
			r := gp(t, cache, "apply", dir)
			if r.code != exitRunFailure || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Fatalf("exit %d, want %d and %q:\n%s%s", r.code, exitRunFailure, tc.want, r.stdout, r.stderr)
			}
			var big []string
			filepath.Walk(base, func(p string, info os.FileInfo, err error) error {
				if err != nil {
					return nil
				}
				if strings.HasPrefix(info.Name(), "pwned") || (info.Mode().IsRegular() && info.Size() > 1<<20) {
					big = append(big, p)
				}
				return nil
			})
			if _, err := os.Lstat("/tmp/pwned.txt"); err == nil {
				big = append(big, "/tmp/pwned.txt")
			}
			if len(big) > 0 {
				t.Fatalf("left behind: %v", big)
			}
			if v := gp(t, cache, "cache", "verify"); v.code != 0 {
				t.Fatalf("cache verify: %s%s", v.stdout, v.stderr)
			}
		})
	}
}

// TestKilledApplyLeavesNoOrphans: kill -9 of apply takes its commands
// with it, and every process they started: a grandchild that ignores
// SIGTERM and one that left the process group (setsid), here through
// process isolation too.
func TestKilledApplyLeavesNoOrphans(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	pids := map[string]string{}
	for _, name := range []string{"cmd", "stubborn", "escaped"} {
		pids[name] = filepath.Join(dir, name+".pid")
	}
	// Each writes its pid through a rename, so a half-written file is never read.
	script := fmt.Sprintf(`(trap '' TERM; echo $BASHPID > %[2]s.tmp; mv %[2]s.tmp %[2]s; sleep 300) &
setsid sh -c 'echo $$ > %[3]s.tmp; mv %[3]s.tmp %[3]s; exec sleep 300' &
echo $$ > %[1]s.tmp; mv %[1]s.tmp %[1]s; wait`, pids["cmd"], pids["stubborn"], pids["escaped"])
	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
command "long" {
  run = ["bash", "-c", %q]
}
`, script))
	for _, isolation := range []string{"auto", "process"} {
		t.Run(isolation, func(t *testing.T) {
			for _, p := range pids {
				os.Remove(p)
			}
			cmd := exec.Command(binPath, "apply", "-isolation", isolation, dir)
			cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			running := map[string]int{}
			for deadline := time.Now().Add(20 * time.Second); len(running) < len(pids); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the command's processes did not all start: %v", running)
				}
				for name, p := range pids {
					if pid, _ := strconv.Atoi(strings.TrimSpace(readFile(p))); pid > 0 {
						running[name] = pid
					}
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			for name, pid := range running {
				for deadline := time.Now().Add(15 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						for _, p := range running {
							syscall.Kill(p, syscall.SIGKILL)
						}
						t.Fatalf("the %s process (pid %d) outlived its killed apply", name, pid)
					}
				}
			}
		})
	}
}

// alive reports whether pid runs (a zombie waiting to be reaped does not).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
