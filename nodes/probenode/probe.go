// Package probenode implements the `probe` block: ELEVATER's linear probe
// with automatic hyper-parameter tuning on a features block's cached
// vectors, on few-shot subsets (N examples per class x seeds) and
// optionally VTAB-1k, with each subset's index lists kept as artifacts.
package probenode

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/featureset"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/probe"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the probe block kind.
type Kind struct {
	featureset.Block[Node, *Node]
}

// Name returns "probe".
func (Kind) Name() string { return "probe" }

// Version is bumped when outputs for an unchanged config would change.
func (Kind) Version() string { return "2" } // 2: scores within probe.ScoreTolerance are ties

var spec = torchrt.AddSpec(hcldec.ObjectSpec{
	"features":       &hcldec.AttrSpec{Name: "features", Type: cty.DynamicPseudoType, Required: true},
	"model":          &hcldec.AttrSpec{Name: "model", Type: cty.String},
	"shots":          &hcldec.AttrSpec{Name: "shots", Type: cty.List(cty.Number)},
	"seeds":          &hcldec.AttrSpec{Name: "seeds", Type: cty.List(cty.Number)},
	"vtab1k":         &hcldec.AttrSpec{Name: "vtab1k", Type: cty.Bool},
	"metric":         &hcldec.AttrSpec{Name: "metric", Type: cty.String},
	"train_split":    &hcldec.AttrSpec{Name: "train_split", Type: cty.String},
	"test_split":     &hcldec.AttrSpec{Name: "test_split", Type: cty.String},
	"learning_rates": &hcldec.AttrSpec{Name: "learning_rates", Type: cty.List(cty.Number)},
	"epochs":         &hcldec.AttrSpec{Name: "epochs", Type: cty.Number},
	"final_epochs":   &hcldec.AttrSpec{Name: "final_epochs", Type: cty.Number},
	"batch_size":     &hcldec.AttrSpec{Name: "batch_size", Type: cty.Number},
})

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType: scores and std are keyed by subset ("5", "20", "full",
// "vtab1k").
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"path": cty.String, "model": cty.String, "metric": cty.String,
		"scores": cty.Map(cty.Number), "std": cty.Map(cty.Number), "parameters": cty.Number,
	})
}

// Node is a decoded probe block.
type Node struct {
	features, model, metric string
	trainSplit, testSplit   string
	shots, seeds            []int
	vtab1k                  bool
	tune                    probe.TuneConfig
	// rt are the runtime attributes (nodes/torchrt); the torch runtime's
	// precision is "fp64" (default) or "fp32".
	rt torchrt.Options
}

// SetFeatures keeps the features store's path.
func (n *Node) SetFeatures(path string) { n.features = path }

// ReadAttrs reads every attribute but the features reference (known ones
// only, so validate checks them before the features exist).
func (n *Node) ReadAttrs(a *featureset.Attrs) {
	n.model = a.Str("model", featureset.ModelName(a.Decl))
	n.metric = a.Str("metric", "accuracy", probe.MetricNames()...)
	n.trainSplit = a.Str("train_split", "train")
	n.testSplit = a.Str("test_split", "test")
	n.shots = a.Ints("shots", []int{5, 20, 50, 0}, 0)
	n.seeds = a.Ints("seeds", []int{0, 1, 2}, 0)
	n.vtab1k = a.Bool("vtab1k", false)
	m, _ := probe.LookupMetric(n.metric)
	n.tune = probe.DefaultTune(m)
	n.tune.LRs = a.Floats("learning_rates", n.tune.LRs)
	n.tune.Epochs = a.Int("epochs", n.tune.Epochs, 1)
	n.tune.FinalEpochs = a.Int("final_epochs", n.tune.FinalEpochs, 1)
	n.tune.Batch = a.Int("batch_size", n.tune.Batch, 2)
	n.rt = torchrt.ReadOptions(a, "fp64", "fp32")
}

// Fingerprint: the features path names its content.
func (n *Node) Fingerprint(_ context.Context, w io.Writer) error { return n.rt.Fingerprint(w) }

// DefaultResources: the learning rates are searched on two cores.
func (n *Node) DefaultResources() nodes.Resources { return n.rt.Resources(2) }

// RuntimeChoice is the runtime the block runs on.
func (n *Node) RuntimeChoice() (string, *nodes.Acceleration) { return n.rt.Runtime, n.rt.Auto }

// SeedRun is one seed's subset and its tuned probe.
type SeedRun struct {
	Seed  int `json:"seed"`
	Train int `json:"train_examples"`
	Val   int `json:"val_examples"`
	*probe.Tuned
}

// Subset is the probe's result on one kind of subset over the seeds.
type Subset struct {
	Name  string    `json:"name"`
	Shots int       `json:"shots_per_class"` // 0: every example
	Mean  float64   `json:"mean"`
	Std   float64   `json:"std"`
	Seeds []SeedRun `json:"seeds"`
}

// Result is what probe.json holds.
type Result struct {
	Model      string   `json:"model"`
	Metric     string   `json:"metric"`
	Classes    int      `json:"classes"`
	Dim        int      `json:"dim"`
	Parameters int      `json:"trainable_parameters"`
	Subsets    []Subset `json:"subsets"`
	Protocol   string   `json:"protocol"`
}

// SubsetName is how a subset is keyed: the shots per class, "full", or
// "vtab1k".
func SubsetName(shots int) string {
	if shots <= 0 {
		return "full"
	}
	return strconv.Itoa(shots)
}

