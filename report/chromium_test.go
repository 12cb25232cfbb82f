package report

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	out, err := Write(dir, paper(t), nil, Options{Runs: mixedRuns(t)})
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
	for _, want := range []string{`id="tiers"`, `id="img_class"`, `id="video_class"`, `<img alt="Rank of each model per benchmark (1 = best)`, `class="best"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	// Every figure has a title that names what it shows.
	for _, alt := range regexp.MustCompile(`<img alt="([^"]*)"`).FindAllStringSubmatch(dom, -1) {
		if !regexp.MustCompile(`(?i)rank|acc|miou|mae|loss|tau|score|images/s|%|metric`).MatchString(alt[1]) {
			t.Errorf("figure title %q names no metric", alt[1])
		}
	}
	// The family comparison's axis is higher-is-better throughout: it
	// says so and names the lower-is-better family it leaves out.
	if !regexp.MustCompile(`<img alt="Task Mean per family \(higher-is-better metrics, %\)\s+left out, lower is better: Video Reg"`).MatchString(dom) {
		t.Errorf("the family comparison's title does not state its direction and what it leaves out")
	}
	for _, want := range []string{"Headline mean", "Task Mean, higher-is-better metrics", "ade20k:Mean Acc<"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if n := strings.Count(dom, `<table class="results"`); n != 12 {
		t.Errorf("%d result tables rendered, want 12 (9 families, tiers, experiments, run metadata)", n)
	}
	// Each experiment shows its own headline metric and direction, never
	// a classification column of zeros.
	exp := dom[strings.Index(dom, `id="experiments"`):]
	exp = exp[:strings.Index(exp, "</table>")]
	for _, want := range []string{
		"<td>mIoU ↑</td><td>0.431</td>",
		"<td>Img2Txt Acc@1 ↑</td><td>31.2</td>",
		"<td>MAE Score ↓</td><td>1.37</td>",
		"<td>Acc@1 ↑</td><td>91.5</td>",
		"<td>–</td>", // the count run has no other metrics
	} {
		if !strings.Contains(exp, want) {
			t.Errorf("experiments table lacks %q:\n%s", want, exp)
		}
	}
	if strings.Contains(exp, "<td>0.00</td>") {
		t.Errorf("experiments table shows a metric the experiment does not have:\n%s", exp)
	}
}

// mixedRuns writes experiments of four tasks whose metrics differ.
func mixedRuns(t *testing.T) []Run {
	t.Helper()
	specs := []struct{ model, bench, metrics string }{
		{"cnn", "cifar", `{"Acc@1":{"value":91.5,"higher_is_better":true},"Acc@5":{"value":99,"higher_is_better":true},"Loss":{"value":0.3,"higher_is_better":false}}`},
		{"cnn", "ade20k", `{"CE Loss":{"value":1.1,"higher_is_better":false},"Dice Score":{"value":0.51,"higher_is_better":true},"mIoU":{"value":0.4312,"higher_is_better":true}}`},
		{"vit", "flickr30k", `{"Img2Txt Acc@1":{"value":31.2,"higher_is_better":true},"Txt2Img Acc@1":{"value":29.9,"higher_is_better":true}}`},
		{"vit", "clevr-count", `{"MAE Score":{"value":1.37,"higher_is_better":false}}`},
	}
	var runs []Run
	for _, sp := range specs {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, "metrics.json"), []byte(`{"model":"`+sp.model+`","benchmark":"`+sp.bench+`","metrics":`+sp.metrics+`}`), 0o644)
		r, err := LoadRun(d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	return runs
}
