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
// with it (parent-death signal), here through process isolation too.
func TestKilledApplyLeavesNoOrphans(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
command "long" {
  run = ["sh", "-c", "echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300"]
}
`, pidFile, pidFile, pidFile))
	for _, isolation := range []string{"auto", "process"} {
		t.Run(isolation, func(t *testing.T) {
			os.Remove(pidFile)
			cmd := exec.Command(binPath, "apply", "-isolation", isolation, dir)
			cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var pid int
			for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the command did not start")
				}
				pid, _ = strconv.Atoi(strings.TrimSpace(readFile(pidFile)))
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the command (pid %d) outlived its killed apply", pid)
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
