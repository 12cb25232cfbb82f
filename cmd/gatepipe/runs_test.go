package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunsShowPipelineOutcomeAndWholeDurations: runs tells applies apart
// by pipeline, gives each its outcome, measures a cached apply from the
// command's start (not the microseconds of its empty walk), and shows an
// apply killed with kill -9 as interrupted.
func TestRunsShowPipelineOutcomeAndWholeDurations(t *testing.T) {
	cache := t.TempDir()
	ok, bad, slow := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ok, "main.hcl"), "command \"a\" {\n  run = [\"true\"]\n}\n")
	writeFile(t, filepath.Join(bad, "main.hcl"), "command \"b\" {\n  run = [\"false\"]\n}\n")
	writeFile(t, filepath.Join(slow, "main.hcl"), "command \"c\" {\n  run = [\"sleep\", \"300\"]\n}\n")
	gp(t, cache, "apply", ok)
	gp(t, cache, "apply", ok) // answered from the cache
	gp(t, cache, "apply", bad)
	cmd := exec.Command(binPath, "apply", slow)
	cmd.Env = append(cmd.Environ(), "GATEPIPE_CACHE_DIR="+cache)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(gp(t, cache, "runs").stdout, slow); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the running apply left no record")
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	r := gp(t, cache, "runs")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "OUTCOME") || !strings.Contains(lines[0], "PIPELINE") {
		t.Fatalf("runs:\n%s", r.stdout)
	}
	for i, want := range []struct{ outcome, pipeline string }{{"ok", ok}, {"ok", ok}, {"failed", bad}, {"interrupted", slow}} {
		f := strings.Fields(lines[i+1])
		if f[4] != want.outcome || f[len(f)-1] != want.pipeline {
			t.Errorf("run %d: %q, want outcome %s of %s", i+1, lines[i+1], want.outcome, want.pipeline)
		}
	}
	// The cached apply took milliseconds from its start, not microseconds.
	if d := strings.Fields(lines[2])[3]; regexp.MustCompile(`µs$`).MatchString(d) {
		t.Errorf("the cached apply is listed as %s", d)
	}

	// cache ls names the node and pipeline of each entry, oldest first.
	ls := gp(t, cache, "cache", "ls")
	rows := strings.Split(strings.TrimSpace(ls.stdout), "\n")
	if len(rows) != 3 || !strings.Contains(rows[0], "NODE") {
		t.Fatalf("cache ls:\n%s", ls.stdout)
	}
	if f := strings.Fields(rows[1]); f[len(f)-2] != "command.a" || f[len(f)-1] != ok {
		t.Errorf("cache ls row %q, want command.a of %s", rows[1], ok)
	}
}
