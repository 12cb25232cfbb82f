package report

import (
	"os"
	"strings"
	"testing"
)

func TestWritePaperReport(t *testing.T) {
	in := paper(t)
	dir := t.TempDir()
	if os.Getenv("REPORT_DIR") != "" {
		dir = os.Getenv("REPORT_DIR")
	}
	out, err := Write(dir, in, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(out.HTML)
	for _, want := range []string{`<table class="results" id="tiers">`, `id="img_class"`, "data:image/png;base64,", "Full GATE Rank (paper)"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(string(page), "http://") || strings.Contains(string(page), "https://") {
		t.Error("report.html refers to the network; it must be self-contained")
	}
	if len(out.Figures) < 2 {
		t.Fatalf("%d figures", len(out.Figures))
	}
	for _, f := range out.Figures {
		for _, p := range []string{f.PNG, f.SVG} {
			if info, err := os.Stat(p); err != nil || info.Size() < 1000 {
				t.Errorf("figure %s missing or empty", p)
			}
		}
	}
}

func TestExperimentsAndCurves(t *testing.T) {
	runDir := t.TempDir()
	os.WriteFile(runDir+"/metrics.json", []byte(`{"model":"cnn","benchmark":"toy","category":"Img Class","metrics":{"Acc@1":{"value":91.5,"higher_is_better":true},"Acc@5":{"value":99,"higher_is_better":true},"Loss":{"value":0.3,"higher_is_better":false}}}`), 0o644)
	os.WriteFile(runDir+"/log.jsonl", []byte(`{"iteration":1,"loss":2.3,"lr":0.001}
{"iteration":100,"loss":0.9,"lr":0.001,"images_per_sec":512,"val":{"acc1":80,"acc5":98,"loss":0.7},"energy_joules":12.5}
{"iteration":200,"loss":0.5,"lr":0.0005,"images_per_sec":530,"val":{"acc1":90,"acc5":99,"loss":0.4},"energy_joules":25}
`), 0o644)
	os.WriteFile(runDir+"/run.json", []byte(`{"gatepipe":"v9.9","node":"train.cnn[\"toy\"]","action_id":"0123456789abcdef0123","seed":42,"started":"2026-11-21T10:00:00Z","seconds":75.25,"device":"cpu x2","iterations":200,"images_per_sec":521.4,"energy_joules":31,"peak_rss_bytes":157286400}`), 0o644)
	run, err := LoadRun(runDir)
	if err != nil || len(run.Log) != 3 || run.Model != "cnn" || run.Info == nil {
		t.Fatalf("LoadRun: %+v %v", run, err)
	}
	dir := t.TempDir()
	out, err := Write(dir, paper(t), nil, Options{Runs: []Run{run}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(out.HTML)
	for _, want := range []string{`id="experiments"`, `href="#fig-curves_cnn_toy"`, `id="fig-curves_cnn_toy"`, `id="fig-throughput"`, "<td>31</td>",
		`id="run-metadata"`, "<td>42</td>", "<code>0123456789abcdef</code>", "1m15.3s", "<td>cpu x2</td>", "<td>521</td>", "<td>v9.9</td>", "<td>150 MiB</td>", "2026-11-21 10:00:00"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestCurvesDrawOnlyWhatWasMeasured: a segmentation run's curves show its
// mIoU (on 0-100) and no accuracy at zero, a classification run's its
// Acc@1; each title names the metric, and the figure is written.
func TestCurvesDrawOnlyWhatWasMeasured(t *testing.T) {
	for _, tc := range []struct {
		val, want, not string
	}{
		{`{"miou":41.5,"loss":0.9}`, "mIoU", "Acc@1"},
		{`{"acc1":80,"acc5":98,"loss":0.7}`, "Acc@1", "mIoU"},
	} {
		dir := t.TempDir()
		os.WriteFile(dir+"/metrics.json", []byte(`{"model":"cnn","benchmark":"toy","category":"Img Seg","metrics":{"mIoU":{"value":41,"higher_is_better":true}}}`), 0o644)
		os.WriteFile(dir+"/log.jsonl", []byte(`{"iteration":1,"loss":2.3,"lr":0.001}
{"iteration":100,"loss":0.9,"lr":0.001,"val":`+tc.val+`}
{"iteration":200,"loss":0.5,"lr":0.0005,"val":`+tc.val+`}
`), 0o644)
		run, err := LoadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Curves(run, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(f.Title, tc.want) || strings.Contains(f.Title, tc.not) {
			t.Errorf("title %q: want %s, not %s", f.Title, tc.want, tc.not)
		}
		svg, err := os.ReadFile(f.SVG)
		if err != nil || !strings.Contains(string(svg), "val "+tc.want) || strings.Contains(string(svg), "val "+tc.not) {
			t.Errorf("figure %s: want a val %s panel and no val %s (%v)", f.SVG, tc.want, tc.not, err)
		}
		if info, err := os.Stat(f.PNG); err != nil || info.Size() == 0 {
			t.Errorf("no PNG: %v", err)
		}
	}
}
