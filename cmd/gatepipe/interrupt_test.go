package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowForEach is a pipeline of 20,000 for_each keys whose list takes
// the evaluator a minute or so (20 million for-expression iterations),
// far longer than the tests below wait.
const slowForEach = `
locals {
  keys = flatten([for a in range(1000) : [for b in range(20) : "k${a}-${b}" if length([for j in range(1000) : j if j < 0]) == 0]])
}
command "c" {
  for_each = toset(local.keys)
  run      = ["true", each.key]
}
`

// TestSignalStopsEvaluation: SIGINT or SIGTERM stops validate, plan and
// apply while they evaluate a large for_each, at once, with 128 plus
// the signal's number and one line that says so; HCL's evaluator does
// not check a context, so before this they ran to the end. The bound is
// generous for a loaded machine; the stop takes about 10 ms.
func TestSignalStopsEvaluation(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), slowForEach)
	tests := []struct {
		verb string
		sig  syscall.Signal
		code int
	}{
		{"validate", syscall.SIGINT, 130},
		{"validate", syscall.SIGTERM, 143},
		{"plan", syscall.SIGINT, 130},
		{"apply", syscall.SIGINT, 130},
	}
	for _, tc := range tests {
		t.Run(tc.verb+"/"+tc.sig.String(), func(t *testing.T) {
			cache := t.TempDir()
			cmd := exec.Command(binPath, tc.verb, dir)
			cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Past loading: the evaluation of local.keys is under way.
			select {
			case err := <-done:
				t.Fatalf("%s ended before the signal: %v\n%s", tc.verb, err, stderr.String())
			case <-time.After(time.Second):
			}
			sent := time.Now()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				took := time.Since(sent)
				t.Logf("%s stopped %v after %v", tc.verb, tc.sig, took)
				if code := runExitCode(t, err); code != tc.code {
					t.Errorf("exit code %d, want %d", code, tc.code)
				}
				if !strings.Contains(stderr.String(), "Interrupted") {
					t.Errorf("stderr %q says nothing of the interruption", stderr.String())
				}
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("%s still running 5 s after %v", tc.verb, tc.sig)
			}
		})
	}
}
