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
	// GATEBlocks adds to a grouped retrieval split's metrics the
	// accuracies GATE's code computed for Winoground, its 2 x 2 blocks
	// misplaced (defect D4, under a protocol that reproduces it:
	// gateBlockAccuracies); they become the matrix's Img2Txt and Txt2Img.
	GATEBlocks bool
	// Source, when set, gives the inputs instead of X: a split read from
	// its store a batch at a time (OpenSplitFor).
	Source Inputs
	// masks, when set, gives a segmentation split's masks instead of Y,
	// read from its store one at a time.
	masks *storeMasks
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
func (d *Data) evalBatch() int { return d.evalBatchFor(len(d.ClassNames)) }

// evalBatchFor is evalBatch for a head of outputs classes (a store's
// masks may come without class names: ADE20K's Parquet has none).
func (d *Data) evalBatchFor(outputs int) int {
	b := min(250, max(16, 200_000/d.exampleSize()))
	if d.task() == Segmentation && outputs > 0 {
		// A segmentation batch's outputs are a score per pixel and class
		// (7.6 M floats an image for ADE20K at 224 px), held several
		// times by the graph: at most segmentationOutputs of them.
		b = min(b, max(1, segmentationOutputs/(d.pixels()*outputs)))
	}
	return b
}

// segmentationOutputs bounds the per-pixel class scores of one evaluation
// batch (64 MiB of float32).
const segmentationOutputs = 1 << 24

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
	t, err := newTrainRun(enc.SizedBy(trainD), init, classes, rec, trainD)
	if err != nil {
		return nil, err
	}
	defer t.vm.Close()
	defer t.drain()
	first, err := t.resumeFrom(resume)
	if err != nil {
		return nil, err
	}
	total := int64(rec.Iterations)
	for it := first; it <= rec.Iterations; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		entry, err := t.step(it)
		if err != nil {
			return nil, err
		}
		progress(int64(it), total, PhaseTraining)
		if it%rec.ValidateEvery == 0 || it == rec.Iterations {
			progress(int64(it), total, PhaseValidating)
			if err := t.validate(&entry, val); err != nil {
				return nil, err
			}
		}
		if log != nil && (entry.Val != nil || entry.GradNorms != nil || it%20 == 0) {
			log(entry)
		}
		if resume.due(it, rec.Iterations) {
			st, err := capture(it, t.m, t.opt, &t.srcAtStep, t.lr, t.best, t.bad, t.kept)
			if err == nil {
				err = resume.Save(st)
			}
			if err != nil {
				return nil, fmt.Errorf("checkpoint at iteration %d: %w", it, err)
			}
		}
	}
	progress(total, total, PhaseTesting)
	return t.test(test, start)
}

// trainRun is one Train call: the model and its optimiser, the batch
// buffers, and what the loop carries from step to step (what a resume
// checkpoint saves: the learning rate, the plateau scheduler's state, the
// kept checkpoints).
type trainRun struct {
	enc     EncoderSpec
	rec     Recipe
	classes int
	trainD  *Data
	task    Task
	params  []*param
	m       *model
	vm      G.VM
	opt     *adamW
	src     *rand.PCG
	rng     *rand.Rand
	std     *standardizer
	// b is the batch (an episode's examples in few-shot).
	b                    int
	episodes             [][]int
	ways, shots, queries int
	// slots are two steps' inputs: the running step's, and the next
	// one's, read ahead in the background (next) while the step computes.
	slots [2]*batch
	next  *batch
	// srcAtStep is the sampler's state after the running step's draw,
	// what a checkpoint saves (the next step's draw has been made).
	srcAtStep rand.PCG
	lr, best  float64
	bad       int
	kept      []Checkpoint
	energy    *rapl
	lastLog   time.Time
	seen      int
	stepTime  time.Duration
	timed     int // steps in stepTime
}

// newTrainRun builds the model of enc (its parameters from init where it
// names them, else the seed's), its gradients and optimiser.
func newTrainRun(enc EncoderSpec, init Weights, classes int, rec Recipe, trainD *Data) (*trainRun, error) {
	t := &trainRun{enc: enc, rec: rec, classes: classes, trainD: trainD, task: trainD.task(), b: rec.BatchSize, lr: rec.LR, best: math.Inf(1)}
	params, err := newParams(enc, t.task, trainD.Shape, classes, rec.Seed)
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
	t.params = params
	t.ways, t.shots, t.queries = enc.Head.episodeShape()
	if t.task == FewShot {
		t.b = t.ways * (t.shots + t.queries)
		if t.episodes, err = trainD.episodes(rand.New(rand.NewPCG(rec.Seed, 0xe9)), rec.Iterations, t.ways, t.shots, t.queries); err != nil {
			return nil, fmt.Errorf("training split: %w", err)
		}
	}
	if t.task.regresses() {
		t.std = newStandardizer(trainD, classes)
	}
	// A linear probe freezes the encoder: batch norms keep their running
	// statistics and only the adapter (head, stem) learns.
	if t.m, err = buildStep(enc, t.task, params, trainD.Shape, classes, t.b, nil, !rec.LinearProbe); err != nil {
		return nil, err
	}
	learn := t.m.trainable(rec.LinearProbe)
	if len(learn) == 0 {
		return nil, fmt.Errorf("nothing to train: the %s head has no parameters and the encoder is frozen", t.task)
	}
	var nodes G.Nodes
	for _, p := range learn {
		nodes = append(nodes, p.node)
	}
	if _, err := G.Grad(t.m.loss, nodes...); err != nil {
		return nil, fmt.Errorf("gradients: %w", err)
	}
	t.vm = G.NewTapeMachine(t.m.g, G.BindDualValues(nodes...))
	t.opt = newAdamW(learn, rec)
	t.src = rand.NewPCG(rec.Seed, trainSamplingStream)
	t.rng = rand.New(t.src)
	for i := range t.slots {
		t.slots[i] = &batch{xb: tensor.New(tensor.WithShape(append([]int{t.b}, trainD.Shape...)...), tensor.Of(tensor.Float32)),
			yb: newTargets(t.m), qb: newQuestions(t.m)}
	}
	t.energy = newRAPL()
	t.lastLog = time.Now()
	return t, nil
}

