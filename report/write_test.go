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
