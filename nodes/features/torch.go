package features

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/featureset"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/train"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// torchOptions are a block's settings for the torch runtime.
type torchOptions struct {
	precision string
	batch     int
}

// readRuntime reads runtime, precision and batch_size: nil options for
// the Go runtime (where precision and batch_size are errors).
func readRuntime(v cty.Value, decl nodes.Decl, diags hcl.Diagnostics) (*torchOptions, hcl.Diagnostics) {
	a := &featureset.Attrs{V: v, Decl: decl}
	runtime := a.Str("runtime", torchrt.Go, torchrt.Runtimes...)
	o := &torchOptions{precision: a.Str("precision", "auto", torchrt.Precisions...), batch: a.Int("batch_size", 64, 1)}
	if runtime != torchrt.Torch {
		for _, name := range []string{"precision", "batch_size"} {
			if !v.GetAttr(name).IsNull() {
				a.Diags = append(a.Diags, decl.Errorf(name, "Unused "+name, "%s applies to runtime = \"torch\"; this block runs on the %q runtime.", name, runtime))
			}
		}
		o = nil
	}
	return o, append(diags, a.Diags...)
}

// torchFeatures is one split's output of the torch runtime.
type torchFeatures struct {
	x         []float32
	rows, dim int
}

// runTorch computes every split's features (or probabilities) on the
// torch runtime: the weights gatepipe matched go to the worker in
// gatepipe's names, and it reads the store itself.
func (n *Node) runTorch(ctx context.Context, env *nodes.Env, meta *examplestore.Meta, shape []int, w train.Weights, splits []string) (map[string]torchFeatures, error) {
	dir := filepath.Join(env.OutDir, ".torch")
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	weights := filepath.Join(dir, "weights.safetensors")
	if err := train.WriteWeights(weights, n.enc, train.Classification, shape, max(n.classes, 1), w, 0); err != nil {
		return nil, err
	}
	work := filepath.Join(dir, "out")
	cfg := map[string]any{
		"job": "features", "encoder": n.enc, "weights": weights, "store": n.dataset, "splits": splits,
		"preprocess": n.preprocess, "classes": n.classes, "precision": n.torch.precision, "batch_size": n.torch.batch, "work": work,
	}
	if err := torchrt.Run(ctx, env, dir, torchrt.Job{Config: cfg}); err != nil {
		return nil, err
	}
	out := map[string]torchFeatures{}
	for _, name := range splits {
		p := filepath.Join(work, name+".safetensors")
		f, err := safetensors.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("torch runtime output: %w", err)
		}
		x := f.Tensors["x"]
		if x == nil || x.DType != safetensors.F32 || len(x.Shape) != 2 {
			return nil, fmt.Errorf("torch runtime output %s: want an F32 tensor x [N, F]", p)
		}
		out[name] = torchFeatures{x: x.Float32s(), rows: x.Shape[0], dim: x.Shape[1]}
	}
	return out, nil
}
