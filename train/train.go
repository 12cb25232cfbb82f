package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/train/cblas"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// trainSamplingStream is the PCG stream (with the recipe's seed) that
// draws the training batches' examples.
const trainSamplingStream = 0xba7c4

// blasOnce installs the fastest BLAS this build has (package cblas) the
// first time a model trains.
var blasOnce sync.Once

// Data is one split, normalised, with its targets.
type Data struct {
	X     []float32 // N * prod(Shape)
	Shape []int     // one example
	// Task is the head to train (default Classification).
	Task Task
	// Y holds class indices (classification); T the targets of the other
	// tasks, N * outputs.
	Y []int64
	T []float32
	// Q holds QLen token ids per example from a vocabulary of Vocab
	// (relational questions).
	Q     []int64
	QLen  int
	Vocab int
	// ClassNames names the classes (the store's classes; nil when it
	// has none): CLEVR's answers give its per-question-type accuracies.
	ClassNames []string
	// Group, above 1, says that consecutive runs of Group examples are
	// one test item whose images and captions are scored against each
	// other only (Winoground's two images and two captions).
	Group int
	// Source, when set, gives the inputs instead of X: a split read from
	// its store a batch at a time (OpenSplitFor).
	Source Inputs
}

func (d *Data) task() Task {
	if d.Task == "" {
		return Classification
	}
	return d.Task
}

// Len returns the number of examples.
func (d *Data) Len() int {
	if d.Source != nil {
		return d.Source.Len()
	}
	return len(d.X) / d.exampleSize()
}

// exampleSize is the number of input values of one example.
func (d *Data) exampleSize() int {
	size := 1
	for _, s := range d.Shape {
		size *= s
	}
	return size
}

// evalBatch sizes evaluation batches to about 200,000 input values (250
// Fashion-MNIST images, 38 three-frame clips), which bounds the
// activations' memory.
func (d *Data) evalBatch() int { return min(250, max(16, 200_000/d.exampleSize())) }

// Recipe is how to train.
type Recipe struct {
	LR            float64 `json:"lr"`
	WeightDecay   float64 `json:"weight_decay"`
	BatchSize     int     `json:"batch_size"`
	Iterations    int     `json:"iterations"`
	ValidateEvery int     `json:"validate_every"`
	TopK          int     `json:"top_k"`
	Seed          uint64  `json:"seed"`
	// Plateau scheduler on the validation loss (mode min).
	PlateauFactor    float64 `json:"plateau_factor"`
	PlateauPatience  int     `json:"plateau_patience"`
	PlateauThreshold float64 `json:"plateau_threshold"`
	// LinearProbe freezes the encoder (mode "linear_probe").
	LinearProbe bool `json:"linear_probe,omitempty"`
}

// The phases a training run reports its progress in: the iterations, a
// validation, and the test of the kept parameter sets.
const (
	PhaseTraining   = "training"
	PhaseValidating = "validating"
	PhaseTesting    = "testing"
)

// LogEntry is one line of the training log.
type LogEntry struct {
	Iteration    int                `json:"iteration"`
	Loss         float64            `json:"loss,omitempty"`
	LR           float64            `json:"lr"`
	ImagesPerSec float64            `json:"images_per_sec,omitempty"`
	Val          map[string]float64 `json:"val,omitempty"`
	GradNorms    map[string]float64 `json:"grad_norms,omitempty"`
	EnergyJ      *float64           `json:"energy_joules,omitempty"`
}

// Result is what training produced.
type Result struct {
	// Test metrics of the top-k ensemble.
	Metrics map[string]float64
	// Checkpoints are the top-k parameter sets, best first, with their
	// validation accuracy.
	Checkpoints []Checkpoint
	Seconds     float64
	// ImagesPerSec is the training throughput (validation and the first,
	// warm-up step excluded).
	ImagesPerSec float64
	// EnergyJ is the package energy used (RAPL), nil when unreadable.
	EnergyJ *float64
}

