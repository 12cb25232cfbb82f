package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHugeExpressionIsAConfigError: validate of a 2 MB expression of a
// million operators exits 2 with one diagnostic at its file and line,
// in well under 200 MB. A million unary minus signs ended in "fatal
// error: stack overflow" after 1.4 GB (the Go runtime's exit code is 2
// as well); a million additions validated in 2.1 GB.
func TestHugeExpressionIsAConfigError(t *testing.T) {
	const n = 1_000_000
	tests := []struct{ name, expr, summary string }{
		{"unary minus", strings.Repeat("- ", n) + "1", "Nesting too deep"},
		{"additions", "1" + strings.Repeat(" + 1", n), "Expression too long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.hcl"), "locals {\n  x = "+tc.expr+"\n}\n")
			cmd := exec.Command(binPath, "validate", dir)
			cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+t.TempDir())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			code := runExitCode(t, cmd.Run())
			if code != exitConfigError {
				t.Fatalf("exit %d, want %d\n%.2000s", code, exitConfigError, stderr.String())
			}
			if !strings.Contains(stderr.String(), "Error: "+tc.summary) || !strings.Contains(stderr.String(), "main.hcl:2:") {
				t.Fatalf("want %q at main.hcl:2:\n%.2000s", tc.summary, stderr.String())
			}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				t.Logf("max RSS %d MB", ru.Maxrss>>10)
				if ru.Maxrss > 200<<10 {
					t.Errorf("max RSS %d MB, want under 200", ru.Maxrss>>10)
				}
			}
		})
	}
}
