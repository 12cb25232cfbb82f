package report

import (
	"bytes"
	"github.com/gatepipe/gatepipe/eevee"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/stdlib"
)

func paper(t testing.TB) Input {
	in, err := PaperInput(stdlib.FS())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/golden/" + name
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file (UPDATE_GOLDEN=1 rewrites it)", path)
	}
}

// TestBestPerRowMatchesTheMatrix checks every marked best cell against an
// independent argmax/argmin of the paper matrix's row.
func TestBestPerRowMatchesTheMatrix(t *testing.T) {
	in := paper(t)
	m := in.Matrix
	for _, tab := range FamilyTables(in) {
		for _, r := range tab.Rows {
			if r.Summary {
				continue
			}
			j := -1
			for k, c := range m.Columns {
				if rowLabel(c) == r.Label {
					j = k
				}
			}
			best := math.Inf(-1)
			printed := map[string]bool{}
			for i := range m.Models {
				v := m.Values[i][j]
				printed[r.format(v)] = true
				if !m.Columns[j].HigherIsBetter {
					v = -v
				}
				best = math.Max(best, v)
			}
			if !m.Columns[j].HigherIsBetter {
				best = -best
			}
			// Best is what prints as the best value; a row where every
			// model prints alike marks nobody.
			for i, c := range r.Cells {
				isBest := r.format(m.Values[i][j]) == r.format(best) && len(printed) > 1
				if isBest != (c.Mark == 1) {
					t.Fatalf("%s: %s marked %d, value %g, best %g", r.Label, m.Models[i], c.Mark, m.Values[i][j], best)
				}
			}
		}
	}
}

// TestTierRanksMatchThePaper: cvnxtv2 is first on every tier, both in the
// paper's published GATE rows and in the ranks computed here.
func TestTierRanksMatchThePaper(t *testing.T) {
	in := paper(t)
	tab := TierTable(in)
	models := in.Matrix.Models
	seen := 0
	for _, r := range tab.Rows {
		if !strings.Contains(r.Label, "Rank") {
			continue
		}
		seen++
		for i, c := range r.Cells {
			if models[i] == "cvnxtv2" && c.Value != 1 {
				t.Errorf("%s: cvnxtv2 is %g, want 1", r.Label, c.Value)
			}
		}
	}
	if seen != 8 { // 4 computed tiers + 4 paper rows
		t.Fatalf("%d rank rows, want 8", seen)
	}
}

func TestTablesGolden(t *testing.T) {
	in := paper(t)
	var md, tex bytes.Buffer
	for _, tab := range append(FamilyTables(in), TierTable(in)) {
		if err := tab.Markdown(&md); err != nil {
			t.Fatal(err)
		}
		md.WriteString("\n")
		if err := tab.LaTeX(&tex); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "paper_tables.md", md.Bytes())
	golden(t, "paper_tables.tex", tex.Bytes())
}

func TestIncompleteTierIsNotAveraged(t *testing.T) {
	in := paper(t)
	in.Matrix.Values[0][0] = math.NaN() // cvnxtv2 loses cifar100 Acc@1 (in every tier)
	tab := TierTable(in)
	for _, r := range tab.Rows[:8] {
		if !r.Cells[0].Missing {
			t.Fatalf("%s: a model missing a tier cell must be incomplete, got %g", r.Label, r.Cells[0].Value)
		}
	}
}