// Checkpoint is a kept parameter set.
type Checkpoint struct {
	Iteration int
	// ValScore is the validation number checkpoints are ranked by
	// (accuracy, macro AP, or minus the MAE).
	ValScore float64
	Values   map[string]float32s
	Shapes   map[string][]int
}

type float32s = []float32

// SizedBy sizes the relational and retrieval heads by d's questions or
// captions (their token count and vocabulary), as a model trained on d
// has them: weights for such a model are matched against the same sizes.
func (e EncoderSpec) SizedBy(d *Data) EncoderSpec {
	e.Head.QLen, e.Head.Vocab = d.QLen, d.Vocab
	return e
}

// Train fine-tunes enc (from init where it names a parameter, else from
// the seed's initialisation) with a classification head on train, validating on
// val and testing the top-k ensemble on test. log receives every log entry;
// progress the iteration count.
// resume saves the run's state as it asks and may start it from a saved
// one.
func Train(ctx context.Context, enc EncoderSpec, init Weights, classes int, rec Recipe, trainD, val, test *Data, log func(LogEntry), progress func(done, total int64, phase string), resume Resume) (*Result, error) {
	if progress == nil {
		progress = func(int64, int64, string) {}
	}
	blasOnce.Do(func() { cblas.Enable() })
	start := time.Now()
	enc = enc.SizedBy(trainD)
	params, err := newParams(enc, trainD.task(), trainD.Shape, classes, rec.Seed)
	if err != nil {
		return nil, err
	}
	for _, p := range params {
		if v, ok := init[p.name]; ok {
			if len(v) != len(p.init) {
				return nil, fmt.Errorf("initial weights %s: %d values, want %d", p.name, len(v), len(p.init))
			}
			p.init = append([]float32(nil), v...)
		}
	}
	b := rec.BatchSize
	task := trainD.task()
	var episodes [][]int
	ways, shots, queries := enc.Head.episodeShape()
	if task == FewShot {
		b = ways * (shots + queries)
		if episodes, err = trainD.episodes(rand.New(rand.NewPCG(rec.Seed, 0xe9)), rec.Iterations, ways, shots, queries); err != nil {
			return nil, fmt.Errorf("training split: %w", err)
		}
	}
	var std *standardizer
	if task.regresses() {
		std = newStandardizer(trainD, classes)
	}
	// A linear probe freezes the encoder: batch norms keep their running
	// statistics and only the adapter (head, stem) learns.
	m, err := build(enc, task, params, trainD.Shape, classes, b, nil, !rec.LinearProbe)
	if err != nil {
		return nil, err
	}
	learn := m.trainable(rec.LinearProbe)
	if len(learn) == 0 {
		return nil, fmt.Errorf("nothing to train: the %s head has no parameters and the encoder is frozen", task)
	}
	var nodes G.Nodes
	for _, p := range learn {
		nodes = append(nodes, p.node)
	}
	if _, err := G.Grad(m.loss, nodes...); err != nil {
		return nil, fmt.Errorf("gradients: %w", err)
	}
	vm := G.NewTapeMachine(m.g, G.BindDualValues(nodes...))
	defer vm.Close()
	opt := newAdamW(learn, rec)
	src := rand.NewPCG(rec.Seed, trainSamplingStream)
	rng := rand.New(src)
	xb := tensor.New(tensor.WithShape(append([]int{b}, trainD.Shape...)...), tensor.Of(tensor.Float32))
	yb, qb := newTargets(m), newQuestions(m)
	lr := rec.LR
	best, bad := math.Inf(1), 0
	var kept []Checkpoint
	energy := newRAPL()
	lastLog, seen := time.Now(), 0
	var stepTime time.Duration
	timed := 0 // steps in stepTime
	first := 1
	if from := resume.From; from != nil {
		if err := from.fits(m, opt, rec.Iterations); err != nil {
			if resume.Refused != nil {
				resume.Refused(err)
			}
		} else {
			if err := from.restore(m, opt, src); err != nil {
				return nil, err
			}
			lr, best, bad, kept, first = from.LR, from.Best, from.Bad, from.Kept, from.Iteration+1
			if resume.Resumed != nil {
				resume.Resumed(from.Iteration, rec.Iterations)
			}
		}
	}
	for it := first; it <= rec.Iterations; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		stepStart := time.Now()
		if task == FewShot {
			if err := fillEpisode(xb, yb, trainD, episodes[it-1], ways, queries); err != nil {
				return nil, err
			}
		} else {
			ks, err := fillBatch(xb, yb, trainD, rng, b, classes, std)
			if err != nil {
				return nil, err
			}
			trainD.fillQuestions(qb, ks)
		}
		if err := m.setInputs(xb, qb, yb); err != nil {
			return nil, err
		}
		if err := vm.RunAll(); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", it, err)
		}
		loss := float64(m.loss.Value().Data().(float32))
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return nil, fmt.Errorf("training diverged: the loss is %v at iteration %d (lower the learning rate, now %g)", loss, it, lr)
		}
		entry := LogEntry{Iteration: it, Loss: loss, LR: lr}
		if it%100 == 0 || it == 1 {
			entry.GradNorms = gradNorms(m)
		}
		if err := m.updateRunningStats(); err != nil {
			return nil, err
		}
		opt.step(lr)
		vm.Reset()
		// The first step (buffers allocated, gradient norms logged) is
		// warm-up: throughput counts the steady steps after it.
		if it > 1 || rec.Iterations == 1 {
			stepTime += time.Since(stepStart)
			timed++
		}
		seen += b
		progress(int64(it), int64(rec.Iterations), PhaseTraining)
		if it%rec.ValidateEvery == 0 || it == rec.Iterations {
			progress(int64(it), int64(rec.Iterations), PhaseValidating)
			entry.ImagesPerSec = float64(seen) / time.Since(lastLog).Seconds()
			lastLog, seen = time.Now(), 0
			vals := m.values()
			metrics, _, err := evaluate(enc, params, classes, val, [](map[string][]float32){vals}, std)
			if err != nil {
				return nil, err
			}
			entry.Val = metrics
			entry.EnergyJ = energy.joules()
			kept = keepTopK(kept, Checkpoint{Iteration: it, ValScore: selectionScore(task, metrics), Values: vals}, max(rec.TopK, 1))
			// Plateau scheduler: mode min on the validation loss.
			if metrics["loss"] < best*(1-rec.PlateauThreshold) {
				best, bad = metrics["loss"], 0
			} else if bad++; bad > rec.PlateauPatience {
				lr *= rec.PlateauFactor
				bad = 0
			}
		}
		if log != nil && (entry.Val != nil || entry.GradNorms != nil || it%20 == 0) {
			log(entry)
		}
		if resume.due(it, rec.Iterations) {
			st, err := capture(it, m, opt, src, lr, best, bad, kept)
			if err == nil {
				err = resume.Save(st)
			}
			if err != nil {
				return nil, fmt.Errorf("checkpoint at iteration %d: %w", it, err)
			}
		}
	}
	var sets []map[string][]float32
	for _, c := range kept {
		sets = append(sets, c.Values)
	}
	progress(int64(rec.Iterations), int64(rec.Iterations), PhaseTesting)
	metrics, _, err := evaluate(enc, params, classes, test, sets, std)
	if err != nil {
		return nil, err
	}
	shapes := map[string][]int{}
	for _, p := range params {
		shapes[p.name] = p.shape
	}
	for i := range kept {
		kept[i].Shapes = shapes
	}
	res := &Result{Metrics: metrics, Checkpoints: kept, Seconds: time.Since(start).Seconds(), EnergyJ: energy.joules()}
	if stepTime > 0 {
		res.ImagesPerSec = float64(timed*b) / stepTime.Seconds()
	}
	return res, nil
}

