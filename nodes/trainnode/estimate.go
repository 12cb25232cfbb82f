package trainnode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gatepipe/gatepipe/internal/imageops"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/train"
)

// DecodesWaiting: plan decodes a waiting train block for its runtime and
// time.
func (Kind) DecodesWaiting() bool { return true }

// EstimateWork counts the examples a run puts through its model (the
// recipe's training steps, every validation of the val split, the kept
// ensemble on the test split; every seed) and says how to time them here.
func (n *Node) EstimateWork(data nodes.StoreEstimate) nodes.Work {
	w := estimateWork(n.enc, n.task, n.recipe, len(n.seeds), n.preprocess, n.rt, data)
	if n.card != nil && w.Measure != nil && n.rt.Torch() {
		// The torch worker times GATE's adapter of the image families with
		// the encoder (timing.py TIMED_ADAPTERS): the card is in the key.
		card, _ := json.Marshal(n.card)
		w.Key += fmt.Sprintf(" task %s protocol %s", n.task, card)
		enc, shape, batch := n.enc, timedShape(data, n.preprocess), train.StepExamples(n.task, n.enc.Head, n.recipe.BatchSize)
		rt, task, c := n.rt, string(n.task), n.card
		jpeg, _ := torchrt.DecodeTiming(data)
		frames := 1 // a clip's: GATE's video adapters are timed on whole clips
		if m := modelShape(data.Shape, n.preprocess); len(m) == 4 {
			frames = m[0]
			w.Key += fmt.Sprintf(" frames %d", frames)
		}
		w.Measure = func(ctx context.Context, env *nodes.Env) (nodes.Rate, error) {
			return rt.Time(ctx, env, map[string]any{"encoder": enc, "shape": shape, "batch": batch, "task": task, "protocol": c, "jpeg": jpeg, "frames": frames})
		}
	}
	return w
}

// timedShape is the shape of one image the model takes (a clip's frame).
func timedShape(data nodes.StoreEstimate, pre *imageops.Preprocess) []int {
	shape := modelShape(data.Shape, pre)
	if len(shape) == 4 {
		shape = shape[1:]
	}
	return shape
}

// estimateWork is EstimateWork on the node's parts.
func estimateWork(enc train.EncoderSpec, task train.Task, rec train.Recipe, seeds int, pre *imageops.Preprocess, rt torchrt.Options, data nodes.StoreEstimate) nodes.Work {
	runtime := rt.Runtime
	w := nodes.Work{Runs: max(1, seeds)}
	w.Train = int64(rec.Iterations) * int64(train.StepExamples(task, enc.Head, rec.BatchSize))
	shape := modelShape(data.Shape, pre)
	frames := int64(1)
	if len(shape) == 4 { // clips: each frame goes through the encoder
		frames, shape = int64(shape[0]), shape[1:]
	}
	evalBatch := 1 // the torch runtime's last batch holds what is left
	if runtime == "go" {
		evalBatch = train.EvalBatch(shape)
	}
	var partial []string
	if val, how := splitSize(data, "val"); how != "" {
		w.Eval += int64(train.Validations(rec)) * train.EvalExamples(task, enc.Head, val*frames, 1, evalBatch)
		w.Passes += int64(train.Validations(rec))
		partial = appendNote(partial, how, "val")
	} else {
		partial = append(partial, "the validation passes (the val split's size is unknown until its source is read)")
	}
	if test, how := splitSize(data, "test"); how != "" {
		w.Eval += train.EvalExamples(task, enc.Head, test*frames, max(1, rec.TopK), evalBatch)
		w.Passes += int64(max(1, rec.TopK))
		partial = appendNote(partial, how, "test")
	} else {
		partial = append(partial, "the test pass (the test split's size is unknown until its source is read)")
	}
	w.Train *= frames
	w.Partial = strings.Join(partial, "; ")
	if len(shape) != 3 {
		w.Partial = strings.TrimPrefix(w.Partial+"; the example shape is unknown until the source is read", "; ")
		return w
	}
	spec, _ := json.Marshal(enc)
	batch := train.StepExamples(task, enc.Head, rec.BatchSize)
	w.Key = fmt.Sprintf("train %s %s %v batch %d precision %s", runtime, spec, shape, batch, rt.Precision)
	w.Label = nodes.WorkLabel(enc.Arch, "train", runtime, shape)
	switch runtime {
	case "go":
		w.Measure = func(ctx context.Context, env *nodes.Env) (nodes.Rate, error) {
			t, err := train.MeasureTiming(ctx, enc, shape, batch, env.Devices.CPUs)
			return nodes.Rate{Train: train.Duration(t.Train), Eval: train.Duration(t.Eval), Pass: train.Duration(t.Pass), Fixed: train.Duration(t.Fixed)}, err
		}
	case "torch":
		w.Passes = 0 // a torch pass costs its examples only
		jpeg, key := torchrt.DecodeTiming(data)
		w.Key += key
		w.Measure = func(ctx context.Context, env *nodes.Env) (nodes.Rate, error) {
			return rt.Time(ctx, env, map[string]any{"encoder": enc, "shape": shape, "batch": batch, "jpeg": jpeg})
		}
	}
	return w
}

// splitSize is a split's size and how it is known: "" when it is not,
// "known", or "at most" when only its cap (max_val, max_test) is.
func splitSize(data nodes.StoreEstimate, split string) (int64, string) {
	if n, ok := data.Splits[split]; ok {
		return n, "known"
	}
	if n, ok := data.SplitCaps[split]; ok {
		return n, "at most"
	}
	return 0, ""
}

func appendNote(notes []string, how, split string) []string {
	if how == "at most" {
		return append(notes, "the "+split+" split counted at its cap")
	}
	return notes
}

// modelShape is the shape of an example as the model takes it: the
// store's, at the evaluation transform's size when the encoder has one.
func modelShape(stored []int, pre *imageops.Preprocess) []int {
	if len(stored) < 3 {
		return stored
	}
	shape := append([]int(nil), stored...)
	if pre != nil && pre.Size[0] > 0 && pre.Size[1] > 0 {
		shape[len(shape)-2], shape[len(shape)-1] = pre.Size[0], pre.Size[1]
	}
	if pre != nil && pre.Channels > 0 {
		shape[len(shape)-3] = pre.Channels
	}
	return shape
}