// resumeFrom restores resume's saved state when it fits this run and
// returns the first iteration to run.
func (t *trainRun) resumeFrom(resume Resume) (int, error) {
	from := resume.From
	if from == nil {
		return 1, nil
	}
	if err := from.fits(t.m, t.opt, t.rec.Iterations); err != nil {
		if resume.Refused != nil {
			resume.Refused(err)
		}
		return 1, nil
	}
	if err := from.restore(t.m, t.opt, t.src); err != nil {
		return 0, err
	}
	t.lr, t.best, t.bad, t.kept = from.LR, from.Best, from.Bad, from.Kept
	if resume.Resumed != nil {
		resume.Resumed(from.Iteration, t.rec.Iterations)
	}
	return from.Iteration + 1, nil
}

// step runs training iteration it: a batch (or episode), the forward and
// backward pass, the optimiser's update.
func (t *trainRun) step(it int) (LogEntry, error) {
	stepStart := time.Now()
	cur := t.next
	if cur == nil || cur.it != it { // the first step, or the first after a resume
		cur = t.slots[it%2]
		t.prepare(it, cur)
	}
	t.next = nil
	<-cur.done
	if cur.err != nil {
		return LogEntry{}, cur.err
	}
	t.srcAtStep = *t.src
	if it < t.rec.Iterations {
		t.next = t.slots[(it+1)%2]
		t.prepare(it+1, t.next)
	}
	if err := t.m.setInputs(cur.xb, cur.qb, cur.yb); err != nil {
		return LogEntry{}, err
	}
	if err := t.vm.RunAll(); err != nil {
		return LogEntry{}, fmt.Errorf("iteration %d: %w", it, err)
	}
	loss := float64(t.m.loss.Value().Data().(float32))
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return LogEntry{}, fmt.Errorf("training diverged: the loss is %v at iteration %d (lower the learning rate, now %g)", loss, it, t.lr)
	}
	entry := LogEntry{Iteration: it, Loss: loss, LR: t.lr}
	if it%100 == 0 || it == 1 {
		entry.GradNorms = gradNorms(t.m)
	}
	if err := t.m.updateRunningStats(); err != nil {
		return LogEntry{}, err
	}
	t.opt.step(t.lr)
	t.vm.Reset()
	// The first step (buffers allocated, gradient norms logged) is
	// warm-up: throughput counts the steady steps after it.
	if it > 1 || t.rec.Iterations == 1 {
		t.stepTime += time.Since(stepStart)
		t.timed++
	}
	t.seen += t.b
	return entry, nil
}

// validate scores the current weights on val into entry, keeps them among
// the top k, and steps the plateau scheduler.
func (t *trainRun) validate(entry *LogEntry, val *Data) error {
	entry.ImagesPerSec = float64(t.seen) / time.Since(t.lastLog).Seconds()
	t.lastLog, t.seen = time.Now(), 0
	vals := t.m.values()
	metrics, _, err := evaluate(t.enc, t.params, t.classes, val, [](map[string][]float32){vals}, t.std)
	if err != nil {
		return err
	}
	entry.Val = metrics
	entry.EnergyJ = t.energy.joules()
	t.kept = keepTopK(t.kept, Checkpoint{Iteration: entry.Iteration, ValScore: selectionScore(t.task, metrics), Values: vals}, max(t.rec.TopK, 1))
	// Plateau scheduler: mode min on the validation loss.
	if metrics["loss"] < t.best*(1-t.rec.PlateauThreshold) {
		t.best, t.bad = metrics["loss"], 0
	} else if t.bad++; t.bad > t.rec.PlateauPatience {
		t.lr *= t.rec.PlateauFactor
		t.bad = 0
	}
	return nil
}

// test scores the kept checkpoints' ensemble on test.
func (t *trainRun) test(test *Data, start time.Time) (*Result, error) {
	var sets []map[string][]float32
	for _, c := range t.kept {
		sets = append(sets, c.Values)
	}
	metrics, _, err := evaluate(t.enc, t.params, t.classes, test, sets, t.std)
	if err != nil {
		return nil, err
	}
	shapes := map[string][]int{}
	for _, p := range t.params {
		shapes[p.name] = p.shape
	}
	for i := range t.kept {
		t.kept[i].Shapes = shapes
	}
	res := &Result{Metrics: metrics, Checkpoints: t.kept, Seconds: time.Since(start).Seconds(), EnergyJ: t.energy.joules()}
	if t.stepTime > 0 {
		res.ImagesPerSec = float64(t.timed*t.b) / t.stepTime.Seconds()
	}
	return res, nil
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
