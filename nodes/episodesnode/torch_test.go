package episodesnode

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

// TestEpisodesOnTorchEqualGo runs every adapter on the same variable-way
// variable-shot episodes on both runtimes (float64) and requires the same
// accuracy on every episode.
func TestEpisodesOnTorchEqualGo(t *testing.T) {
	torchtest.Need(t, "torch")
	const classes = 10
	dir := nodetest.FeatureStore(t, 12, classes, 1.2, 5, nodetest.SplitSize{Name: "test", N: 300})
	run := func(runtime string) Result {
		cfg := probe.DefaultEpisodes()
		cfg.MaxSupportSetSize, cfg.MaxNumQuery = 60, 5
		nd := &Node{features: dir, model: "m", source: "test", group: "g", split: "test", count: 12, adapters: probe.AdapterNames(), cfg: cfg,
			rt: torchrt.Options{Runtime: runtime, Precision: "fp64", Python: torchtest.Python()}}
		env := nodetest.Env(t)
		if _, err := nd.Run(context.Background(), env); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(env.OutDir, "episodes.json"))
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
	if len(g.Results) != 4 || len(tr.Results) != 4 {
		t.Fatalf("adapters: %d and %d", len(g.Results), len(tr.Results))
	}
	for k, a := range g.Results {
		b := tr.Results[k]
		for e := range a.Accuracy {
			if math.Abs(a.Accuracy[e]-b.Accuracy[e]) > 1e-9 {
				t.Errorf("%s episode %d: go %.4g, torch %.4g", a.Adapter, e, a.Accuracy[e], b.Accuracy[e])
			}
		}
		if a.Mean <= 100.0/classes || a.Mean >= 100 {
			t.Errorf("%s: mean accuracy %.1f says nothing", a.Adapter, a.Mean)
		}
		t.Logf("%s: %.2f ± %.2f on both runtimes", a.Adapter, a.Mean, a.CI95)
	}
}
