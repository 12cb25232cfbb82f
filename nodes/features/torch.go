package features

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
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

// readRuntime reads the runtime attributes and batch_size (an error on
// the Go runtime, which sizes its own batches).
func readRuntime(v cty.Value, decl nodes.Decl, diags hcl.Diagnostics) (torchrt.Options, int, hcl.Diagnostics) {
	a := &featureset.Attrs{V: v, Decl: decl}
	o := torchrt.ReadOptions(a, torchrt.Precisions...)
	batch := a.Int("batch_size", 64, 1)
	if !o.Torch() && o.Auto == nil && !v.GetAttr("batch_size").IsNull() {
		a.Diags = append(a.Diags, decl.Errorf("batch_size", "Unused batch_size", "batch_size applies to runtime = \"torch\"; this block runs on the %q runtime.", o.Runtime))
	}
	return o, batch, append(diags, a.Diags...)
}

// torchFeatures is one split's output of the torch runtime.
type torchFeatures struct {
	x         []float32
	rows, dim int
}

// runTorch computes every split's features (or probabilities) on the
// torch runtime: the weights gatepipe matched go to the worker in
// gatepipe's names, and it reads the store itself. A timm or torchvision
// encoder gets own, its weights in the library's names, instead.
func (n *Node) runTorch(ctx context.Context, env *nodes.Env, meta *examplestore.Meta, shape []int, w train.Weights, own string, splits []string) (map[string]torchFeatures, error) {
	dir := filepath.Join(env.OutDir, ".torch")
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	weights := ""
	if drawn, ok := train.DrawnSpec(n.enc, own != ""); ok {
		weights = filepath.Join(dir, "weights.safetensors")
		if err := train.WriteWeights(weights, drawn, train.Classification, shape, max(n.classes, 1), w, 0); err != nil {
			return nil, err
		}
	}
	work := filepath.Join(dir, "out")
	cfg := map[string]any{
		"job": "features", "encoder": n.enc, "weights": weights, "store": n.dataset, "splits": splits,
		"preprocess": n.preprocess, "classes": n.classes, "precision": n.rt.Precision, "batch_size": n.batch, "work": work,
		"library_weights": own,
	}
	if err := torchrt.Run(ctx, env, dir, n.rt.Job(cfg)); err != nil {
		return nil, err
	}
	var stats struct {
		Images  int     `json:"images"`
		Seconds float64 `json:"seconds"`
	}
	if data, err := os.ReadFile(filepath.Join(work, "stats.json")); err == nil && json.Unmarshal(data, &stats) == nil && stats.Seconds > 0 {
		env.Log.Info().Int("images", stats.Images).Float64("images_per_sec", math.Round(float64(stats.Images)/stats.Seconds)).Msg("torch runtime features")
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