// Run tunes and evaluates the probe on every subset and seed.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	train, err := featureset.Load(n.features, n.trainSplit)
	if err != nil {
		return cty.NilVal, err
	}
	test, err := featureset.Load(n.features, n.testSplit)
	if err != nil {
		return cty.NilVal, err
	}
	classes := train.NumClasses
	tune := n.tune
	tune.Workers = max(env.Devices.CPUs, 1)
	res := Result{Model: n.model, Metric: n.metric, Classes: classes, Dim: train.D,
		Protocol: "ELEVATER linear probe: BatchNorm1d(affine=False) + linear head, SGD momentum 0.9 Nesterov, batch 32, constant learning rate; lr in logspace(-6,-1,6), weight decay searched on logspace(-6,6,97) (7 coarse points, refined by 8/4/2/1) for 10 epochs each, scored by the best validation epoch; final 50 epochs on train+val, test scored after the last epoch"}
	kinds := append([]int(nil), n.shots...)
	if n.vtab1k {
		kinds = append(kinds, -1)
	}
	if err := os.MkdirAll(filepath.Join(env.OutDir, "subsets"), 0o755); err != nil {
		return cty.NilVal, err
	}
	var jobs []tuneJob
	for _, shots := range kinds {
		name := SubsetName(shots)
		if shots < 0 {
			name = "vtab1k"
		}
		for _, seed := range n.seeds {
			trIdx, valIdx, err := indices(train, classes, shots, uint64(seed))
			if err != nil {
				return cty.NilVal, fmt.Errorf("subset %s seed %d: %w", name, seed, err)
			}
			if err := featureset.WriteJSON(filepath.Join(env.OutDir, "subsets", fmt.Sprintf("%s_seed%d.json", name, seed)), map[string][]int{"train": trIdx, "val": valIdx}); err != nil {
				return cty.NilVal, err
			}
			jobs = append(jobs, tuneJob{subset: name, shots: shots, seed: seed, train: trIdx, val: valIdx})
		}
	}
	if n.rt.Torch() {
		err = n.tuneOnTorch(ctx, env, jobs, train, classes, tune)
	} else {
		err = n.tuneInGo(ctx, env, jobs, train, test, classes, tune)
	}
	if err != nil {
		return cty.NilVal, err
	}
	scores, stds := map[string]cty.Value{}, map[string]cty.Value{}
	for i := 0; i < len(jobs); {
		sub := Subset{Name: jobs[i].subset, Shots: max(jobs[i].shots, 0)}
		var vals []float64
		for ; i < len(jobs) && jobs[i].subset == sub.Name; i++ {
			j := jobs[i]
			res.Parameters = j.tuned.Params
			sub.Seeds = append(sub.Seeds, SeedRun{Seed: j.seed, Train: len(j.train), Val: len(j.val), Tuned: j.tuned})
			vals = append(vals, j.tuned.TestScore)
			env.Log.Info().Str("subset", sub.Name).Int("seed", j.seed).Float64("lr", j.tuned.LR).Float64("weight_decay", j.tuned.WD).
				Float64("val", j.tuned.ValScore).Float64("test", j.tuned.TestScore).Msg("probe")
		}
		sub.Mean, sub.Std = probe.MeanStd(vals)
		res.Subsets = append(res.Subsets, sub)
		scores[sub.Name] = cty.NumberFloatVal(sub.Mean)
		stds[sub.Name] = cty.NumberFloatVal(sub.Std)
	}
	if err := featureset.WriteJSON(filepath.Join(env.OutDir, "probe.json"), res); err != nil {
		return cty.NilVal, err
	}
	return cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal(env.OutDir), "model": cty.StringVal(n.model), "metric": cty.StringVal(n.metric),
		"scores": cty.MapVal(scores), "std": cty.MapVal(stds), "parameters": cty.NumberIntVal(int64(res.Parameters)),
	}), nil
}

// tuneJob is one subset and seed to tune a probe for, and its outcome.
type tuneJob struct {
	subset     string
	shots      int
	seed       int
	train, val []int
	tuned      *probe.Tuned
}

// tuneInGo runs each job's search in Go, its learning rates on the node's
// CPUs.
func (n *Node) tuneInGo(ctx context.Context, env *nodes.Env, jobs []tuneJob, train, test *featureset.Split, classes int, tune probe.TuneConfig) error {
	for i := range jobs {
		j := &jobs[i]
		env.Progress.Update(int64(i), int64(len(jobs)), "probes")
		cfg := tune
		cfg.Seed = uint64(j.seed)
		t, err := probe.Autotune(ctx, train.Subset(j.train), train.Subset(j.val), test.Set, classes, cfg)
		if err != nil {
			return fmt.Errorf("subset %s seed %d: %w", j.subset, j.seed, err)
		}
		j.tuned = t
	}
	return nil
}

// indices draws a subset's train and validation indices from the labels
// and the seed alone: shots per class (0: all) split 80/20 stratified, or
// (shots < 0) VTAB-1k's 1000 examples split 800/200.
func indices(train *featureset.Split, classes, shots int, seed uint64) (tr, val []int, err error) {
	if shots < 0 {
		_, tr, val = probe.VTAB1k(train.N, seed)
		return tr, val, nil
	}
	return probe.StratifiedSplit(probe.FewShot(train.Y, classes, shots, seed), train.Y, classes, 0.2, seed)
}
