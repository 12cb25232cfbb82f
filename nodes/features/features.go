// Package features implements the `features` block: an encoder's pooled
// features for every split of a benchmark, computed once in evaluation
// mode and written as an example store of vectors. Heads trained on it
// (an mlp encoder with no hidden layers is a linear probe) reuse the cached
// artifact instead of running the encoder again.
package features

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/imageops"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/featureset"
	"github.com/gatepipe/gatepipe/nodes/specs"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/gatepipe/gatepipe/train"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the features block kind.
type Kind struct{}

// Name returns "features".
func (Kind) Name() string { return "features" }

// Version is bumped when outputs for an unchanged config would change.
func (Kind) Version() string { return "4" } // 4: the ViT's GELU is exact by default

// IsolatedProcess: the encoder runs in its own process by default.
func (Kind) IsolatedProcess() bool { return true }

var spec = torchrt.AddSpec(hcldec.ObjectSpec{
	"encoder":   &hcldec.AttrSpec{Name: "encoder", Type: cty.DynamicPseudoType, Required: true},
	"benchmark": &hcldec.AttrSpec{Name: "benchmark", Type: cty.DynamicPseudoType, Required: true},
	// output "probabilities" stores the model's softmax outputs over its
	// `classes` source classes instead of the pooled features.
	"output":  &hcldec.AttrSpec{Name: "output", Type: cty.String},
	"classes": &hcldec.AttrSpec{Name: "classes", Type: cty.Number},
	// batch_size: the torch runtime's batches (runtime, precision and
	// python: torchrt.AddSpec).
	"batch_size": &hcldec.AttrSpec{Name: "batch_size", Type: cty.Number},
})

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType is the value other blocks see: path is an example store, so
// a benchmark's dataset can be it.
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"path": cty.String, "dim": cty.Number, "splits": cty.Map(cty.Number), "task": cty.String,
	})
}

// Node is a decoded features block.
type Node struct {
	enc        train.EncoderSpec
	weights    specs.Weights
	preprocess *imageops.Preprocess
	dataset    string
	// classes > 0: store the source head's probabilities over this many
	// classes, not the features.
	classes int
	// rt are the runtime attributes; batch the torch runtime's batch size.
	rt    torchrt.Options
	batch int
	// batchBytes bounds one batch of preprocessed images on the Go
	// runtime (0: defaultBatchBytes; tests make it small).
	batchBytes int
}

// CheckPartial checks the references' kinds before their values exist.
func (Kind) CheckPartial(v cty.Value, decl nodes.Decl) hcl.Diagnostics {
	_, diags := readOutput(v, decl, nil)
	diags = append(diags, torchrt.CheckOptions(v, decl, torchrt.Precisions...)...)
	return append(specs.CheckTypes(v, decl, map[string]string{"encoder": "arch", "benchmark": "dataset"}), diags...)
}

// readOutput reads output and classes: the number of source classes when
// the block stores probabilities, 0 for features.
func readOutput(v cty.Value, decl nodes.Decl, diags hcl.Diagnostics) (classes int, _ hcl.Diagnostics) {
	a := &featureset.Attrs{V: v, Decl: decl}
	output := a.Str("output", "features", "features", "probabilities")
	classes = a.Int("classes", 0, 2)
	set := !v.GetAttr("classes").IsNull() // set, if perhaps not known yet
	switch {
	case output == "features" && set:
		a.Diags = append(a.Diags, decl.Errorf("classes", "Unused classes", "classes is the number of source classes of output = \"probabilities\"."))
	case output == "probabilities" && !set:
		a.Diags = append(a.Diags, decl.Errorf("output", "Missing classes", "output = \"probabilities\" needs classes, the number of classes the encoder's head was trained on."))
	}
	return classes, append(diags, a.Diags...)
}

// Decode reads the referenced encoder and benchmark.
func (Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	r := &specs.Reader{V: v, Decl: decl}
	n := &Node{}
	n.enc, n.weights = r.Encoder()
	n.preprocess = r.Preprocess()
	n.dataset = r.Str("benchmark", "dataset")
	n.classes, r.Diags = readOutput(v, decl, r.Diags)
	n.rt, n.batch, r.Diags = readRuntime(v, decl, r.Diags)
	if train.IsLibrary(n.enc.Arch) {
		n.rt.PreferTorchFor("the encoder is one only PyTorch builds")
	}
	r.NeedTorch(n.enc, n.rt.Torch())
	return n, r.Diags
}

// Downloads is the Hub model the encoder's weights name, if any.
func (n *Node) Downloads() []sources.Ref { return n.weights.Downloads() }

