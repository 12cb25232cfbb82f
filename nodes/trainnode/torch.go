package trainnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/train"
)

// loadTargets reads the benchmark's splits' targets only (the torch
// runtime reads the examples itself), with the shape the encoder sees.
func (n *Node) loadTargets(meta *examplestore.Meta) (*loaded, error) {
	d := &loaded{task: n.task, vocab: meta.Vocab}
	shape := meta.Shape
	switch {
	case n.preprocess != nil && len(shape) == 3:
		shape = n.preprocess.OutShape(shape[0])
	case n.preprocess != nil && len(shape) == 4: // each frame of a clip
		shape = append([]int{shape[0]}, n.preprocess.OutShape(shape[1])...)
	}
	for i, name := range []string{"train", "val", "test"} {
		var err error
		if d.splits[i], d.counts[i], d.outputs, err = train.LoadTargetsFor(n.dataset, name, meta, n.task, n.preprocess); err != nil {
			return nil, err
		}
		d.splits[i].Shape = shape
	}
	return d, nil
}

// fitOnTorch trains on the torch runtime: gatepipe writes the initial
// weights (init where it names a tensor, else the recipe's seed's
// initialisation), every iteration's batch (or episode) and the
// evaluation episodes; the worker (job train) trains and writes the kept
// parameter sets and the top-k ensemble's test predictions, whose metrics
// gatepipe computes as for its own runtime. The worker's log.jsonl is the
// run's.
//
// A timm or torchvision encoder (train.IsLibrary) is the exception unless
// it has a twin (train.DrawnSpec): torch initialises the model from the recipe's
// seed, and own, its weights in the library's names, loads over it where
// given.
func (n *Node) fitOnTorch(ctx context.Context, env *nodes.Env, d *loaded, recipe train.Recipe, init train.Weights, own string) (*train.Result, error) {
	tr, val, test := d.splits[0], d.splits[1], d.splits[2]
	enc := n.enc.SizedBy(tr)
	scratch := filepath.Join(env.OutDir, ".torch")
	defer os.RemoveAll(scratch)
	work := filepath.Join(scratch, "out")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	weights := ""
	if drawn, ok := train.DrawnSpec(enc, own != ""); ok {
		weights = filepath.Join(scratch, "init.safetensors")
		var err error
		if n.card != nil { // the worker draws GATE's adapter itself
			err = train.WriteEncoderWeights(weights, drawn, frameShape(n.task, tr.Shape), init, recipe.Seed)
		} else {
			err = train.WriteWeights(weights, drawn, n.task, tr.Shape, d.outputs, init, recipe.Seed)
		}
		if err != nil {
			return nil, err
		}
	}
	var ts []safetensors.Tensor
	var evalShots []int
	if n.gateEpisodes() { // GATE's variable episodes (gateepisodes.go)
		gate, err := n.gateEpisodeDraws(tr, val, test, recipe.Iterations, recipe.Seed, work)
		if err != nil {
			return nil, err
		}
		ts = append(ts, gate...)
	} else if n.task == train.FewShot {
		eps, err := train.TrainEpisodes(tr, enc.Head, recipe.Iterations, recipe.Seed)
		if err != nil {
			return nil, fmt.Errorf("training split: %w", err)
		}
		ts = append(ts, episodeTensor("batches", eps))
		evalShots = train.EvalShots(enc.Head)
		for _, split := range []struct {
			name string
			d    *train.Data
		}{{"val", val}, {"test", test}} {
			for _, k := range evalShots {
				eps, err := train.EvalEpisodes(split.d, enc.Head, k)
				if err != nil {
					return nil, fmt.Errorf("%s split: %w", split.name, err)
				}
				ts = append(ts, episodeTensor(fmt.Sprintf("%s_episodes_%d", split.name, k), eps))
			}
		}
	} else {
		b := max(recipe.BatchSize, 1)
		ts = append(ts, safetensors.I32Tensor("batches", []int{recipe.Iterations, b}, train.DrawBatches(d.counts[0], b, recipe.Iterations, recipe.Seed)))
	}
	text, err := n.textTower(env, d)
	if err != nil {
		return nil, err
	}
	ts = append(ts, text.ids...)
	draws := filepath.Join(scratch, "draws.safetensors")
	if err := safetensors.WriteFile(draws, ts, nil); err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"job": "train", "task": string(n.task), "encoder": enc, "weights": weights, "store": n.dataset, "preprocess": n.preprocess,
		"outputs": d.outputs, "qlen": tr.QLen, "vocab": tr.Vocab, "recipe": recipe, "checkpoint_every": n.checkpointEvery,
		"draws": draws, "eval_shots": evalShots, "precision": n.rt.Precision, "work": work, "library_weights": own,
		"protocol": n.card, "text": text.cfg,
	}
	if n.gateEpisodes() {
		cfg["episodes"] = gateLayout
	}
	if err := torchrt.Run(ctx, env, env.OutDir, n.rt.Job(cfg)); err != nil {
		return nil, err
	}
	for _, f := range []string{"experiment.json", torchrt.WorkerLog} {
		os.Remove(filepath.Join(env.OutDir, f)) // the run's own files stay: log.jsonl
	}
	return readTorchResult(work, n.task, enc.Head, test, d.outputs)
}

