package report

import (
	"math"
	"os"
	"strings"
	"testing"
)

// predictedInput is the paper's matrix with a predicted model "mine":
// cifar100 measured (its loss too, which the prediction does not rank),
// food101 predicted, iWildCam's MAE measured and left out of the
// placement, and its placement 12 of 22 (interval 9–15).
func predictedInput(t *testing.T) Input {
	t.Helper()
	in := paper(t)
	csv := "category,benchmark,metric,predicted,spread,measured,higher_is_better\n" +
		"Img Class,cifar100,Acc@1,70,1,71.5,true\n" +
		"Img Class,food101,Acc@1,88,2.5,,true\n" +
		"Img Class,cifar100,Loss,,,1.93,false\n" +
		"Video Reg,iwildcam,MAE Score,,,2.71,false\n"
	if err := in.AddPredicted("mine", strings.NewReader(csv)); err != nil {
		t.Fatal(err)
	}
	in.Placements = []Placement{{Model: "mine", Method: "eevee", Position: 12, Of: 22, Best: 9, Worst: 15, Columns: "higher_is_better",
		Tier: []string{"cifar100"}, PositionError: 1.62, Measured: []MeasuredBenchmark{
			{Benchmark: "cifar100", Category: "Img Class", Placed: true, Input: true, Reason: "Loss ↓ measured but not ranked: the prediction ranks Acc@1 only",
				Metrics: []MeasuredMetric{{Metric: "Acc@1", Value: 71.5, HigherIsBetter: true, Placed: true}, {Metric: "Loss", Value: 1.93}}},
			{Benchmark: "iwildcam", Category: "Video Reg", Reason: "every one of iwildcam's columns is lower-is-better",
				Metrics: []MeasuredMetric{{Metric: "MAE Score", Value: 2.71}}},
		}}}
	return in
}

func writePage(t *testing.T, in Input, o Options) string {
	t.Helper()
	out, err := Write(t.TempDir(), in, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out.HTML)
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}

// TestReportLeadsWithThePlacement: the first screen is the caveat, the
// protocol and scale, and the placement with its interval, before any
// matrix table; the measured benchmarks follow with the reason one is
// left out.
func TestReportLeadsWithThePlacement(t *testing.T) {
	page := writePage(t, predictedInput(t), Options{Title: "mine on SmallGATE", Protocol: "table3", Scale: "test",
		Caveat: "scale test: mechanics only, not comparable with the paper"})
	first := func(s string) int {
		i := strings.Index(page, s)
		if i < 0 {
			t.Errorf("report lacks %q", s)
		}
		return i
	}
	title, caveat := first("<h1>mine on SmallGATE</h1>"), first(`<p class="caveat" id="caveat">Scale test: mechanics only, not comparable with the paper.</p>`)
	protocol := first("<dt>protocol</dt><dd>table3 — GATE&#39;s task adapters and recipe as its code produced Table 3")
	scale := first("<dt>scale</dt><dd>test</dd>")
	placement := first("<b>mine: 12 of 22 (interval 9–15)</b>, its predicted place among the pool's 21 models and itself.")
	how := first("The interval is its position with every predicted value moved by its spread")
	loo := first("off by 1.62 positions on average")
	leftOut := first(`<td class="text left-out">Left out. Every one of iwildcam&#39;s columns is lower-is-better.</td>`)
	warn := first(`<p class="warning">Measured but left out of the placement: iwildcam (the table says why).</p>`)
	tiers, family := first(`<table class="results" id="tiers">`), first(`<table class="results" id="img_class">`)
	order := []int{title, caveat, protocol, scale, placement, how, loo, leftOut, warn, tiers}
	for k := 1; k < len(order); k++ {
		if order[k-1] > order[k] {
			t.Errorf("report out of order: item %d at %d before item %d at %d", k-1, order[k-1], k, order[k])
		}
	}
	if placement > family {
		t.Error("the placement is not before the family tables")
	}
	if !strings.Contains(page, "<td class=\"text\">Acc@1 71.5, Loss ↓ 1.93</td>") {
		t.Error("the measured table lacks cifar100's values, its loss marked lower-is-better")
	}
}

// TestMeasuredCellsOfEveryDirection: a measured lower-is-better cell (a
// loss, iWildCam's MAE) shows its value in the family tables.
func TestMeasuredCellsOfEveryDirection(t *testing.T) {
	page := writePage(t, predictedInput(t), Options{})
	for _, tc := range []struct{ row, value string }{
		{"cifar100:Loss", "1.93"},
		{"iwildcam:MAE Score", "2.71"},
		{"cifar100:Acc@1", "71.5"},
	} {
		t.Run(tc.row, func(t *testing.T) {
			line := ""
			for _, l := range strings.Split(page, "\n") {
				if strings.HasPrefix(l, `<tr><th scope="row">`+tc.row+` `) || strings.HasPrefix(l, `<tr><th scope="row">`+tc.row+`<`) {
					line = l
				}
			}
			// mine is the last column.
			if !strings.HasSuffix(line, `">`+tc.value+"</td></tr>") {
				t.Errorf("row %s does not end with mine's measured %s:\n%s", tc.row, tc.value, line)
			}
		})
	}
}

// TestPredictedModelHasOneRank: a predicted model's GATE Rank cells point
// to its placement, the pool's models keep their ranks among themselves,
// and the rows say so.
func TestPredictedModelHasOneRank(t *testing.T) {
	in := predictedInput(t)
	// Give mine a full Small tier so that it would get a Small GATE Rank.
	small := map[string]bool{}
	for _, b := range in.Tiers["Small"] {
		small[b] = true
	}
	mine := len(in.Matrix.Models) - 1
	for j, c := range in.Matrix.Columns {
		if small[c.Benchmark] && math.IsNaN(in.Matrix.Values[mine][j]) {
			in.Matrix.Values[mine][j] = in.Matrix.Values[0][j] + 1 // better than the best on accuracies
		}
	}
	pool := TierTable(paper(t))
	tab := TierTable(in)
	checked := 0
	for k, r := range tab.Rows {
		if !strings.HasSuffix(r.Label, "GATE Rank") {
			continue
		}
		c := r.Cells[mine]
		if !c.Missing || c.Text != "see placement" || !strings.Contains(r.Note, "mine is placed by its predicted placement") {
			t.Errorf("%s: mine's cell %+v, note %q", r.Label, c, r.Note)
		}
		for i, pc := range pool.Rows[k].Cells {
			if r.Cells[i].Value != pc.Value || r.Cells[i].Missing != pc.Missing {
				t.Errorf("%s: %s ranks %v, %v without mine", r.Label, in.Matrix.Models[i], r.Cells[i].Value, pc.Value)
			}
		}
		checked++
	}
	if checked != 4 { // Full, Big, Base and Small
		t.Errorf("%d GATE Rank rows checked", checked)
	}
	page := writePage(t, in, Options{})
	for _, l := range strings.Split(page, "\n") {
		if strings.Contains(l, "Small GATE Rank</span>") && !strings.HasSuffix(l, `<td class="missing">see placement</td></tr>`) {
			t.Errorf("the Small GATE Rank row does not point mine to its placement:\n%s", l)
		}
	}
}
