package probenode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/featureset"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/probe"
)

// tuneOnTorch runs every job's search in one call of the torch runtime's
// worker (job "probe"). The heads' random draws (initial weights, example
// orders) are Go's, handed over in a safetensors file, so the worker trains
// the heads the Go runtime would; it trains each round of the search's
// (learning rate, weight decay) pairs as one batch of heads.
func (n *Node) tuneOnTorch(ctx context.Context, env *nodes.Env, jobs []tuneJob, train *featureset.Split, classes int, tune probe.TuneConfig) error {
	dir := filepath.Join(env.OutDir, ".torch")
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var ts []safetensors.Tensor
	runs := make([]map[string]any, len(jobs))
	for r, j := range jobs {
		trial := probe.NewDraws(train.D, classes, len(j.train), tune.Epochs, uint64(j.seed), probe.TrialStream)
		final := probe.NewDraws(train.D, classes, len(j.train)+len(j.val), tune.FinalEpochs, uint64(j.seed), probe.FinalStream)
		p := fmt.Sprintf("%d.", r)
		ts = append(ts,
			safetensors.I64Tensor(p+"train", []int{len(j.train)}, int64s(j.train)), safetensors.I64Tensor(p+"val", []int{len(j.val)}, int64s(j.val)),
			safetensors.F64Tensor(p+"trial_w", []int{classes, train.D}, trial.W), safetensors.F64Tensor(p+"trial_b", []int{classes}, trial.B),
			safetensors.I32Tensor(p+"trial_order", []int{len(trial.Order)}, trial.Order),
			safetensors.F64Tensor(p+"final_w", []int{classes, train.D}, final.W), safetensors.F64Tensor(p+"final_b", []int{classes}, final.B),
			safetensors.I32Tensor(p+"final_order", []int{len(final.Order)}, final.Order))
		runs[r] = map[string]any{"subset": j.subset, "seed": j.seed}
	}
	draws := filepath.Join(dir, "draws.safetensors")
	if err := safetensors.WriteFile(draws, ts, nil); err != nil {
		return err
	}
	work := filepath.Join(dir, "out")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	cfg := map[string]any{
		"job": "probe", "store": n.features, "train_split": n.trainSplit, "test_split": n.testSplit, "classes": classes,
		"precision": n.rt.Precision, "draws": draws, "runs": runs, "work": work,
		"tune": map[string]any{"lrs": tune.LRs, "wds": tune.WDs, "coarse": tune.Coarse, "epochs": tune.Epochs,
			"final_epochs": tune.FinalEpochs, "batch": tune.Batch, "metric": n.metric},
	}
	if err := torchrt.Run(ctx, env, dir, n.rt.Job(cfg)); err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(work, "probe.json"))
	if err != nil {
		return fmt.Errorf("torch runtime output: %w", err)
	}
	var tuned []*probe.Tuned
	if err := json.Unmarshal(data, &tuned); err != nil || len(tuned) != len(jobs) {
		return fmt.Errorf("torch runtime output probe.json: %d results for %d runs (%v)", len(tuned), len(jobs), err)
	}
	for i := range jobs {
		jobs[i].tuned = tuned[i]
	}
	return nil
}

// int64s widens indices for an I64 tensor.
func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}