func TestPredictedColumnIsToldApart(t *testing.T) {
	in := paper(t)
	csv := "category,benchmark,metric,predicted,spread,measured,higher_is_better\n" +
		"Img Class,cifar100,Acc@1,70,1,71.5,true\n" +
		"Img Class,food101,Acc@1,88,2.5,,true\n"
	if err := in.AddPredicted("mine", strings.NewReader(csv)); err != nil {
		t.Fatal(err)
	}
	tab := FamilyTables(in)[0]
	col := len(tab.Models) - 1
	if tab.Models[col] != "mine" {
		t.Fatalf("models %v", tab.Models)
	}
	for _, r := range tab.Rows {
		c := r.Cells[col]
		switch r.Label {
		case "cifar100:Acc@1":
			if c.Predicted || c.Value != 71.5 {
				t.Errorf("measured cell %+v", c)
			}
		case "food101:Acc@1":
			if !c.Predicted || c.Value != 88 || c.Spread != 2.5 {
				t.Errorf("predicted cell %+v", c)
			}
		case "Task Mean":
			if !c.Missing {
				t.Errorf("a model missing Img Class metrics must have no Task Mean, got %+v", c)
			}
		}
	}
	var md strings.Builder
	tab.Markdown(&md)
	if !strings.Contains(md.String(), "88.0 ±2.50*") || strings.Contains(md.String(), "71.5 ±") {
		t.Errorf("Markdown does not show the predicted cell with its spread (and only it):\n%s", md.String())
	}
	var page strings.Builder
	tab.HTML(&page, "t")
	if !strings.Contains(page.String(), `class="predicted">88.0 ±2.50*</td>`) && !strings.Contains(page.String(), `predicted">88.0 ±2.50*`) {
		t.Errorf("HTML does not show the predicted cell with its spread:\n%s", page.String())
	}
}

// TestTiesShareAPlaceAndAllTiedRanksNobody: cells that print alike share
// their mark (99.98 and 100.0 both read 100.0), and a row where every
// model ties (a loss of 0.000 for ten models) marks no best.
func TestTiesShareAPlaceAndAllTiedRanksNobody(t *testing.T) {
	r := Row{HigherIsBetter: true, Cells: []Cell{{Value: 99.98}, {Value: 100}, {Value: 90}, {Missing: true}}}
	markRow(&r)
	if r.Cells[0].Mark != 1 || r.Cells[1].Mark != 1 || r.Cells[2].Mark != 2 || r.Cells[3].Mark != 0 {
		t.Errorf("marks %v %v %v %v, want 1 1 2 0", r.Cells[0].Mark, r.Cells[1].Mark, r.Cells[2].Mark, r.Cells[3].Mark)
	}
	tied := Row{Cells: []Cell{{Value: 0}, {Value: 0}, {Value: 0.00001}}}
	markRow(&tied)
	for i, c := range tied.Cells {
		if c.Mark != 0 {
			t.Errorf("cell %d of an all-tied row is marked %v", i, c.Mark)
		}
	}
	one := Row{HigherIsBetter: true, Cells: []Cell{{Value: 3}}}
	markRow(&one)
	if one.Cells[0].Mark != 1 {
		t.Errorf("a single model is not marked best")
	}
}

// TestFullGATEMeanAveragesGATEBenchmarksOnly: a user's own benchmark
// (fashion-mnist) is never averaged into the Full GATE Mean; a matrix of
// only such benchmarks has no GATE rows at all.
func TestFullGATEMeanAveragesGATEBenchmarksOnly(t *testing.T) {
	gate := []string{"cifar100", "imagenet1k"}
	m := &eevee.Matrix{Models: []string{"a", "b"}, Columns: []eevee.Column{
		{Category: "Img Class", Benchmark: "cifar100", Metric: "Acc@1", HigherIsBetter: true},
		{Category: "Img Class", Benchmark: "fashion-mnist", Metric: "Acc@1", HigherIsBetter: true},
	}, Values: [][]float64{{80, 10}, {70, 99}}}
	tab := TierTable(Input{Matrix: m, Tiers: map[string][]string{"Full": gate}})
	if len(tab.Rows) != 2 || tab.Rows[0].Label != "Full GATE Mean" || tab.Rows[0].Cells[0].Value != 80 || tab.Rows[0].Cells[1].Value != 70 {
		t.Fatalf("rows %+v: want the Full GATE Mean of cifar100 alone (80, 70)", tab.Rows)
	}
	own := &eevee.Matrix{Models: m.Models, Columns: m.Columns[1:], Values: [][]float64{{10}, {99}}}
	if tab := TierTable(Input{Matrix: own, Tiers: map[string][]string{"Full": gate}}); len(tab.Rows) != 0 {
		t.Fatalf("a matrix without GATE benchmarks has GATE rows: %+v", tab.Rows)
	}
}

