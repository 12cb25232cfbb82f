package probenode

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatepipe/gatepipe/internal/torchtest"
	"github.com/gatepipe/gatepipe/nodes/nodetest"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/probe"
)

// TestProbeOnTorchEqualsGo runs ELEVATER's search with every metric on
// both runtimes from the same draws and requires the same choices, trials
// and scores (float64 on both: within 1e-9).
func TestProbeOnTorchEqualsGo(t *testing.T) {
	torchtest.Need(t, "torch")
	store := nodetest.FeatureStore(t, 6, 3, 0.8, 3, nodetest.SplitSize{Name: "train", N: 90}, nodetest.SplitSize{Name: "test", N: 45})
	for _, metric := range probe.MetricNames() {
		t.Run(metric, func(t *testing.T) {
			run := func(runtime string) Result {
				m, _ := probe.LookupMetric(metric)
				tune := probe.DefaultTune(m)
				tune.LRs, tune.Epochs, tune.FinalEpochs, tune.Batch = probe.Logspace(-3, -1, 3), 3, 4, 8
				n := &Node{features: store, model: "m", metric: metric, trainSplit: "train", testSplit: "test",
					shots: []int{5, 0}, seeds: []int{0, 1}, tune: tune, rt: torchrt.Options{Runtime: runtime, Precision: "fp64", Python: torchtest.Python()}}
				env := nodetest.Env(t)
				if _, err := n.Run(context.Background(), env); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(filepath.Join(env.OutDir, "probe.json"))
				if err != nil {
					t.Fatal(err)
				}
				var r Result
				if err := json.Unmarshal(data, &r); err != nil {
					t.Fatal(err)
				}
				return r
			}
			g, tr := run(torchrt.Go), run(torchrt.Torch)
			if len(g.Subsets) != 2 || len(tr.Subsets) != 2 || g.Parameters != tr.Parameters {
				t.Fatalf("subsets %d/%d, parameters %d/%d", len(g.Subsets), len(tr.Subsets), g.Parameters, tr.Parameters)
			}
			close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a)) }
			distinct := map[float64]bool{}
			for i, gs := range g.Subsets {
				ts := tr.Subsets[i]
				for k, a := range gs.Seeds {
					b := ts.Seeds[k]
					// The trials first: a choice differs only after a score does.
					if len(a.Trials) != len(b.Trials) {
						t.Fatalf("%s seed %d: %d trials in Go, %d on torch", gs.Name, a.Seed, len(a.Trials), len(b.Trials))
					}
					for j := range a.Trials {
						if a.Trials[j].LR != b.Trials[j].LR || a.Trials[j].WD != b.Trials[j].WD || !close(a.Trials[j].Score, b.Trials[j].Score) {
							t.Fatalf("%s seed %d trial %d of %d: go %+v, torch %+v", gs.Name, a.Seed, j, len(a.Trials), a.Trials[j], b.Trials[j])
						}
						distinct[a.Trials[j].Score] = true
					}
					if a.LR != b.LR || a.WD != b.WD || !close(a.ValScore, b.ValScore) || !close(a.TestScore, b.TestScore) {
						t.Fatalf("%s seed %d: go lr %g wd %g val %g test %g; torch lr %g wd %g val %g test %g", gs.Name, a.Seed,
							a.LR, a.WD, a.ValScore, a.TestScore, b.LR, b.WD, b.ValScore, b.TestScore)
					}
				}
			}
			if len(distinct) < 3 {
				t.Fatalf("only %d distinct trial scores: the fixture does not exercise the search", len(distinct))
			}
		})
	}
}