// frameShape is the shape of one image the encoder sees: a clip's frame.
func frameShape(task train.Task, shape []int) []int {
	if (task == train.Video || task == train.VideoRegression) && len(shape) == 4 {
		return shape[1:]
	}
	return shape
}

// readTorchResult reads the worker's kept sets and test predictions.
func readTorchResult(work string, task train.Task, h train.HeadSpec, test *train.Data, outputs int) (*train.Result, error) {
	var summary struct {
		ImagesPerSec float64 `json:"images_per_sec"`
		Kept         []struct {
			Iteration int     `json:"iteration"`
			ValScore  float64 `json:"val_score"`
		} `json:"kept"`
	}
	data, err := os.ReadFile(filepath.Join(work, "result.json"))
	if err == nil {
		err = json.Unmarshal(data, &summary)
	}
	if err != nil {
		return nil, fmt.Errorf("torch runtime output: %w", err)
	}
	res := &train.Result{ImagesPerSec: summary.ImagesPerSec}
	for i, k := range summary.Kept {
		f, err := safetensors.ReadFile(filepath.Join(work, "kept_"+strconv.Itoa(i)+".safetensors"))
		if err != nil {
			return nil, fmt.Errorf("torch runtime output: %w", err)
		}
		c := train.Checkpoint{Iteration: k.Iteration, ValScore: k.ValScore, Values: map[string][]float32{}, Shapes: map[string][]int{}}
		for name, t := range f.Tensors {
			c.Values[name], c.Shapes[name] = t.Float32s(), t.Shape
		}
		res.Checkpoints = append(res.Checkpoints, c)
	}
	if task == train.Segmentation {
		if res.Metrics, err = segmentationMetricsFrom(filepath.Join(work, "pred.safetensors"), test, outputs); err != nil {
			return nil, fmt.Errorf("torch runtime output: %w", err)
		}
		return res, nil
	}
	f, err := safetensors.ReadFile(filepath.Join(work, "pred.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("torch runtime output: %w", err)
	}
	rows := func(name string) ([][]float32, error) {
		t := f.Tensors[name]
		if t == nil || t.DType != safetensors.F32 || len(t.Shape) < 2 {
			return nil, fmt.Errorf("torch runtime output pred.safetensors: no F32 tensor %s", name)
		}
		v, w := t.Float32s(), t.NumElements()/t.Shape[0]
		out := make([][]float32, t.Shape[0])
		for i := range out {
			out[i] = v[i*w : (i+1)*w]
		}
		return out, nil
	}
	if task == train.FewShot && gateEpisodesDrawn(work) {
		if res.Metrics, err = gateEpisodeMetrics(work, f); err != nil {
			return nil, fmt.Errorf("torch runtime output: %w", err)
		}
		return res, nil
	}
	if task == train.FewShot {
		var probs [][][]float32
		for _, k := range train.EvalShots(h) {
			p, err := rows("pred_" + strconv.Itoa(k))
			if err != nil {
				return nil, err
			}
			probs = append(probs, p)
		}
		res.Metrics = train.EpisodeMetricsOf(h, probs)
		return res, nil
	}
	pred, err := rows("pred")
	if err != nil {
		return nil, err
	}
	if res.Metrics, err = train.MetricsOf(task, test, pred, outputs); err != nil {
		return nil, fmt.Errorf("torch runtime output: %w", err)
	}
	return res, nil
}

// episodeTensor lays episodes (each of the same length) out as one I32
// tensor [episodes, examples].
func episodeTensor(name string, eps [][]int) safetensors.Tensor {
	var flat []int32
	for _, e := range eps {
		for _, k := range e {
			flat = append(flat, int32(k))
		}
	}
	width := 0
	if len(eps) > 0 {
		width = len(eps[0])
	}
	return safetensors.I32Tensor(name, []int{len(eps), width}, flat)
}

// segmentationMetricsFrom scores the worker's per-pixel predictions
// (pred.safetensors: I32 "best" and F32 "ptrue", 8 bytes a pixel, 800 MB
// for ADE20K's test split) from a mapping of the file, one example at a
// time, each example's pages released once it is scored: the process
// holds one example's predictions, not the split's.
func segmentationMetricsFrom(path string, test *train.Data, outputs int) (map[string]float64, error) {
	f, unmap, err := safetensors.MapFile(path)
	if err != nil {
		return nil, err
	}
	defer unmap()
	best, ptrue := f.Tensors["best"], f.Tensors["ptrue"]
	if best == nil || best.DType != safetensors.I32 || ptrue == nil || ptrue.DType != safetensors.F32 {
		return nil, fmt.Errorf("pred.safetensors: no I32 best and F32 ptrue")
	}
	s := train.NewSegmentationScores(test, outputs)
	pixels := s.Pixels()
	n := s.Examples()
	if best.NumElements() != n*pixels || ptrue.NumElements() != n*pixels {
		return nil, fmt.Errorf("pred.safetensors: %d predicted pixels and %d probabilities for %d examples of %d pixels",
			best.NumElements(), ptrue.NumElements(), n, pixels)
	}
	// psum [n, outputs]: each example's predicted probabilities summed
	// per class, for the soft Dice score (older workers wrote none).
	var sums []float32
	if ps := f.Tensors["psum"]; ps != nil {
		if ps.DType != safetensors.F32 || ps.NumElements() != n*outputs {
			return nil, fmt.Errorf("pred.safetensors: psum holds %d values for %d examples of %d classes", ps.NumElements(), n, outputs)
		}
		sums = ps.Float32s()
	}
	for k := range n {
		// One example's rows of each tensor, decoded, then let go.
		b := safetensors.Tensor{DType: safetensors.I32, Shape: []int{pixels}, Data: best.Data[4*k*pixels : 4*(k+1)*pixels]}
		p := safetensors.Tensor{DType: safetensors.F32, Shape: []int{pixels}, Data: ptrue.Data[4*k*pixels : 4*(k+1)*pixels]}
		var psum []float64
		if sums != nil {
			psum = make([]float64, outputs)
			for c, v := range sums[k*outputs : (k+1)*outputs] {
				psum[c] = float64(v)
			}
		}
		err := s.AddWithSums(b.Int32s(), p.Float32s(), psum)
		safetensors.Release(b.Data)
		safetensors.Release(p.Data)
		if err != nil {
			return nil, err
		}
	}
	return s.Metrics()
}
