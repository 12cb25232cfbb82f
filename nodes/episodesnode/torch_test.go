package episodesnode

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/torchtest"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/probe"
	"github.com/rs/zerolog"
)

// TestEpisodesOnTorchEqualGo runs every adapter on the same variable-way
// variable-shot episodes on both runtimes (float64) and requires the same
// accuracy on every episode.
func TestEpisodesOnTorchEqualGo(t *testing.T) {
	torchtest.Need(t, "torch")
	dir := t.TempDir()
	const n, d, classes = 300, 12, 10
	rng := rand.New(rand.NewPCG(5, 6))
	x, y, idx := make([]float32, n*d), make([]int64, n), make([]int64, n)
	for i := range n {
		y[i], idx[i] = int64(i%classes), int64(i)
		for j := range d {
			x[i*d+j] = float32(rng.NormFloat64())
			if j%classes == i%classes {
				x[i*d+j] += 1.2
			}
		}
	}
	meta := &examplestore.Meta{Format: "features", Task: "classification", NumClasses: classes, Shape: []int{d}, DType: "F32",
		Normalize: examplestore.Normalization{Scale: 1, Mean: make([]float64, d), Std: make([]float64, d)}}
	split := &examplestore.Split{X: safetensors.F32Tensor("x", []int{n, d}, x), Y: safetensors.I64Tensor("y", []int{n}, y), Index: idx}
	if err := examplestore.Write(dir, meta, map[string]*examplestore.Split{"test": split}); err != nil {
		t.Fatal(err)
	}
	run := func(runtime string) Result {
		cfg := probe.DefaultEpisodes()
		cfg.MaxSupportSetSize, cfg.MaxNumQuery = 60, 5
		nd := &Node{features: dir, model: "m", source: "test", group: "g", split: "test", count: 12, adapters: probe.AdapterNames(), cfg: cfg,
			rt: torchrt.Options{Runtime: runtime, Precision: "fp64", Python: torchtest.Python()}}
		env := &nodes.Env{OutDir: t.TempDir(), Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 2, GPUs: torchtest.GPUs()}}
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
