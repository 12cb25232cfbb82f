// Package features implements the `features` block: an encoder's pooled
// features for every split of a benchmark, computed once in evaluation
// mode and written as an example store of vectors. Heads trained on it
// (an mlp encoder with no hidden layers is a linear probe) reuse the cached
// artifact instead of running the encoder again.
package features

import (
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
}

// CheckPartial checks the references' kinds before their values exist.
func (Kind) CheckPartial(v cty.Value, decl nodes.Decl) hcl.Diagnostics {
	_, diags := readOutput(v, decl, nil)
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
func (n *Node) DefaultResources() nodes.Resources { return nodes.Resources{CPUs: 1} }

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
	w, err := n.weights.Load(env, n.enc, train.Classification, shape, max(n.classes, 1))
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
		if onTorch, err = n.runTorch(ctx, env, meta, shape, w, names); err != nil {
			return cty.NilVal, err
		}
	}
	splits := map[string]*examplestore.Split{}
	counts := map[string]cty.Value{}
	dim := 0
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return cty.NilVal, err
		}
		var feats []float32
		f := 0
		if n.rt.Torch() {
			t := onTorch[name]
			feats, f = t.x, t.dim
		} else {
			// The split's images are decoded and dropped before its
			// stored examples are read for their targets, so the two are
			// never held together.
			env.Progress.Update(int64(i), int64(len(names)), "splits")
			d, _, err := train.LoadSplitFor(n.dataset, name, meta, task, n.preprocess)
			if err != nil {
				return cty.NilVal, err
			}
			if feats, f, err = n.compute(w, d); err != nil {
				return cty.NilVal, fmt.Errorf("split %s: %w", name, err)
			}
		}
		src, err := examplestore.ReadSplit(n.dataset, name)
		if err != nil {
			return cty.NilVal, err
		}
		if rows := len(feats) / max(f, 1); rows != src.Len() {
			return cty.NilVal, fmt.Errorf("split %s: %d rows of features for %d examples", name, rows, src.Len())
		}
		dim = f
		splits[name] = &examplestore.Split{X: safetensors.F32Tensor("x", []int{src.Len(), f}, feats), Y: src.Y, Index: src.Index, Q: src.Q}
		counts[name] = cty.NumberIntVal(int64(src.Len()))
		env.Log.Info().Str("split", name).Int("examples", src.Len()).Int("dim", f).Msg(map[bool]string{false: "features", true: "probabilities"}[n.classes > 0])
	}
	out := *meta
	out.Format, out.Shape, out.DType, out.Features = "features", []int{dim}, string(safetensors.F32), nil
	out.Normalize = examplestore.Normalization{Scale: 1, Mean: make([]float64, dim), Std: make([]float64, dim)}
	for i := range out.Normalize.Std {
		out.Normalize.Std[i] = 1
	}
	if len(splits) == 0 {
		return cty.NilVal, fmt.Errorf("benchmark dataset %s has no splits", n.dataset)
	}
	if err := examplestore.Write(env.OutDir, &out, splits); err != nil {
		return cty.NilVal, err
	}
	return cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal(env.OutDir), "dim": cty.NumberIntVal(int64(dim)),
		"splits": cty.MapVal(counts), "task": cty.StringVal(meta.Task),
	}), nil
}

// compute returns the pooled features, or the head's probabilities, of
// d's examples and their width.
func (n *Node) compute(w train.Weights, d *train.Data) ([]float32, int, error) {
	if n.classes > 0 {
		p, err := train.Probabilities(n.enc, w, d, n.classes)
		return p, n.classes, err
	}
	return train.Features(n.enc, w, d)
}