// Fingerprint hashes the weights file; the dataset path names its content.
func (n *Node) Fingerprint(ctx context.Context, w io.Writer) error {
	if err := n.rt.Fingerprint(w); err != nil {
		return err
	}
	return n.weights.Fingerprint(ctx, w)
}

// DefaultResources: one CPU.
func (n *Node) DefaultResources() nodes.Resources { return n.rt.Resources(1) }

// RuntimeChoice is the runtime the block runs on.
func (n *Node) RuntimeChoice() (string, *nodes.Acceleration) { return n.rt.Runtime, n.rt.Auto }

// pooled lists the tasks whose examples are single images or vectors, so
// one feature vector stands for each.
var pooled = []train.Task{train.Classification, train.MultiLabel, train.Regression, train.Relational, train.Retrieval, train.FewShot}

// Run computes the features of every split.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	meta, err := examplestore.ReadMeta(n.dataset)
	if err != nil {
		return cty.NilVal, fmt.Errorf("benchmark dataset: %w", err)
	}
	task, err := train.StoreTask(meta)
	if err != nil {
		return cty.NilVal, err
	}
	if !slices.Contains(pooled, task) {
		return cty.NilVal, fmt.Errorf("a %s benchmark has no per-example feature vector (features serves %v)", task, pooled)
	}
	shape := meta.Shape
	if n.preprocess != nil && len(shape) == 3 {
		shape = n.preprocess.OutShape(shape[0])
	}
	w, own, err := n.weights.LoadFor(env, n.enc, train.Classification, shape, max(n.classes, 1))
	if err != nil {
		return cty.NilVal, err
	}
	names := make([]string, 0, len(meta.Splits))
	for name := range meta.Splits {
		names = append(names, name)
	}
	slices.Sort(names)
	var onTorch map[string]torchFeatures
	if n.rt.Torch() {
		if onTorch, err = n.runTorch(ctx, env, meta, shape, w, own, names); err != nil {
			return cty.NilVal, err
		}
	}
	counts := map[string]cty.Value{}
	sizes := map[string]int{}
	dim := 0
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return cty.NilVal, err
		}
		env.Progress.Update(int64(i), int64(len(names)), "splits")
		var t *torchFeatures
		if n.rt.Torch() {
			f := onTorch[name]
			t = &f
		}
		f, count, err := n.writeSplit(env, w, meta, task, shape, name, t)
		if err != nil {
			return cty.NilVal, fmt.Errorf("split %s: %w", name, err)
		}
		dim = f
		counts[name] = cty.NumberIntVal(int64(count))
		sizes[name] = count
		env.Log.Info().Str("split", name).Int("examples", count).Int("dim", f).Msg(map[bool]string{false: "features", true: "probabilities"}[n.classes > 0])
	}
	out := *meta
	out.Format, out.Shape, out.DType, out.Features = "features", []int{dim}, string(safetensors.F32), nil
	out.Normalize = examplestore.Normalization{Scale: 1, Mean: make([]float64, dim), Std: make([]float64, dim)}
	for i := range out.Normalize.Std {
		out.Normalize.Std[i] = 1
	}
	if len(sizes) == 0 {
		return cty.NilVal, fmt.Errorf("benchmark dataset %s has no splits", n.dataset)
	}
	if err := examplestore.WriteMeta(env.OutDir, &out, sizes); err != nil {
		return cty.NilVal, err
	}
	return cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal(env.OutDir), "dim": cty.NumberIntVal(int64(dim)),
		"splits": cty.MapVal(counts), "task": cty.StringVal(meta.Task),
	}), nil
}

// defaultBatchBytes bounds one batch of a split's preprocessed images on
// the Go runtime: the split is read from its memory-mapped file and its
// features written a batch at a time, so memory does not grow with the
// split.
const defaultBatchBytes = 64 << 20

// writeSplit writes the features of one split (computed here a batch at
// a time, or those the torch runtime returned, t) with the split's
// targets, and returns their width and the number of examples.
func (n *Node) writeSplit(env *nodes.Env, w train.Weights, meta *examplestore.Meta, task train.Task, shape []int, name string, t *torchFeatures) (int, int, error) {
	src, unmap, err := examplestore.MapSplit(n.dataset, name)
	if err != nil {
		return 0, 0, err
	}
	defer unmap()
	count := src.Len()
	out := &featureSplit{dir: env.OutDir, name: name, src: src, dim: -1}
	ok := false
	defer func() {
		if !ok && out.w != nil {
			out.w.Abort()
		}
	}()
	if t != nil {
		if rows := len(t.x) / max(t.dim, 1); rows != count {
			return 0, 0, fmt.Errorf("%d rows of features for %d examples", rows, count)
		}
		if err := out.put(0, t.x, t.dim); err != nil {
			return 0, 0, err
		}
	} else if err := n.computeSplit(env, w, meta, task, shape, out); err != nil {
		return 0, 0, err
	}
	if out.w == nil { // no examples: an empty split of width 0
		if err := out.start(0); err != nil {
			return 0, 0, err
		}
	}
	if err := out.w.Close(); err != nil {
		return 0, 0, err
	}
	ok = true
	return out.dim, count, nil
}

