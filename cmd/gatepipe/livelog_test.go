package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// liveLog, with GATEPIPE_TEST_LOGS set, also sends cmd's stderr to a new
// file there for this run of the binary (TestName-N.log, its command line
// first), and returns what closes it.
func liveLog(t testing.TB, cmd *exec.Cmd, args []string) (closeLog func()) {
	f := openLiveLog(t, args)
	if f == nil {
		return func() {}
	}
	cmd.Stderr = io.MultiWriter(cmd.Stderr, f)
	return func() { f.Close() }
}

func openLiveLog(t testing.TB, args []string) *os.File {
	dir := os.Getenv("GATEPIPE_TEST_LOGS")
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("GATEPIPE_TEST_LOGS: %v", err)
		return nil
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	for n := 1; ; n++ {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, n)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if os.IsExist(err) {
			continue
		}
		if err != nil {
			t.Logf("GATEPIPE_TEST_LOGS: %v", err)
			return nil
		}
		fmt.Fprintf(f, "%s gatepipe %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(args, " "))
		return f
	}
}

// TestLiveLogsOfTheBinary: with GATEPIPE_TEST_LOGS set, each run of the
// binary leaves its stderr in a file of its own there (gpu-check reads
// them when a test is cut off), its command line first.
func TestLiveLogsOfTheBinary(t *testing.T) {
	logs := t.TempDir()
	t.Setenv("GATEPIPE_TEST_LOGS", logs)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), "variable \"x\" {\n")
	for i := 0; i < 2; i++ {
		if r := gp(t, t.TempDir(), "plan", dir); r.code == 0 {
			t.Fatalf("plan of a broken file passed:\n%s", r.stderr)
		}
	}
	for n := 1; n <= 2; n++ {
		data, err := os.ReadFile(filepath.Join(logs, fmt.Sprintf("TestLiveLogsOfTheBinary-%d.log", n)))
		if err != nil {
			t.Fatal(err)
		}
		first, rest, _ := strings.Cut(string(data), "\n")
		if !strings.HasSuffix(first, "gatepipe plan "+dir) || !strings.Contains(rest, "main.hcl:") {
			t.Errorf("log %d:\n%s", n, data)
		}
	}
}
