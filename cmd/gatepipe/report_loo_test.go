package main

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// reportLOOPipeline predicts an encoder (DINO's small-tier results under
// another name) on the paper's matrix as the tiers do, and reports it.
const reportLOOPipeline = `
predict "placement" {
  matrix   = "stdlib/data/gate_table3.csv"
  tier     = ["ade20k", "clevr-math", "acdc", "imagenet1k", "mini", "cubirds", "cifar100"]
  measured = "mine.csv"
  columns  = "higher_is_better"
}

report "tier" {
  matrix      = "stdlib/data/gate_table3.csv"
  paper       = true
  predictions = [predict.placement.path]
  tiers       = { Small = ["iwildcam", "ade20k", "clevr-math", "acdc", "imagenet1k", "mini", "cubirds", "cifar100"] }
  title       = "mine on SmallGATE"
  protocol    = "table3"
  scale       = "test"
  caveat      = "scale test: mechanics only, not comparable with the paper"
}

output "position" { value = "${predict.placement.position} of ${predict.placement.of} (interval ${predict.placement.interval[0]}–${predict.placement.interval[1]})" }
output "report"   { value = report.tier.html }
`

// TestReportLOOIsEEVEELoo: the report's leave-one-model-out table names
// the gatepipe eevee loo command line that computes it, and that command
// prints the same figures; the report leads with the placement and its
// interval, the one the apply prints, and says why iWildCam is left out.
func TestReportLOOIsEEVEELoo(t *testing.T) {
	dir := t.TempDir()
	measured, err := os.ReadFile("../../examples/eevee_predict/dino_small_tier.csv")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "mine.csv"), strings.ReplaceAll(string(measured), ",dino,", ",mine,"))
	writeFile(t, filepath.Join(dir, "main.hcl"), reportLOOPipeline)
	cache := t.TempDir()
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	position := regexp.MustCompile(`position = "(\d+ of 22 \(interval \d+–\d+\))"`).FindStringSubmatch(r.stdout)
	path := regexp.MustCompile(`report = "([^"]+report\.html)"`).FindStringSubmatch(r.stdout)
	if position == nil || path == nil {
		t.Fatalf("apply prints no position with its interval, or no report:\n%s", r.stdout)
	}
	page := readFile(path[1])
	lead := strings.Index(page, "<b>mine: "+position[1]+"</b>")
	if lead < 0 || lead > strings.Index(page, `<table class="results" id="tiers">`) {
		t.Errorf("the report does not lead with the placement %q", position[1])
	}
	if !strings.Contains(page, "ranks the pool&#39;s higher-is-better columns only") || !strings.Contains(page, "Scale test: mechanics only") {
		t.Error("the report does not say why iwildcam is left out, or lacks the scale's caveat")
	}

	cmd := regexp.MustCompile(`<code>gatepipe (eevee loo [^<]+)</code>`).FindStringSubmatch(page)
	if cmd == nil {
		t.Fatal("the report names no eevee loo command line")
	}
	args := strings.Fields(html.UnescapeString(cmd[1]))
	loo := gp(t, cache, args...)
	if loo.code != 0 {
		t.Fatalf("%s: %d\n%s", cmd[1], loo.code, loo.stderr)
	}
	// The report's rows: method, then its figures.
	reported := map[string][]string{}
	table := page[strings.Index(page, `id="loo-mine"`):]
	table = table[:strings.Index(table, "</table>")]
	for _, m := range regexp.MustCompile(`<tr><th>([^<]+)</th>((?:<td[^>]*>[^<]*</td>)+)</tr>`).FindAllStringSubmatch(table, -1) {
		for _, v := range regexp.MustCompile(`>([^<]*)</td>`).FindAllStringSubmatch(m[2], -1) {
			reported[m[1]] = append(reported[m[1]], v[1])
		}
	}
	if len(reported) != 3 {
		t.Fatalf("report's leave-one-out rows: %v", reported)
	}
	for method, figures := range reported {
		var line string
		for _, l := range strings.Split(loo.stdout, "\n") {
			if strings.HasPrefix(l, method+"  ") {
				line = l
			}
		}
		if got := strings.Fields(strings.TrimPrefix(line, method)); strings.Join(got, " ") != strings.Join(figures, " ") {
			t.Errorf("%s: eevee loo prints %v, the report %v", method, got, figures)
		}
	}
	t.Logf("%s\n%v\n%s", position[1], reported, loo.stdout)
}