// computeSplit computes the split's features here, a batch of about
// batchBytes of input at a time (whole groups), into out.
func (n *Node) computeSplit(env *nodes.Env, w train.Weights, meta *examplestore.Meta, task train.Task, shape []int, out *featureSplit) error {
	size := 4
	for _, d := range shape {
		size *= d
	}
	x := train.NewFeatureExtractor(n.enc, w)
	defer x.Close()
	pm := train.NewProbabilityModel(n.enc, w, max(n.classes, 1))
	defer pm.Close()
	group := max(meta.Group, 1)
	batch := max(group, cmp.Or(n.batchBytes, defaultBatchBytes)/max(size, 1)/group*group)
	count := out.src.Len()
	for first := 0; first < count; first += batch {
		k := min(batch, count-first)
		part := out.src.Slice(first, k)
		mapped := part.X.Data
		// A JPEG store's batch is decoded here (its X is then the
		// process's memory, not the map).
		part, err := part.Decoded(meta.Shape)
		if err != nil {
			return fmt.Errorf("split %s: %w", out.name, err)
		}
		d, _, err := train.SplitDataFor(part, out.name, meta, task, n.preprocess)
		// The batch's mapped pages leave the process's resident
		// memory: it holds a batch, not the split it has read.
		safetensors.Release(mapped)
		if err != nil {
			return err
		}
		feats, f, err := n.compute(x, pm, d)
		if err != nil {
			return err
		}
		if len(feats)/max(f, 1) != k {
			return fmt.Errorf("%d rows of features for %d examples", len(feats)/max(f, 1), k)
		}
		if err := out.put(first, feats, f); err != nil {
			return err
		}
		env.Progress.Update(int64(first+k), int64(count), "features of the "+out.name+" split")
	}
	return nil
}

// featureSplit writes one split of the feature store: created at the
// first rows, when their width is known, with the split's index and
// targets copied from its source.
type featureSplit struct {
	dir, name string
	src       *examplestore.Split
	dim       int // -1 until the first rows
	w         *examplestore.SplitWriter
}

// start creates the split with features of width f.
func (s *featureSplit) start(f int) error {
	s.dim = f
	src := s.src
	ySpec := safetensors.Spec{DType: src.Y.DType, Shape: src.Y.Shape[1:]}
	qLen := 0
	if src.Q.Data != nil {
		qLen = src.Q.Shape[1]
	}
	count := src.Len()
	var err error
	if s.w, err = examplestore.CreateSplit(s.dir, s.name, count, safetensors.Spec{DType: safetensors.F32, Shape: []int{f}}, ySpec, qLen); err != nil {
		return err
	}
	if err := s.w.Write("index", 0, safetensors.I64Tensor("index", []int{count}, src.Index).Data); err != nil {
		return err
	}
	if err := s.w.Write("y", 0, src.Y.Data); err != nil {
		return err
	}
	if qLen > 0 {
		return s.w.Write("q", 0, src.Q.Data)
	}
	return nil
}

// put writes rows of features of width f from row first on.
func (s *featureSplit) put(first int, feats []float32, f int) error {
	if s.dim < 0 {
		if err := s.start(f); err != nil {
			return err
		}
	} else if f != s.dim {
		return fmt.Errorf("features of width %d after %d (internal error)", f, s.dim)
	}
	rows := len(feats) / max(f, 1)
	if count := s.src.Len(); first+rows > count || (f > 0 && len(feats) != rows*f) {
		return fmt.Errorf("%d values of features of width %d at row %d for %d examples", len(feats), f, first, count)
	}
	return s.w.Write("x", first, safetensors.F32Tensor("x", []int{rows, f}, feats).Data)
}

// compute returns the pooled features, or the head's probabilities, of
// d's examples and their width; x and pm keep the built encoder or model
// from one batch to the next.
func (n *Node) compute(x *train.FeatureExtractor, pm *train.ProbabilityModel, d *train.Data) ([]float32, int, error) {
	if n.classes > 0 {
		p, err := pm.Probabilities(d)
		return p, n.classes, err
	}
	return x.Features(d)
}
