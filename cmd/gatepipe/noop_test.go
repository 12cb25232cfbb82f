package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const noopPipeline = `
variable "greeting" {
  default = "hi"
}

command "prep" {
  run    = ["sh", "-c", "cat data/*.csv > $GATEPIPE_OUT_DIR/all.txt; echo $MSG $G >> $GATEPIPE_OUT_DIR/all.txt"]
  inputs = ["data/*.csv"]
  env    = { MSG = file("msg.txt"), G = var.greeting }
}

command "use" {
  run = ["sh", "-c", "cat ${command.prep.out_dir}/all.txt > $GATEPIPE_OUT_DIR/use.txt"]
}

output "all" {
  value = "${command.prep.out_dir}/all.txt"
}
`

// TestNoopApplyAnsweredFromStamps runs the real binary: an apply of an
// unchanged, fully cached pipeline is answered from its no-op record
// (same lines, a run record of cached instances) and every change the
// plan depends on sends apply back to planning: an edited input, a new
// file matching an input pattern, a file read by file(), a -var, a new
// configuration file, a tampered output.
func TestNoopApplyAnsweredFromStamps(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), noopPipeline)
	writeFile(t, filepath.Join(dir, "data", "a.csv"), "a\n")
	writeFile(t, filepath.Join(dir, "msg.txt"), "hello")
	answered := "no-op record stands"
	apply := func(args ...string) result {
		t.Helper()
		r := gp(t, cache, append(append([]string{"apply", "-log-level", "debug"}, args...), dir)...)
		if r.code != 0 {
			t.Fatalf("apply %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return r
	}
	// settle waits out the racy window after a change, applies (planning)
	// so that a record is written, and checks that the next apply is
	// answered from it.
	settle := func(args ...string) result {
		t.Helper()
		time.Sleep(1100 * time.Millisecond)
		if r := apply(args...); strings.Contains(r.stderr, answered) {
			t.Fatalf("apply after a change was answered from the record:\n%s", r.stderr)
		}
		r := apply(args...)
		if !strings.Contains(r.stderr, answered) || !strings.Contains(r.stdout, "All 2 node instances were cached") {
			t.Fatalf("unchanged apply was not answered from the record:\n%s%s", r.stdout, r.stderr)
		}
		return r
	}
	ran := func(r result, n string) {
		t.Helper()
		if strings.Contains(r.stderr, answered) || !strings.Contains(r.stdout, n+" ran") {
			t.Fatalf("want %s ran after the change:\n%s%s", n, r.stdout, r.stderr)
		}
	}

	time.Sleep(1100 * time.Millisecond) // the files above are outside the racy window
	first := apply()
	ran(first, "2")
	fast := apply()
	if !strings.Contains(fast.stderr, answered) {
		t.Fatalf("second apply planned:\n%s", fast.stderr)
	}
	answeredAsPlanned(t, cache, dir, fast)

	// Bad flags are refused as a planned apply refuses them.
	if r := gp(t, cache, "apply", "-devices", "cpu:x", dir); r.code != exitConfigError || !strings.Contains(r.stderr, "cpu:N") {
		t.Fatalf("apply -devices cpu:x: exit %d\n%s", r.code, r.stderr)
	}

	writeFile(t, filepath.Join(dir, "data", "a.csv"), "b\n") // same size
	ran(apply(), "2")
	settle()

	writeFile(t, filepath.Join(dir, "data", "b.csv"), "c\n")
	ran(apply(), "2")
	settle()

	writeFile(t, filepath.Join(dir, "msg.txt"), "howdy")
	ran(apply(), "2")
	settle()

	if r := apply("-var", "greeting=yo"); strings.Contains(r.stderr, answered) {
		t.Fatal("a new -var was answered from the record")
	}
	if r := apply("-var", "greeting=yo"); !strings.Contains(r.stderr, answered) {
		t.Fatal("the apply after a planned one with the same -var was planned again")
	}

	writeFile(t, filepath.Join(dir, "extra.hcl"), `output "extra" { value = 1 }`)
	if r := apply(); strings.Contains(r.stderr, answered) || !strings.Contains(r.stdout, "extra = 1") {
		t.Fatalf("a new configuration file was not planned:\n%s%s", r.stdout, r.stderr)
	}
	settle()

	// The current output of command.prep, from an answered apply.
	last := apply()
	out := regexp.MustCompile(`all = "(\S+)"`).FindStringSubmatch(last.stdout)
	os.Chmod(out[1], 0o644)
	writeFile(t, out[1], "tampered")
	r := apply()
	if strings.Contains(r.stderr, answered) || !strings.Contains(r.stdout, "1 ran") {
		t.Fatalf("a tampered output was not re-made:\n%s%s", r.stdout, r.stderr)
	}
}

// answeredAsPlanned checks that an apply answered from the no-op record
// (fast) printed what a planned apply prints, and left a run record with
// both nodes cached.
func answeredAsPlanned(t *testing.T, cache, dir string, fast result) {
	t.Helper()
	// The same lines as a planned no-op, but for the timing and run ID.
	norm := regexp.MustCompile(`\(\S+\)\.|runs/\S+\.json`)
	slow := gp(t, cache, "apply", "-var", "greeting=hi", dir) // another key: planned
	if got, want := norm.ReplaceAllString(fast.stdout, "X"), norm.ReplaceAllString(slow.stdout, "X"); got != want {
		t.Fatalf("answered apply printed\n%s\nplanned apply printed\n%s", got, want)
	}
	m := regexp.MustCompile(`Run record: (\S+)`).FindStringSubmatch(fast.stdout)
	if m == nil {
		t.Fatalf("the answered apply named no run record:\n%s", fast.stdout)
	}
	data, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatalf("run record of the answered apply: %v", err)
	}
	var rec struct {
		Counts map[string]int
		Nodes  []struct {
			Addr     string
			ActionID string `json:"action_id"`
		}
	}
	json.Unmarshal(data, &rec)
	if rec.Counts["cached"] != 2 || len(rec.Nodes) != 2 || rec.Nodes[0].ActionID == "" {
		t.Fatalf("run record %s", data)
	}
}
