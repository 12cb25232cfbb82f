package features

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/train"
)

// timingBatch is the batch the Go runtime's forward pass is timed with.
const timingBatch = 8

// DecodesWaiting: plan decodes a waiting features block for its runtime and
// time.
func (Kind) DecodesWaiting() bool { return true }

// EstimateWork counts the examples the block puts through the encoder
// (every split once) and says how to time them here.
func (n *Node) EstimateWork(data nodes.StoreEstimate) nodes.Work {
	w := nodes.Work{Runs: 1}
	var unknown []string
	if len(data.Splits) > 0 {
		for _, c := range data.Splits {
			w.Eval += c
		}
	} else {
		for _, name := range []string{"train", "val", "test"} {
			if c := data.SplitCaps[name]; c > 0 {
				w.Eval += c
			} else {
				unknown = append(unknown, name)
			}
		}
	}
	if len(unknown) > 0 {
		w.Partial = "the " + strings.Join(unknown, ", ") + " split(s), whose size is unknown until the source is read"
	}
	shape := data.Shape
	if n.preprocess != nil && len(shape) == 3 {
		shape = n.preprocess.OutShape(shape[0])
	}
	if len(shape) != 3 {
		w.Partial = strings.TrimPrefix(w.Partial+"; the example shape is unknown until the source is read", "; ")
		return w
	}
	spec, _ := json.Marshal(n.enc)
	batch := timingBatch
	if n.rt.Torch() {
		batch = n.batch
	}
	w.Key = fmt.Sprintf("features %s %s %v batch %d precision %s", n.rt.Runtime, spec, shape, batch, n.rt.Precision)
	w.Label = nodes.WorkLabel(n.enc.Arch, "features", n.rt.Runtime, shape)
	enc := n.enc
	if n.rt.Torch() {
		jpeg, key := torchrt.DecodeTiming(data)
		w.Key += key
		w.Measure = func(ctx context.Context, env *nodes.Env) (nodes.Rate, error) {
			return n.rt.Time(ctx, env, map[string]any{"encoder": enc, "shape": shape, "batch": 2, "eval_batch": batch, "jpeg": jpeg})
		}
	} else {
		w.Measure = func(ctx context.Context, env *nodes.Env) (nodes.Rate, error) {
			t, err := train.MeasureFeatures(ctx, enc, shape, timingBatch, env.Devices.CPUs)
			return nodes.Rate{Eval: train.Duration(t.Eval), Fixed: train.Duration(t.Fixed)}, err
		}
	}
	return w
}
