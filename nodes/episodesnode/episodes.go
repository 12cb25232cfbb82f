// Package episodesnode implements the `episodes` block: Meta-Dataset
// episodes (variable-way variable-shot by default, or fixed N-way K-shot)
// drawn from one split of a features block's cached vectors, each adapted
// by prototype, cosine-classifier and linear adapters; the mean query
// accuracy per adapter with its 95% interval.
package episodesnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/featureset"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/probe"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the episodes block kind.
type Kind struct {
	featureset.Block[Node, *Node]
}

// Name returns "episodes".
func (Kind) Name() string { return "episodes" }

// Version is bumped when outputs for an unchanged config would change.
func (Kind) Version() string { return "1" }

var spec = torchrt.AddSpec(hcldec.ObjectSpec{
	"features":    &hcldec.AttrSpec{Name: "features", Type: cty.DynamicPseudoType, Required: true},
	"model":       &hcldec.AttrSpec{Name: "model", Type: cty.String},
	"source":      &hcldec.AttrSpec{Name: "source", Type: cty.String},
	"group":       &hcldec.AttrSpec{Name: "group", Type: cty.String},
	"split":       &hcldec.AttrSpec{Name: "split", Type: cty.String},
	"episodes":    &hcldec.AttrSpec{Name: "episodes", Type: cty.Number},
	"seed":        &hcldec.AttrSpec{Name: "seed", Type: cty.Number},
	"adapters":    &hcldec.AttrSpec{Name: "adapters", Type: cty.List(cty.String)},
	"ways":        &hcldec.AttrSpec{Name: "ways", Type: cty.Number},
	"shots":       &hcldec.AttrSpec{Name: "shots", Type: cty.Number},
	"queries":     &hcldec.AttrSpec{Name: "queries", Type: cty.Number},
	"min_ways":    &hcldec.AttrSpec{Name: "min_ways", Type: cty.Number},
	"max_ways":    &hcldec.AttrSpec{Name: "max_ways", Type: cty.Number},
	"max_query":   &hcldec.AttrSpec{Name: "max_query", Type: cty.Number},
	"max_support": &hcldec.AttrSpec{Name: "max_support", Type: cty.Number},
})

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType: accuracy and ci95 are keyed by adapter.
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"path": cty.String, "model": cty.String, "source": cty.String, "group": cty.String,
		"accuracy": cty.Map(cty.Number), "ci95": cty.Map(cty.Number),
	})
}

// Node is a decoded episodes block.
type Node struct {
	features, model, source, group, split string
	count                                 int
	seed                                  uint64
	adapters                              []string
	cfg                                   probe.EpisodeConfig
	// rt are the runtime attributes (nodes/torchrt); the torch runtime's
	// precision is "fp64" (default) or "fp32".
	rt torchrt.Options
}

// SetFeatures keeps the features store's path.
func (n *Node) SetFeatures(path string) { n.features = path }

