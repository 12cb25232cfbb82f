package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// normalize replaces what changes from run to run (paths, IDs, times,
// durations) and collapses the padding that depends on their widths.
func normalize(s, cache string) string {
	s = strings.ReplaceAll(s, cache, "<cache>")
	for _, r := range []struct{ re, with string }{
		{`\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{6}`, "<run>"},
		{`[0-9a-f]{64}`, "<id>"},
		{`<cache>/objects/[0-9a-f]{2}/`, "<cache>/objects/xx/"},
		{`\b[0-9a-f]{12}\b`, "<id12>"},
		{`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}`, "<time>"},
		{`\b\d+(\.\d+)?(ms|µs|s)\b`, "<dur>"},
		{` {2,}`, "  "},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.with)
	}
	return s
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := "testdata/golden/" + name
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("output differs from %s (UPDATE_GOLDEN=1 rewrites it):\n--- got ---\n%s--- want ---\n%s", golden, got, want)
	}
}

// TestShowAndRunsShowGolden: show prints a cached node's value, files and
// log tail; runs show prints a run's per-node table; open prints where a
// node's result is.
func TestShowAndRunsShowGolden(t *testing.T) {
	cache := t.TempDir()
	const pipeline = "testdata/golden/pipeline"
	before := gp(t, cache, "show", "command.prepare", pipeline)
	if before.code != 0 || !strings.Contains(before.stdout, "not run yet: 'gatepipe apply' will run it") {
		t.Fatalf("show before apply: %d %s%s", before.code, before.stdout, before.stderr)
	}
	if r := gp(t, cache, "apply", pipeline); r.code != 0 {
		t.Fatalf("apply: %s%s", r.stdout, r.stderr)
	}
	show := gp(t, cache, "show", `command.train["cnn"]`, pipeline)
	if show.code != 0 {
		t.Fatalf("show: %d %s", show.code, show.stderr)
	}
	checkGolden(t, "show.txt", normalize(show.stdout, cache))
	runs := gp(t, cache, "runs", "show", "last")
	if runs.code != 0 {
		t.Fatalf("runs show: %d %s", runs.code, runs.stderr)
	}
	abs, _ := filepath.Abs(pipeline)
	checkGolden(t, "runs_show.txt", strings.ReplaceAll(normalize(runs.stdout, cache), abs, "<pipeline>"))

	open := gp(t, cache, "open", "command.prepare", pipeline)
	if open.code != 0 || !strings.HasPrefix(open.stdout, cache+"/objects/") {
		t.Fatalf("open: %d %q %s", open.code, open.stdout, open.stderr)
	}
	if r := gp(t, cache, "open", pipeline); r.code != exitConfigError || !strings.Contains(r.stderr, "the pipeline has no report block") {
		t.Fatalf("open without a report: %d %s", r.code, r.stderr)
	}
	if r := gp(t, cache, "show", "command.trian", pipeline); r.code != exitConfigError || !strings.Contains(r.stderr, `Did you mean one of command.train["cnn"], command.train["vit"]?`) {
		t.Fatalf("show of a misspelled address: %d %s", r.code, r.stderr)
	}
}
