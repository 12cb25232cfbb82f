// Package trainnode implements the `train` block: one experiment — an
// encoder with an adapter, trained with a recipe on a benchmark — run with
// gorgonia (package train). It writes metrics.json in the external-trainer
// protocol's format (so a results block collects it), log.jsonl, and the
// top-k checkpoints as safetensors with PyTorch-style names.
package trainnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/runmeta"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/imageops"
	"github.com/gatepipe/gatepipe/internal/numfmt"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/command"
	"github.com/gatepipe/gatepipe/nodes/featureset"
	"github.com/gatepipe/gatepipe/nodes/specs"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/protocol"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/gatepipe/gatepipe/train"
	"github.com/gatepipe/gatepipe/train/cblas"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the train block kind.
type Kind struct{}

// Name returns "train".
func (Kind) Name() string { return "train" }

// Version is bumped when outputs for an unchanged config would change.
// 11: segmentation masks through the evaluation transform;
// 12: segmentation Mean Acc averages over the classes in the truth only.
func (Kind) Version() string { return "12" }

// IsolatedProcess: training runs in its own process by default.
func (Kind) IsolatedProcess() bool { return true }

var spec = torchrt.AddSpec(hcldec.ObjectSpec{
	"encoder":   &hcldec.AttrSpec{Name: "encoder", Type: cty.DynamicPseudoType, Required: true},
	"adapter":   &hcldec.AttrSpec{Name: "adapter", Type: cty.DynamicPseudoType, Required: true},
	"recipe":    &hcldec.AttrSpec{Name: "recipe", Type: cty.DynamicPseudoType, Required: true},
	"benchmark": &hcldec.AttrSpec{Name: "benchmark", Type: cty.DynamicPseudoType, Required: true},
	"model":     &hcldec.AttrSpec{Name: "model", Type: cty.String},
})

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType is the value other blocks see.
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"out_dir": cty.String, "metrics": cty.String, "log": cty.String,
		"checkpoints": cty.List(cty.String), "acc1": cty.Number, "test": cty.Map(cty.Number),
	})
}

// Node is a decoded train block.
type Node struct {
	model   string
	enc     train.EncoderSpec
	encName string
	weights specs.Weights // safetensors file with initial weights, or ""
	// preprocess is the encoder's evaluation transform (nil: none).
	preprocess *imageops.Preprocess
	task       train.Task
	recipe     train.Recipe
	dataset    string
	benchmark  string
	category   string
	// checkpointEvery is the recipe's checkpoint_every (nil: unset).
	checkpointEvery *int
	// seeds are the recipe's seeds: one training each (none: the
	// recipe's seed alone).
	seeds []uint64
	// rt are the runtime attributes (nodes/torchrt).
	rt torchrt.Options
	// card is GATE's protocol for the adapter (nil: gatepipe's compact
	// heads).
	card *protocol.Card
}

// references lists, for each reference of a train block, an attribute
// only the right kind of block has.
var references = map[string]string{"encoder": "arch", "adapter": "task", "recipe": "iterations", "benchmark": "dataset"}

// CheckPartial checks the references' kinds before their values exist.
func (Kind) CheckPartial(v cty.Value, decl nodes.Decl) hcl.Diagnostics {
	diags := append(specs.CheckTypes(v, decl, references), torchrt.CheckOptions(v, decl, torchrt.Precisions...)...)
	return append(diags, checkProtocolRuntime(v, decl)...)
}

