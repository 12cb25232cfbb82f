package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEvalPlansBeforeItSpends: the default -scale full on a machine
// without GPUs started what plan estimates at weeks, silently. Now eval
// plans first, prints the runtime and the estimate, and without a
// terminal or -auto-approve exits non-zero before anything runs.
func TestEvalPlansBeforeItSpends(t *testing.T) {
	cache := t.TempDir()
	out := filepath.Join(t.TempDir(), "ev")
	r := gp(t, cache, "eval", "-encoder", "mlp", "-tier", "small", "-adapters", "compact", "-out", out, "-devices", "cpu:2")
	if r.code != exitRunFailure {
		t.Fatalf("eval at full scale without a GPU: exit %d, want %d\n%s%s", r.code, exitRunFailure, r.stdout, r.stderr)
	}
	for _, want := range []string{"Runtime: go", "Time, from timings on this machine", "not starting: ", "Nothing ran", "-auto-approve"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("eval's output lacks %q:\n%s", want, r.stderr)
		}
	}
	if n := countActions(cache); n != 0 {
		t.Errorf("%d cache entries written by an eval that should not have started", n)
	}
}

func TestEvalNeedsApproval(t *testing.T) {
	for _, tc := range []struct {
		est   evalEstimate
		scale string
		want  string
	}{
		{evalEstimate{total: 25 * time.Hour, gpus: 1}, "cpu", "should take 25.0 h or more"},
		{evalEstimate{total: time.Hour}, "full", "no GPU"},
		{evalEstimate{total: time.Hour, gpus: 1}, "full", ""},
		{evalEstimate{total: 23 * time.Hour}, "test", ""},
	} {
		if got := tc.est.needsApproval(tc.scale); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%+v at %s: %q, want %q", tc.est, tc.scale, got, tc.want)
		}
	}
	for _, tc := range []struct {
		stdin string
		tty   bool
		want  bool
	}{
		{"y\n", true, true},
		{"yes\n", true, true},
		{"\n", true, false},
		{"n\n", true, false},
		{"y\n", false, false}, // no terminal: never read
	} {
		var errb bytes.Buffer
		c := &cli{stderr: &errb, stdin: strings.NewReader(tc.stdin), stdinIsTTY: tc.tty}
		if got := c.approveEval("it is long", "dir"); got != tc.want {
			t.Errorf("answer %q on a terminal %v: %v, want %v (%s)", tc.stdin, tc.tty, got, tc.want, errb.String())
		}
	}
}