// ReadAttrs reads every attribute but the features reference (known ones
// only, so validate checks them before the features exist).
func (n *Node) ReadAttrs(a *featureset.Attrs) {
	decl := a.Decl
	n.model = a.Str("model", featureset.ModelName(decl))
	n.split = a.Str("split", "test")
	n.source = a.Str("source", n.split)
	n.group = a.Str("group", "episodes")
	n.count = a.Int("episodes", 600, 1)
	n.seed = uint64(a.Int("seed", 0, 0))
	n.adapters = a.Strs("adapters", probe.AdapterNames(), probe.AdapterNames()...)
	n.cfg = probe.DefaultEpisodes()
	n.cfg.Ways = a.Int("ways", 0, 2)
	n.cfg.Shots = a.Int("shots", 0, 1)
	n.cfg.Queries = a.Int("queries", 0, 1)
	if set := btoi(n.cfg.Ways > 0) + btoi(n.cfg.Shots > 0) + btoi(n.cfg.Queries > 0); set != 0 && set != 3 {
		a.Diags = append(a.Diags, decl.Errorf("ways", "Incomplete fixed episodes", "Fixed N-way K-shot episodes need ways, shots and queries together; leave all three out for variable-way, variable-shot episodes."))
	}
	n.cfg.MinWays = a.Int("min_ways", n.cfg.MinWays, 2)
	n.cfg.MaxWaysUpperBound = a.Int("max_ways", n.cfg.MaxWaysUpperBound, 2)
	n.cfg.MaxNumQuery = a.Int("max_query", n.cfg.MaxNumQuery, 1)
	n.cfg.MaxSupportSetSize = a.Int("max_support", n.cfg.MaxSupportSetSize, 1)
	if n.cfg.MaxWaysUpperBound < n.cfg.MinWays {
		a.Diags = append(a.Diags, decl.Errorf("max_ways", "Invalid max_ways", "max_ways (%d) is below min_ways (%d).", n.cfg.MaxWaysUpperBound, n.cfg.MinWays))
	}
	n.rt = torchrt.ReadOptions(a, "fp64", "fp32")
	if len(n.adapters) == 0 {
		a.Diags = append(a.Diags, decl.Errorf("adapters", "No adapters", "List at least one of %q.", probe.AdapterNames()))
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Fingerprint: the features path names its content.
func (n *Node) Fingerprint(_ context.Context, w io.Writer) error { return n.rt.Fingerprint(w) }

// DefaultResources: episodes run on two cores.
func (n *Node) DefaultResources() nodes.Resources { return n.rt.Resources(2) }

// RuntimeChoice is the runtime the block runs on.
func (n *Node) RuntimeChoice() (string, *nodes.Acceleration) { return n.rt.Runtime, n.rt.Auto }

// Result is what episodes.json holds.
type Result struct {
	Model    string                `json:"model"`
	Source   string                `json:"source"`
	Group    string                `json:"group"`
	Sampler  string                `json:"sampler"`
	Episodes int                   `json:"episodes"`
	MeanWays float64               `json:"mean_ways"`
	MeanShot float64               `json:"mean_support_per_class"`
	Results  []probe.EpisodeResult `json:"results"`
}

// Run draws the episodes (each from the seed and its number alone, so
// every encoder gets the same ones) and evaluates every adapter on each.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	set, err := featureset.Load(n.features, n.split)
	if err != nil {
		return cty.NilVal, err
	}
	eps := make([]probe.Episode, n.count)
	var ways, shots float64
	for e := range eps {
		ep, err := probe.SampleEpisode(set.Y, set.NumClasses, n.cfg, rand.New(rand.NewPCG(n.seed, uint64(e))))
		if err != nil {
			return cty.NilVal, fmt.Errorf("episode %d: %w", e, err)
		}
		eps[e] = ep
		ways += float64(len(ep.Classes)) / float64(n.count)
		shots += float64(len(ep.Support)) / float64(len(ep.Classes)) / float64(n.count)
	}
	if err := featureset.WriteJSON(filepath.Join(env.OutDir, "episode_indices.json"), eps); err != nil {
		return cty.NilVal, err
	}
	var acc [][]float64
	if n.rt.Torch() {
		acc, err = n.adaptOnTorch(ctx, env, filepath.Join(env.OutDir, "episode_indices.json"))
	} else {
		acc, err = n.adaptInGo(ctx, env, set, eps)
	}
	if err != nil {
		return cty.NilVal, err
	}
	sampler := "Meta-Dataset variable-way variable-shot"
	if n.cfg.Fixed() {
		sampler = fmt.Sprintf("%d-way %d-shot, %d queries per class", n.cfg.Ways, n.cfg.Shots, n.cfg.Queries)
	}
	res := Result{Model: n.model, Source: n.source, Group: n.group, Sampler: sampler, Episodes: n.count, MeanWays: ways, MeanShot: shots}
	means, cis := map[string]cty.Value{}, map[string]cty.Value{}
	for k, name := range n.adapters {
		m, ci := probe.MeanCI(acc[k])
		res.Results = append(res.Results, probe.EpisodeResult{Adapter: name, Mean: m, CI95: ci, Episodes: n.count, Accuracy: acc[k]})
		means[name], cis[name] = cty.NumberFloatVal(m), cty.NumberFloatVal(ci)
		env.Log.Info().Str("adapter", name).Float64("accuracy", m).Float64("ci95", ci).Msg("episodes")
	}
	if err := featureset.WriteJSON(filepath.Join(env.OutDir, "episodes.json"), res); err != nil {
		return cty.NilVal, err
	}
	return cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal(env.OutDir), "model": cty.StringVal(n.model), "source": cty.StringVal(n.source),
		"group": cty.StringVal(n.group), "accuracy": cty.MapVal(means), "ci95": cty.MapVal(cis),
	}), nil
}

// adaptInGo runs every adapter on every episode, on the node's CPUs.
func (n *Node) adaptInGo(ctx context.Context, env *nodes.Env, set *featureset.Split, eps []probe.Episode) ([][]float64, error) {
	acc := make([][]float64, len(n.adapters))
	for k := range acc {
		acc[k] = make([]float64, n.count)
	}
	var mu sync.Mutex
	done := int64(0)
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(env.Devices.CPUs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range work {
				for k, name := range n.adapters {
					acc[k][e] = probe.RunEpisode(set.Set, eps[e], probe.Adapters[name])
				}
				mu.Lock()
				done++
				env.Progress.Update(done, int64(n.count), "episodes")
				mu.Unlock()
			}
		}()
	}
	for e := range eps {
		if ctx.Err() != nil {
			break
		}
		work <- e
	}
	close(work)
	wg.Wait()
	return acc, ctx.Err()
}

// adaptOnTorch runs every adapter on the episodes of indices (written by
// Run) in the torch runtime's worker (job episodes).
func (n *Node) adaptOnTorch(ctx context.Context, env *nodes.Env, indices string) ([][]float64, error) {
	dir := filepath.Join(env.OutDir, ".torch")
	defer os.RemoveAll(dir)
	work := filepath.Join(dir, "out")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	cfg := map[string]any{"job": "episodes", "store": n.features, "split": n.split, "episodes": indices,
		"adapters": n.adapters, "precision": n.rt.Precision, "work": work}
	if err := torchrt.Run(ctx, env, dir, n.rt.Job(cfg)); err != nil {
		return nil, err
	}
	var byName map[string][]float64
	data, err := os.ReadFile(filepath.Join(work, "accuracy.json"))
	if err == nil {
		err = json.Unmarshal(data, &byName)
	}
	if err != nil {
		return nil, fmt.Errorf("torch runtime output: %w", err)
	}
	acc := make([][]float64, len(n.adapters))
	for k, name := range n.adapters {
		if acc[k] = byName[name]; len(acc[k]) != n.count {
			return nil, fmt.Errorf("torch runtime output: %d accuracies of %s for %d episodes", len(acc[k]), name, n.count)
		}
	}
	return acc, nil
}