// Decode reads the referenced encoder, adapter, recipe and benchmark.
func (Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	n := &Node{}
	r := &specs.Reader{V: v, Decl: decl}
	n.enc, n.weights = r.Encoder()
	n.preprocess = r.Preprocess()
	n.enc.Head = train.HeadSpec{Layers: r.Int("adapter", "layers"), Dim: r.Int("adapter", "dim"), Heads: r.Int("adapter", "heads"),
		Ways: r.Int("adapter", "ways"), Shots: r.Int("adapter", "shots"), Queries: r.Int("adapter", "queries")}
	n.encName = r.Str("encoder", "name")
	n.task = train.Task(r.Str("adapter", "task"))
	if n.task == "" {
		n.task = train.Classification
	}
	n.recipe = train.Recipe{
		LR: r.Float("recipe", "lr"), WeightDecay: r.Float("recipe", "weight_decay"),
		BatchSize: r.Int("recipe", "batch_size"), Iterations: r.Int("recipe", "iterations"),
		ValidateEvery: r.Int("recipe", "validate_every"), TopK: r.Int("recipe", "top_k"),
		Seed: uint64(r.Float("recipe", "seed")), PlateauFactor: r.Float("recipe", "plateau_factor"),
		PlateauPatience: r.Int("recipe", "plateau_patience"), PlateauThreshold: r.Float("recipe", "plateau_threshold"),
		LinearProbe: r.Str("recipe", "mode") == "linear_probe",
	}
	if s := r.Get("recipe", "seeds"); s != cty.NilVal && !s.IsNull() && s.IsKnown() {
		for _, e := range s.AsValueSlice() {
			seed, _ := e.AsBigFloat().Uint64()
			n.seeds = append(n.seeds, seed)
		}
	}
	if c := r.Get("recipe", "checkpoint_every"); c != cty.NilVal && !c.IsNull() {
		every, _ := c.AsBigFloat().Int64()
		n.checkpointEvery = new(int(every))
	}
	n.dataset, n.benchmark = r.Str("benchmark", "dataset"), r.Str("benchmark", "id")
	if n.benchmark == "" {
		n.benchmark = r.Str("benchmark", "name")
	}
	n.category = r.Str("benchmark", "category")
	n.card = readProtocol(r, string(n.task), n.benchmark)
	n.recipeDefaults(r)
	n.model = n.encName
	if m := v.GetAttr("model"); !m.IsNull() {
		n.model = m.AsString()
	}
	a := &featureset.Attrs{V: v, Decl: decl}
	n.rt = torchrt.ReadOptions(a, torchrt.Precisions...)
	switch {
	case train.IsLibrary(n.enc.Arch):
		n.rt.PreferTorchFor("the encoder is one only PyTorch builds")
	case n.card != nil:
		n.rt.PreferTorchFor("GATE's adapters run on PyTorch")
	}
	r.NeedTorch(n.enc, n.rt.Torch())
	n.needsTorch(r)
	return n, append(r.Diags, a.Diags...)
}

// Downloads is the Hub model the encoder's weights name, if any.
func (n *Node) Downloads() []sources.Ref {
	refs := n.weights.Downloads()
	if t, ok := n.textRef(); ok {
		refs = append(refs, t)
	}
	return refs
}

// Fingerprint hashes the initial weights file; every other input is in
// the configuration (the dataset path
// names its content).
func (n *Node) Fingerprint(ctx context.Context, w io.Writer) error {
	if err := n.rt.Fingerprint(w); err != nil {
		return err
	}
	if err := n.fingerprintProtocol(w); err != nil {
		return err
	}
	return n.weights.Fingerprint(ctx, w)
}

// DefaultResources: one CPU per experiment, so experiments run side by side.
func (n *Node) DefaultResources() nodes.Resources { return n.rt.Resources(1) }

// RuntimeChoice is the runtime the block runs on.
func (n *Node) RuntimeChoice() (string, *nodes.Acceleration) { return n.rt.Runtime, n.rt.Auto }

// Run trains: once with the recipe's seed, or once per seed of its seeds
// (see runSeeds).
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	d, err := n.load()
	if err != nil {
		return cty.NilVal, err
	}
	defer d.close()
	if len(n.seeds) > 0 {
		return n.runSeeds(ctx, env, d)
	}
	r, err := n.trainOne(ctx, env, d, n.recipe)
	if err != nil {
		return cty.NilVal, err
	}
	return n.value(env.OutDir, r.metrics, r.checkpoints, r.acc1), nil
}

// loaded is a benchmark's three splits, read once for every seed (for
// the torch runtime, their targets only).
type loaded struct {
	task    train.Task
	splits  [3]*train.Data
	counts  [3]int // examples per split
	outputs int
	// names renames metrics to the benchmark's matrix columns (the
	// store's metric_names).
	names map[string]string
	// vocab are the store's words, by token (questions and captions).
	vocab []string
}

// close releases the splits' mapped stores.
func (d *loaded) close() {
	for _, s := range d.splits {
		if s != nil {
			s.Close()
		}
	}
}

