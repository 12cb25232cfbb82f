package report

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/gatepipe/gatepipe/formats/runmeta"
)

// TestRunFigureNamesAreUnique: for_each instances of one train block share
// model and benchmark names; their curves must not overwrite each other.
func TestRunFigureNamesAreUnique(t *testing.T) {
	runs := []Run{
		{Model: "pretrained", Benchmark: "b", Info: &runmeta.Info{Node: `train.ft["a"]`}},
		{Model: "pretrained", Benchmark: "b", Info: &runmeta.Info{Node: `train.ft["b"]`}},
		{Model: "pretrained", Benchmark: "b"},
		{Model: "solo", Benchmark: "b"},
	}
	uniqueIDs(runs)
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.id()] {
			t.Fatalf("two runs named %q", r.id())
		}
		seen[r.id()] = true
	}
	if runs[3].id() != "solo_b" || runs[0].id() != "train_ft_a" {
		t.Fatalf("ids %q, %q", runs[3].id(), runs[0].id())
	}
}

// TestExperimentsTableSaysWhatItPrints: a mean over seeds says that its ±
// is a sample standard deviation, in the HTML caption and in tables.md,
// and GATE's "Mean Acc@" reads "Mean Acc"; a run of one seed gets no note.
func TestExperimentsTableSaysWhatItPrints(t *testing.T) {
	seeded := []Run{{Model: "m", Benchmark: "ade20k", Primary: "Mean Acc@",
		Metrics: map[string]float64{"Mean Acc@": 41.5, "Overall Acc@": 70},
		Seeds:   map[string]SeedStat{"Mean Acc@": {Std: 1.2, N: 3}, "Overall Acc@": {Std: 0.5, N: 3}}}}
	for name, write := range map[string]func(*strings.Builder, []Run){
		"html":     func(b *strings.Builder, r []Run) { runsHTML(b, r) },
		"markdown": func(b *strings.Builder, r []Run) { runsMarkdown(b, r) },
	} {
		var b strings.Builder
		write(&b, seeded)
		out := b.String()
		if !strings.Contains(out, "sample standard deviation") || strings.Contains(out, "Acc@") || !strings.Contains(out, "Mean Acc") || !strings.Contains(out, "(n=3)") {
			t.Errorf("%s:\n%s", name, out)
		}
		b.Reset()
		single := []Run{{Model: "m", Benchmark: "b", Primary: "Acc@1", Metrics: map[string]float64{"Acc@1": 50}}}
		write(&b, single)
		if strings.Contains(b.String(), "sample standard deviation") || !strings.Contains(b.String(), "Acc@1") {
			t.Errorf("%s, one seed:\n%s", name, b.String())
		}
	}
}

// TestConstantLearningRateAxis: a learning rate with no schedule is drawn
// on an axis from 0 to above it, not on gonum's -0.8..0.8 around nothing.
func TestConstantLearningRateAxis(t *testing.T) {
	for _, v := range []float64{1e-3, -2, 0} {
		p := plot.New()
		xy := plotter.XYs{{X: 0, Y: v}, {X: 10, Y: v}}
		line, _ := plotter.NewLine(xy)
		p.Add(line)
		fixFlatAxis(p, xy)
		if p.Y.Min > v || p.Y.Max < v || p.Y.Max-p.Y.Min > 1.5*max(math.Abs(v), 1e-300) && v != 0 {
			t.Errorf("lr %g: axis %g..%g", v, p.Y.Min, p.Y.Max)
		}
	}
}