// fillBatch samples b examples into xb and yb and returns their indices.
func fillBatch(xb, yb *tensor.Dense, d *Data, rng *rand.Rand, b, outputs int, std *standardizer) ([]int, error) {
	xs := xb.Data().([]float32)
	var ys []float32
	if yb != nil {
		ys = yb.Data().([]float32)
	}
	w := d.rowWidth(outputs)
	ks := drawExamples(rng, d.Len(), b)
	if err := d.readInputs(xs, ks); err != nil {
		return nil, err
	}
	if ys != nil {
		for i, k := range ks {
			d.targetRow(ys[i*w:(i+1)*w], k, std)
		}
	}
	return ks, nil
}

// drawExamples draws a training batch's b example indices of n,
// uniformly with replacement.
func drawExamples(rng *rand.Rand, n, b int) []int {
	ks := make([]int, b)
	for i := range ks {
		ks[i] = rng.IntN(n)
	}
	return ks
}

func keepTopK(kept []Checkpoint, c Checkpoint, k int) []Checkpoint {
	kept = append(kept, c)
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].ValScore > kept[j].ValScore })
	if len(kept) > k {
		kept = kept[:k]
	}
	return kept
}

func gradNorms(m *model) map[string]float64 {
	out := map[string]float64{}
	for _, p := range m.params {
		g, err := p.node.Grad()
		if err != nil {
			continue
		}
		var s float64
		for _, v := range g.Data().([]float32) {
			s += float64(v) * float64(v)
		}
		out[p.name] = math.Sqrt(s)
	}
	return out
}

