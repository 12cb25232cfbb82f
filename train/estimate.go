package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"
)

// StepExamples is how many examples one training step puts through the
// model: the batch, or a few-shot episode's support and query examples.
func StepExamples(task Task, head HeadSpec, batch int) int {
	if task == FewShot {
		ways, shots, queries := head.episodeShape()
		return ways * (shots + queries)
	}
	return batch
}

// Validations is how many times a run of rec validates: every
// ValidateEvery iterations and after the last.
func Validations(rec Recipe) int {
	if rec.ValidateEvery <= 0 {
		return 1
	}
	n := rec.Iterations / rec.ValidateEvery
	if rec.Iterations%rec.ValidateEvery != 0 {
		n++
	}
	return n
}

// EvalExamples is how many examples evaluating a split of n examples with
// sets parameter sets (the kept ensemble) puts through the model: each
// example once a set, in whole batches of batch (the Go runtime runs a
// pass's last batch whole; 1 counts examples), or, for a few-shot head,
// the evaluation episodes' examples (1-shot and the head's shots) once a
// set.
func EvalExamples(task Task, head HeadSpec, n int64, sets, batch int) int64 {
	if task == FewShot {
		ways, shots, queries := head.episodeShape()
		per := int64(evalEpisodes * ways * (1 + queries))
		if shots != 1 {
			per += int64(evalEpisodes * ways * (shots + queries))
		}
		return per * int64(sets)
	}
	b := int64(max(batch, 1))
	return (n + b - 1) / b * b * int64(sets)
}

// Timing is how fast a model trains and evaluates on this machine:
// seconds per example through a training step and through the forward
// pass alone, seconds an evaluation pass costs whatever its size
// (building its graph), and a run's fixed seconds (building the model,
// its first step's warm-up, the test's set-up).
type Timing struct {
	Train, Eval, Pass, Fixed float64
}

// stepBudget bounds a timed training step's seconds: the batch the
// timing uses is the recipe's, or smaller where a step would take longer.
const stepBudget = 2.0

// MeasureTiming times enc with a classification head on random examples
// of shape (one image, [C H W]) on threads threads (GOMAXPROCS, which the
// Go runtime's products divide work by): a short training run in batches
// of batch (fewer where a step would pass stepBudget: per example, smaller
// batches run a little slower, so the estimate errs long), its steps' time
// per example and the rest of its time as the run's fixed cost; then two
// evaluation passes of different sizes, whose difference is the forward
// pass's time per example and whose rest is a pass's own cost. It takes
// about 20 s for a ResNet-50 at 224 px on one thread of the 2-core EPYC,
// and sets GOMAXPROCS for its duration.
func MeasureTiming(ctx context.Context, enc EncoderSpec, shape []int, batch, threads int) (Timing, error) {
	if len(shape) != 3 {
		return Timing{}, fmt.Errorf("timing: want an image shape [C H W], got %v", shape)
	}
	if threads > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	}
	const classes = 10
	trainRun := func(b, iterations int) (*Result, error) {
		rec := Recipe{LR: 1e-3, WeightDecay: 0.01, BatchSize: b, Iterations: iterations, ValidateEvery: iterations, TopK: 1,
			PlateauFactor: 0.5, PlateauPatience: 3, PlateauThreshold: 1e-4}
		small := timingImages(shape, b, classes, 2)
		res, err := Train(ctx, enc, nil, classes, rec, timingImages(shape, 4*b, classes, 1), small, small, nil, nil, Resume{})
		if err != nil {
			return nil, fmt.Errorf("timing: %w", err)
		}
		if res.ImagesPerSec <= 0 {
			return nil, fmt.Errorf("timing: no training step was timed")
		}
		return res, nil
	}
	b := min(max(batch, 1), 2)
	res, err := trainRun(b, 2)
	if err != nil {
		return Timing{}, err
	}
	if full := min(max(batch, 1), max(1, int(stepBudget*res.ImagesPerSec))); full > b {
		b = full
		if res, err = trainRun(b, 3); err != nil {
			return Timing{}, err
		}
	}
	iterations := 2
	if b > min(max(batch, 1), 2) {
		iterations = 3
	}
	t := Timing{Train: 1 / res.ImagesPerSec}
	if t.Eval, t.Pass, err = measureEval(ctx, enc, shape, classes); err != nil {
		return Timing{}, err
	}
	// One validation and one test pass of b examples (a batch each) ran too.
	eb := float64(max(b, EvalBatch(shape)))
	t.Fixed = max(0, res.Seconds-float64(iterations*b)*t.Train-2*(t.Pass+eb*t.Eval))
	return t, nil
}