// TestTierCoverageExplainsThePaperComparison: the tiers section says how
// many of each tier's benchmarks and which models a computed mean covers,
// and why it can differ from the paper's published rows.
func TestTierCoverageExplainsThePaperComparison(t *testing.T) {
	in := paper(t)
	s := TierCoverage(in)
	for _, want := range []string{"Full: 31 of its 31 benchmarks", "Small: 8 of its 8", "21 models", "(paper)"} {
		if !strings.Contains(s, want) {
			t.Errorf("coverage %q lacks %q", s, want)
		}
	}
}

// TestTaskMeanReproducesThePaper: the computed Task Mean (every metric of
// a family but losses and per-class values) gives the paper's published
// Task Means to 0.05 on average per family (Medical Class to 1: its
// published means do not follow any one formula exactly).
func TestTaskMeanReproducesThePaper(t *testing.T) {
	in, err := PaperInput(stdlib.FS())
	if err != nil {
		t.Fatal(err)
	}
	for _, tab := range FamilyTables(in) {
		var mine, paper *Row
		for i := range tab.Rows {
			switch tab.Rows[i].Label {
			case "Task Mean":
				mine = &tab.Rows[i]
			case "Task Mean (paper)":
				paper = &tab.Rows[i]
			}
		}
		if mine == nil || paper == nil {
			t.Errorf("%s: no Task Mean row beside the paper's", tab.Title)
			continue
		}
		var sum float64
		n := 0
		for i := range mine.Cells {
			if !mine.Cells[i].Missing && !paper.Cells[i].Missing {
				sum += math.Abs(mine.Cells[i].Value - paper.Cells[i].Value)
				n++
			}
		}
		mae := sum / float64(max(n, 1))
		t.Logf("%s: mean |computed - published| = %.3f over %d models", tab.Title, mae, n)
		limit := 0.05
		if tab.Title == "Medical Class" {
			limit = 1
		}
		if n < 20 || mae > limit {
			t.Errorf("%s: computed Task Mean is %.3f from the paper's on average over %d models", tab.Title, mae, n)
		}
	}
}

// TestStandInsAreMarked: a procedural benchmark filed under a GATE family
// is marked a stand-in (and the legend says so); a GATE benchmark and a
// benchmark in its own section are not.
func TestStandInsAreMarked(t *testing.T) {
	m := &eevee.Matrix{Models: []string{"a"},
		Columns: []eevee.Column{{Category: "Video Reg", Benchmark: "count", Metric: "MAE Score"}, {Category: "Img Class", Benchmark: "cifar100", Metric: "Acc@1", HigherIsBetter: true},
			{Category: "User benchmarks", Benchmark: "mine", Metric: "Acc@1", HigherIsBetter: true}},
		Values: [][]float64{{1, 2, 3}}}
	in := Input{Matrix: m, Tiers: map[string][]string{"Full": {"cifar100", "iwildcam"}}}
	var labels []string
	var md bytes.Buffer
	for _, tab := range FamilyTables(in) {
		for _, r := range tab.Rows {
			labels = append(labels, r.Label)
		}
		tab.Markdown(&md)
	}
	got := strings.Join(labels, "|")
	if want := "count:MAE Score (stand-in)|Task Mean|cifar100:Acc@1|Task Mean|mine:Acc@1|Task Mean"; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
	if strings.Count(md.String(), "not one of GATE's benchmarks") != 1 {
		t.Errorf("the stand-in legend should appear once, under Video Reg:\n%s", md.String())
	}
}

// TestSeedsStdIsNamed: a table with means over seeds says, in its HTML
// caption, LaTeX caption and Markdown, which standard deviation "± s"
// is; one without seeds says nothing of it.
func TestSeedsStdIsNamed(t *testing.T) {
	tab := Table{Title: "Results", Models: []string{"a"}, Rows: []Row{{Label: "acc", HigherIsBetter: true, Cells: []Cell{{Value: 71.5}}}}}
	for _, seeds := range []bool{false, true} {
		if seeds {
			tab.Rows[0].Cells[0].Seeds = SeedStat{Std: 0.4, N: 3}
		}
		var html, tex, md strings.Builder
		tab.HTML(&html, "t")
		tab.LaTeX(&tex)
		tab.Markdown(&md)
		for name, out := range map[string]string{"HTML": html.String(), "LaTeX": tex.String(), "Markdown": md.String()} {
			if got := strings.Contains(out, "sample standard deviation over the n seeds (n − 1 in the denominator)"); got != seeds {
				t.Errorf("seeds %v: %s names the std: %v\n%s", seeds, name, got, out)
			}
		}
	}
}