// adamW is PyTorch's AdamW over gorgonia's gradients.
type adamW struct {
	params []*param
	wd     float64
	t      int
	mom, v map[string][]float32
}

func newAdamW(params []*param, rec Recipe) *adamW {
	a := &adamW{params: params, wd: rec.WeightDecay, mom: map[string][]float32{}, v: map[string][]float32{}}
	for _, p := range params {
		n := len(p.node.Value().Data().([]float32))
		a.mom[p.name], a.v[p.name] = make([]float32, n), make([]float32, n)
	}
	return a
}

func (a *adamW) step(lr float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	a.t++
	bc1 := 1 - math.Pow(b1, float64(a.t))
	bc2 := math.Sqrt(1 - math.Pow(b2, float64(a.t)))
	decay := float32(1 - lr*a.wd)
	step := float32(lr / bc1)
	for _, p := range a.params {
		w := p.node.Value().Data().([]float32)
		gv, err := p.node.Grad()
		if err != nil {
			continue
		}
		g := gv.Data().([]float32)
		mo, v := a.mom[p.name], a.v[p.name]
		for i := range w {
			mo[i] = b1*mo[i] + (1-b1)*g[i]
			v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
			w[i] = w[i]*decay - step*mo[i]/(float32(math.Sqrt(float64(v[i]))/bc2)+eps)
		}
		// gorgonia accumulates into gradients: start the next step at zero.
		clear(g)
	}
}

// rapl reads the package energy counter when the kernel exposes it.
type rapl struct {
	path  string
	start uint64
}

func newRAPL() *rapl {
	p := "/sys/class/powercap/intel-rapl:0/energy_uj"
	r := &rapl{path: p}
	if v, ok := r.read(); ok {
		r.start = v
		return r
	}
	return &rapl{}
}

func (r *rapl) read() (uint64, bool) {
	if r.path == "" {
		return 0, false
	}
	data, err := os.ReadFile(r.path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return v, err == nil
}

func (r *rapl) joules() *float64 {
	v, ok := r.read()
	if !ok || v < r.start {
		return nil
	}
	j := float64(v-r.start) / 1e6
	return &j
}