// measureEval times the validation's code: building an evaluation pass
// (its graph, at the evaluation batch), then one batch twice (the second
// is the one timed: the first warms the code and the allocator). It
// returns seconds per example (a batch's time over its size: a pass runs
// whole batches, EvalExamples counts them so) and a pass's own seconds.
func measureEval(ctx context.Context, enc EncoderSpec, shape []int, classes int) (perExample, pass float64, _ error) {
	params, err := newParams(enc, Classification, shape, classes, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("timing: %w", err)
	}
	vals := map[string][]float32{}
	for _, p := range params {
		vals[p.name] = p.init
	}
	d := timingImages(shape, EvalBatch(shape), classes, 3)
	start := time.Now()
	r, err := newEvalRunner(enc, params, classes, d, vals)
	if err != nil {
		return 0, 0, fmt.Errorf("timing: %w", err)
	}
	defer r.close()
	built := time.Since(start).Seconds()
	var batch float64
	for i := range 2 {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		start = time.Now()
		if _, _, err := r.run(d, 0); err != nil {
			return 0, 0, fmt.Errorf("timing: %w", err)
		}
		if t := time.Since(start).Seconds(); i == 0 {
			built += t // counted as the pass's, less a batch's below
		} else {
			batch = t
		}
	}
	return batch / float64(d.Len()), max(0, built-batch), nil
}

// EvalBatch is how many examples of shape an evaluation pass runs at a
// time (a pass's last batch is run whole).
func EvalBatch(shape []int) int {
	return (&Data{Shape: shape}).evalBatch()
}

// timingImages is n random examples of shape with labels below classes.
func timingImages(shape []int, n, classes int, seed uint64) *Data {
	size := 1
	for _, s := range shape {
		size *= s
	}
	r := rand.New(rand.NewPCG(seed, 0x71))
	d := &Data{Shape: append([]int(nil), shape...), X: make([]float32, n*size), Y: make([]int64, n)}
	for i := range d.X {
		d.X[i] = float32(r.NormFloat64())
	}
	for i := range d.Y {
		d.Y[i] = int64(r.IntN(classes))
	}
	return d
}

// Duration converts seconds to a time.Duration.
func Duration(seconds float64) time.Duration { return time.Duration(seconds * float64(time.Second)) }

// MeasureFeatures times the encoder's forward pass as the features block
// runs it (FeatureExtractor, without a head) on random examples of shape
// in batches of batch on threads threads: seconds per example, and the
// fixed cost of its first batch beyond that.
func MeasureFeatures(ctx context.Context, enc EncoderSpec, shape []int, batch, threads int) (Timing, error) {
	if threads > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	}
	x := NewFeatureExtractor(enc, nil)
	defer x.Close()
	batch = max(batch, 1)
	d := timingImages(shape, batch, 10, 4)
	start := time.Now()
	if _, _, err := x.Features(d); err != nil { // builds the model
		return Timing{}, fmt.Errorf("timing: %w", err)
	}
	first := time.Since(start).Seconds()
	const batches = 2
	start = time.Now()
	for range batches {
		if err := ctx.Err(); err != nil {
			return Timing{}, err
		}
		if _, _, err := x.Features(d); err != nil {
			return Timing{}, fmt.Errorf("timing: %w", err)
		}
	}
	per := time.Since(start).Seconds() / float64(batches*batch)
	return Timing{Eval: per, Fixed: max(0, first-per*float64(batch))}, nil
}