// TestFamilyDirectionsAreConsistent: on GATE's matrix a family's computed
// and published Task Means are marked in one direction (Video Reg's MAE:
// lowest best in both), a Task Mean that averages a lower-is-better metric
// in (Medical Class's BS Macro) has the higher-is-better mean beside it,
// and the family comparison plots higher-is-better means only, naming
// what it leaves out.
func TestFamilyDirectionsAreConsistent(t *testing.T) {
	in, err := PaperInput(stdlib.FS())
	if err != nil {
		t.Fatal(err)
	}
	tables := FamilyTables(in)
	mixed := 0
	for _, tab := range tables {
		rows := map[string]Row{}
		for _, r := range tab.Rows {
			rows[r.Label] = r
		}
		mine, ok := rows["Task Mean"]
		paper, okPaper := rows["Task Mean (paper)"]
		if ok && okPaper && mine.HigherIsBetter != paper.HigherIsBetter {
			t.Errorf("%s: Task Mean higher-is-better %v, the paper's %v", tab.Title, mine.HigherIsBetter, paper.HigherIsBetter)
		}
		if strings.Contains(mine.Note, "lower is better, as the paper does") {
			mixed++
			if up, ok := rows[TaskMeanHigher]; !ok || !up.HigherIsBetter {
				t.Errorf("%s: a mixed Task Mean without the higher-is-better mean beside it", tab.Title)
			}
		}
		if tab.Title == "Video Reg" && (mine.HigherIsBetter || paper.HigherIsBetter) {
			t.Errorf("Video Reg's MAE means are marked higher-is-better")
		}
	}
	if mixed == 0 {
		t.Error("no family averages a lower-is-better metric into its Task Mean: the test checks nothing")
	}
	f, err := FamilyComparison(tables, in.Matrix.Models[:3], t.TempDir(), "family_comparison")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Title, "left out, lower is better: Video Reg") {
		t.Errorf("family comparison title %q does not name Video Reg as left out", f.Title)
	}
}

// TestHeadlineMeanBesideTaskMean: three chance-level encoders whose Acc@5
// is at its ceiling get a high Task Mean (the paper's definition) and, in
// the row beside it, the chance-level mean of their headline Acc@1.
func TestHeadlineMeanBesideTaskMean(t *testing.T) {
	m := &eevee.Matrix{
		Models: []string{"a", "b", "c"},
		Columns: []eevee.Column{
			{Category: "Img Relational", Benchmark: "rel", Metric: "Acc@1", HigherIsBetter: true},
			{Category: "Img Relational", Benchmark: "rel", Metric: "Acc@5", HigherIsBetter: true},
			{Category: "Img Relational", Benchmark: "rel", Metric: "Loss", HigherIsBetter: false},
		},
		Values: [][]float64{{33, 100, 1.1}, {34, 100, 1.1}, {32, 100, 1.2}},
	}
	tabs := FamilyTables(Input{Matrix: m})
	if len(tabs) != 1 {
		t.Fatalf("%d tables", len(tabs))
	}
	rows := map[string]Row{}
	for _, r := range tabs[0].Rows {
		rows[r.Label] = r
	}
	task, head := rows["Task Mean"], rows[HeadlineMean]
	if len(task.Cells) != 3 || task.Cells[0].Value != 66.5 {
		t.Fatalf("Task Mean %+v", task.Cells)
	}
	if len(head.Cells) != 3 || head.Cells[0].Value != 33 || !strings.Contains(head.Note, "(rel:Acc@1)") {
		t.Fatalf("headline mean %+v, note %q", head.Cells, head.Note)
	}
}