// load reads the benchmark's splits and checks its task.
func (n *Node) load() (*loaded, error) {
	meta, err := examplestore.ReadMeta(n.dataset)
	if err != nil {
		return nil, fmt.Errorf("benchmark dataset: %w", err)
	}
	task, err := train.StoreTask(meta)
	if err != nil {
		return nil, err
	}
	if task != n.task && !(n.task == train.FewShot && task == train.Classification) {
		return nil, fmt.Errorf("the adapter's task is %s but the benchmark dataset is a %s task", n.task, task)
	}
	for _, name := range []string{"train", "val", "test"} {
		if _, ok := meta.Splits[name]; !ok {
			return nil, fmt.Errorf("benchmark dataset has no %s split (set val_fraction / test files on the dataset)", name)
		}
	}
	if n.rt.Torch() {
		d, err := n.loadTargets(meta)
		if d != nil {
			d.names = meta.MetricNames
			n.gateMetrics(d)
		}
		return d, err
	}
	d := &loaded{task: n.task, names: meta.MetricNames} // a few-shot head reads a classification dataset's labels as they are
	// The inputs stay in the store, read a batch at a time: the node's
	// memory is the model's and a batch's, not the splits'.
	for i, name := range []string{"train", "val", "test"} {
		if d.splits[i], d.outputs, err = train.OpenSplitFor(n.dataset, name, meta, d.task, n.preprocess); err != nil {
			d.close()
			return nil, err
		}
		d.counts[i] = d.splits[i].Len()
	}
	n.gateMetrics(d)
	return d, nil
}

// trained is what one training run left in its directory.
type trained struct {
	metrics     command.Metrics
	checkpoints []string
	acc1        *float64
	info        runmeta.Info
}

// trainOne trains with recipe (its seed) into env.OutDir: log.jsonl, the
// kept checkpoints, metrics.json and run.json.
func (n *Node) trainOne(ctx context.Context, env *nodes.Env, d *loaded, recipe train.Recipe) (*trained, error) {
	splits := d.splits
	init, own, err := n.weights.LoadFor(env, n.enc.SizedBy(splits[0]), n.task, splits[0].Shape, d.outputs)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	var res *train.Result
	if n.rt.Torch() {
		res, err = n.fitOnTorch(ctx, env, d, recipe, init, own)
	} else {
		res, err = n.fitInGo(ctx, env, d, recipe, init)
	}
	if err != nil {
		return nil, err
	}
	env.Progress.Update(int64(recipe.Iterations), int64(recipe.Iterations), "iterations · writing")
	out := &trained{}
	for i, c := range res.Checkpoints {
		var ts []safetensors.Tensor
		for name, vals := range c.Values {
			ts = append(ts, safetensors.F32Tensor(name, c.Shapes[name], vals))
		}
		p := filepath.Join(env.OutDir, fmt.Sprintf("checkpoint_%d.safetensors", i))
		md := map[string]string{"iteration": fmt.Sprint(c.Iteration), "val_score": fmt.Sprint(c.ValScore), "arch": n.enc.Arch}
		if err := safetensors.WriteFile(p, ts, md); err != nil {
			return nil, err
		}
		out.checkpoints = append(out.checkpoints, p)
	}
	out.metrics = command.Metrics{Model: n.model, Benchmark: n.benchmark, Category: n.category, Metrics: map[string]command.Metric{}}
	for i, pm := range train.PaperMetrics(d.task, res.Metrics) {
		if to, ok := d.names[pm.Name]; ok {
			pm.Name = to
		}
		out.metrics.Metrics[pm.Name] = command.Metric{Value: pm.Value, HigherIsBetter: pm.HigherIsBetter}
		if i == 0 {
			out.metrics.Primary = pm.Name
		}
	}
	if err := writeMetrics(env.OutDir, out.metrics); err != nil {
		return nil, err
	}
	seed := recipe.Seed
	out.info = runmeta.Info{Seed: &seed, Started: started.UTC(), Seconds: time.Since(started).Seconds(),
		Iterations: recipe.Iterations, ImagesPerSec: res.ImagesPerSec, EnergyJ: res.EnergyJ, BLAS: cblas.InUse(), Runtime: n.rt.Runtime}
	if n.rt.Torch() {
		out.info.BLAS = "" // torch's own
	}
	out.info.PeakRSSBytes = runmeta.PeakRSS()
	if err := command.WriteRunInfo(env, out.info); err != nil {
		return nil, err
	}
	if d.task == train.Classification {
		out.acc1 = new(res.Metrics["acc1"])
	}
	rounded := map[string]float64{}
	for k, v := range res.Metrics {
		rounded[k] = numfmt.Digits4(v)
	}
	env.Log.Info().Str("model", n.model).Str("benchmark", n.benchmark).Interface("test", rounded).Msg("trained")
	return out, nil
}

