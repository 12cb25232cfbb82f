package report

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportInHeadlessChromium opens the HTML report from disk in
// Debian's Chromium with no network, takes a screenshot, fails on console
// errors, and checks the rendered DOM holds the tables and figures. The
// Makefile installs chromium for `make test` when it can.
func TestReportInHeadlessChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium), so the browser test cannot run")
	}
	dir := t.TempDir()
	out, err := Write(dir, paper(t), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + out.HTML
	run := func(extra ...string) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}, extra...)
		cmd := exec.CommandContext(ctx, bin, append(args, url)...)
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", extra, err, se.String())
		}
		return so.String(), se.String()
	}
	shot := filepath.Join(dir, "shot.png")
	_, logs := run("--window-size=1400,1000", "--screenshot="+shot)
	if info, err := os.Stat(shot); err != nil || info.Size() < 20000 {
		t.Fatalf("screenshot %s missing or nearly empty", shot)
	}
	dom, logs2 := run("--dump-dom")
	for _, line := range strings.Split(logs+logs2, "\n") {
		if strings.Contains(line, ":CONSOLE(") || strings.Contains(line, "Uncaught") {
			t.Errorf("console message: %s", line)
		}
	}
	for _, want := range []string{`id="tiers"`, `id="img_class"`, `id="video_class"`, `<img alt="Model ranking per benchmark`, `class="best"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if n := strings.Count(dom, `<table class="results"`); n != 10 {
		t.Errorf("%d result tables rendered, want 10 (9 families + tiers)", n)
	}
}