// fitInGo trains on the Go runtime (package train), logging to
// log.jsonl and resuming from the node's checkpoint.
func (n *Node) fitInGo(ctx context.Context, env *nodes.Env, d *loaded, recipe train.Recipe, init train.Weights) (*train.Result, error) {
	splits := d.splits
	logPath := filepath.Join(env.OutDir, command.TrainerLogFile)
	resume := n.resumer(env, logPath) // may restore the log up to its checkpoint
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	enc := json.NewEncoder(lf)
	return train.Train(ctx, n.enc, init, d.outputs, recipe, splits[0], splits[1], splits[2],
		func(e train.LogEntry) {
			enc.Encode(e)
			if e.Val != nil {
				logValidation(env, e.Iteration, e.Loss, e.LR, e.ImagesPerSec, e.Val)
			}
		},
		func(done, total int64, phase string) { env.Progress.Update(done, total, "iterations · "+phase) }, resume)
}

// logValidation logs a validation's headline numbers.
func logValidation(env *nodes.Env, it int, loss, lr, imagesPerSec float64, val map[string]float64) {
	ev := env.Log.Info().Int("iteration", it).Float64("loss", numfmt.Digits4(loss))
	for _, k := range []string{"acc1", "aps", "auc", "mae", "miou"} {
		if v, ok := val[k]; ok {
			ev = ev.Float64("val_"+k, numfmt.Digits4(v))
		}
	}
	ev.Float64("lr", numfmt.Digits4(lr)).Float64("images_per_sec", math.Round(imagesPerSec)).Msg("validation")
}

// writeMetrics writes dir's metrics.json.
func writeMetrics(dir string, m command.Metrics) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, command.MetricsFile), data, 0o644)
}

// value is the block's value for the run in dir: its metrics (means over
// seeds), checkpoints and test accuracy.
func (n *Node) value(dir string, m command.Metrics, checkpoints []string, acc1 *float64) cty.Value {
	test := map[string]cty.Value{}
	for name, v := range m.Metrics {
		test[name] = cty.NumberFloatVal(v.Value)
	}
	testVal := cty.MapValEmpty(cty.Number)
	if len(test) > 0 {
		testVal = cty.MapVal(test)
	}
	acc := cty.NullVal(cty.Number)
	if acc1 != nil {
		acc = cty.NumberFloatVal(*acc1)
	}
	ckptList := cty.ListValEmpty(cty.String)
	if len(checkpoints) > 0 {
		var ckpts []cty.Value
		for _, c := range checkpoints {
			ckpts = append(ckpts, cty.StringVal(c))
		}
		ckptList = cty.ListVal(ckpts)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"out_dir": cty.StringVal(dir), "metrics": cty.StringVal(filepath.Join(dir, command.MetricsFile)),
		"log":         cty.StringVal(filepath.Join(dir, command.TrainerLogFile)),
		"checkpoints": ckptList, "acc1": acc, "test": testVal,
	})
}

// ExperimentCell: a train block evaluates its model (the model attribute,
// else the encoder block's name) on its benchmark (id, else name).
func (Kind) ExperimentCell(config cty.Value) (string, string, bool, bool) {
	model, ok := nodes.KnownString(config, "model")
	if !ok {
		model, ok = nodes.KnownString(config, "encoder", "name")
	}
	bench, okB := nodes.KnownString(config, "benchmark", "id")
	if !okB || bench == "" {
		bench, okB = nodes.KnownString(config, "benchmark", "name")
	}
	return model, bench, ok && okB && model != "" && bench != "", true
}
