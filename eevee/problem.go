package eevee

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// Options are the scoring choices. Defaults() reproduces the GATE authors'
// scoring; PaperLiteral() the literal reading of Algorithm 1.
type Options struct {
	// Weighting of the squared error over target columns: "group" (mean
	// within benchmark, then within task group, then over groups),
	// "benchmark" (within benchmark, then over benchmarks) or "column"
	// (one mean over all columns).
	Weighting string
	// Targets: "all" columns, or "exclude_selected" (the selected
	// benchmarks' columns are not predicted).
	Targets string
	// Columns used as inputs and targets: "all", "primary" (one headline
	// metric per benchmark: its first higher-is-better column) or
	// "higher_is_better".
	Columns string
	// Splits and TestSize define the ShuffleSplit over models.
	Splits   int
	TestSize float64
	// Meta-model: in -> Hidden -> Activation ("gelu", "relu", "tanh")
	// -> LayerNorm (if set) -> out, trained full-batch with AdamW.
	Hidden      int
	Activation  string
	LayerNorm   bool
	Epochs      int
	LR          float64
	WeightDecay float64
	// Epoch scored: "final", or "best_val" (the epoch with the lowest
	// error on an inner validation split of InnerVal of the training
	// models).
	Epoch    string
	InnerVal float64
	// Exclude removes benchmarks from the candidate pool (they stay
	// targets).
	Exclude []string
	// MergeGroups maps a category to the group it is scored with.
	MergeGroups map[string]string
	Seed        uint64
}

// Defaults returns the scoring of the GATE authors' code.
func Defaults() Options {
	return Options{
		Weighting: "group", Targets: "all", Columns: "all",
		Splits: 20, TestSize: 0.3,
		Hidden: 64, Activation: "gelu", LayerNorm: true,
		Epochs: 20, LR: 0.01, WeightDecay: 0.01,
		Epoch: "final", InnerVal: 0.2,
		MergeGroups: map[string]string{"Few-Shot Img Class": "Img Class"},
	}
}

// PaperLiteral returns the literal reading of the paper's Algorithm 1: one
// MSE over all columns, 5 splits, a 100-unit ReLU MLP without LayerNorm.
func PaperLiteral() Options {
	o := Defaults()
	o.Weighting, o.Splits, o.Hidden, o.Activation, o.LayerNorm = "column", 5, 100, "relu", false
	o.MergeGroups = nil
	return o
}

// Validate reports an option outside its domain.
func (o Options) Validate() error {
	check := func(name, v string, allowed ...string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("%s must be one of %s, not %q", name, strings.Join(allowed, ", "), v)
	}
	for _, err := range []error{
		check("weighting", o.Weighting, "group", "benchmark", "column"),
		check("targets", o.Targets, "all", "exclude_selected"),
		check("columns", o.Columns, "all", "primary", "higher_is_better"),
		check("activation", o.Activation, "gelu", "relu", "tanh"),
		check("epoch", o.Epoch, "final", "best_val"),
	} {
		if err != nil {
			return err
		}
	}
	switch {
	case o.Splits < 1:
		return fmt.Errorf("splits must be at least 1")
	case o.TestSize <= 0 || o.TestSize >= 1:
		return fmt.Errorf("test_size must be between 0 and 1")
	case o.Hidden < 1 || o.Epochs < 1:
		return fmt.Errorf("hidden and epochs must be at least 1")
	case o.LR <= 0 || o.WeightDecay < 0:
		return fmt.Errorf("lr must be positive and weight_decay not negative")
	case o.Epoch == "best_val" && (o.InnerVal <= 0 || o.InnerVal >= 1):
		return fmt.Errorf("best_val needs an inner validation share between 0 and 1")
	}
	return nil
}

// Problem is a matrix prepared for scoring under fixed options.
type Problem struct {
	Opts   Options
	Matrix *Matrix
	// Benchmarks are all benchmark IDs (targets), in matrix order.
	Benchmarks []string
	// Pool holds the indices (into Benchmarks) that candidates draw from.
	Pool []int
	// Warning, when set, says why the scores may not be trusted (too few
	// models).
	Warning string
	// benchCols[b] are the column indices of benchmark b.
	benchCols [][]int
	colBench  []int
	colGroup  []int
	groups    []string
	// z[model][col] is the z-scored matrix; mean and std undo it.
	z         [][]float64
	mean, std []float64
	weights   []float64 // target weights when every column is a target
	splits    []split
	inits     *initCache
}

type split struct {
	train, val   []int
	inner, outer []int // best_val: inner validation and remaining training models
}

// MinModels is the fewest models a matrix may have (with three, each
// split's meta-model was fit to two models and still scored: a result no
// reader could trust). Fewer than FewModels training models per split
// earn a warning.
const (
	MinModels = 4
	FewModels = 5
)

// NewProblem prepares m for scoring. The matrix must have no missing cell
// (see Matrix.DropMissing): EEVEE never fills one with a constant.
func NewProblem(m *Matrix, o Options) (*Problem, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if miss := m.Missing(); len(miss) > 0 {
		return nil, fmt.Errorf("the matrix has %d missing cells (first: %s); drop the models or columns with missing results first", len(miss), miss[0])
	}
	if len(m.Models) < MinModels {
		return nil, fmt.Errorf("the matrix has %d models; EEVEE needs at least %d (its meta-models train on some models and are scored on the others)", len(m.Models), MinModels)
	}
	m = selectColumns(m, o.Columns)
	p := &Problem{Opts: o, Matrix: m, inits: &initCache{}}
	bIdx := map[string]int{}
	gIdx := map[string]int{}
	for _, c := range m.Columns {
		b, ok := bIdx[c.Benchmark]
		if !ok {
			b = len(p.Benchmarks)
			bIdx[c.Benchmark] = b
			p.Benchmarks = append(p.Benchmarks, c.Benchmark)
			p.benchCols = append(p.benchCols, nil)
		}
		p.benchCols[b] = append(p.benchCols[b], len(p.colBench))
		p.colBench = append(p.colBench, b)
		g := c.Category
		if merged, ok := o.MergeGroups[g]; ok {
			g = merged
		}
		gi, ok := gIdx[g]
		if !ok {
			gi = len(p.groups)
			gIdx[g] = gi
			p.groups = append(p.groups, g)
		}
		p.colGroup = append(p.colGroup, gi)
	}
	excluded := map[string]bool{}
	for _, e := range o.Exclude {
		if _, ok := bIdx[e]; !ok {
			return nil, fmt.Errorf("exclude names %q, which is not a benchmark of the matrix", e)
		}
		excluded[e] = true
	}
	for b, name := range p.Benchmarks {
		if !excluded[name] {
			p.Pool = append(p.Pool, b)
		}
	}
	p.z, p.mean, p.std = zscore(m.Values)
	p.weights = p.targetWeights(nil)
	n := len(m.Models)
	nTest := int(math.Ceil(o.TestSize * float64(n)))
	if nTest < 1 || n-nTest < 2 {
		return nil, fmt.Errorf("%d models are too few for test_size %g", n, o.TestSize)
	}
	if n-nTest < FewModels {
		p.Warning = fmt.Sprintf("only %d models train each split's meta-model (%d models, test_size %g): scores will be noisy and the chosen benchmarks unstable; add models", n-nTest, n, o.TestSize)
	}
	for s := 0; s < o.Splits; s++ {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(s)+0x5eed))
		perm := rng.Perm(n)
		sp := split{val: sortedInts(perm[:nTest]), train: sortedInts(perm[nTest:])}
		if o.Epoch == "best_val" {
			nInner := max(1, int(math.Ceil(o.InnerVal*float64(len(sp.train)))))
			ip := rng.Perm(len(sp.train))
			for i, k := range ip {
				if i < nInner {
					sp.inner = append(sp.inner, sp.train[k])
				} else {
					sp.outer = append(sp.outer, sp.train[k])
				}
			}
			sort.Ints(sp.inner)
			sort.Ints(sp.outer)
		}
		p.splits = append(p.splits, sp)
	}
	return p, nil
}

func sortedInts(s []int) []int {
	out := append([]int(nil), s...)
	sort.Ints(out)
	return out
}

// selectColumns keeps the columns the options ask for.
func selectColumns(m *Matrix, mode string) *Matrix {
	if mode == "all" {
		return m
	}
	keep := make([]bool, len(m.Columns))
	if mode == "higher_is_better" {
		for j, c := range m.Columns {
			keep[j] = c.HigherIsBetter
		}
	} else { // primary: first higher-is-better column, else first column
		chosen := map[string]int{}
		for j, c := range m.Columns {
			if prev, ok := chosen[c.Benchmark]; !ok || (!m.Columns[prev].HigherIsBetter && c.HigherIsBetter) {
				chosen[c.Benchmark] = j
			}
		}
		for _, j := range chosen {
			keep[j] = true
		}
	}
	out := &Matrix{Models: m.Models}
	for j, k := range keep {
		if k {
			out.Columns = append(out.Columns, m.Columns[j])
		}
	}
	for _, row := range m.Values {
		var r []float64
		for j, k := range keep {
			if k {
				r = append(r, row[j])
			}
		}
		out.Values = append(out.Values, r)
	}
	return out
}

// zscore standardises each column over all models (population standard
// deviation, as scikit-learn's StandardScaler); constant columns become 0.
func zscore(v [][]float64) (z [][]float64, means, stds []float64) {
	n := len(v)
	cols := len(v[0])
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, cols)
	}
	means, stds = make([]float64, cols), make([]float64, cols)
	for j := 0; j < cols; j++ {
		var mean, sq float64
		for i := 0; i < n; i++ {
			mean += v[i][j]
		}
		mean /= float64(n)
		for i := 0; i < n; i++ {
			d := v[i][j] - mean
			sq += d * d
		}
		std := math.Sqrt(sq / float64(n))
		if std < 1e-12 {
			std = 1
		}
		for i := 0; i < n; i++ {
			out[i][j] = (v[i][j] - mean) / std
		}
		means[j], stds[j] = mean, std
	}
	return out, means, stds
}

// targetWeights returns each column's weight in the error (summing to 1);
// columns of benchmarks in excluded get 0.
func (p *Problem) targetWeights(excluded map[int]bool) []float64 {
	w := make([]float64, len(p.colBench))
	switch p.Opts.Weighting {
	case "column":
		n := 0
		for c, b := range p.colBench {
			if !excluded[b] {
				n++
				w[c] = 1
			}
		}
		for c := range w {
			w[c] /= float64(max(n, 1))
		}
	case "benchmark":
		nb := 0
		for b := range p.Benchmarks {
			if !excluded[b] {
				nb++
			}
		}
		for c, b := range p.colBench {
			if !excluded[b] {
				w[c] = 1 / float64(nb*len(p.benchCols[b]))
			}
		}
	case "group":
		benchesInGroup := map[int]map[int]bool{}
		for c, b := range p.colBench {
			if excluded[b] {
				continue
			}
			g := p.colGroup[c]
			if benchesInGroup[g] == nil {
				benchesInGroup[g] = map[int]bool{}
			}
			benchesInGroup[g][b] = true
		}
		ng := len(benchesInGroup)
		for c, b := range p.colBench {
			if excluded[b] {
				continue
			}
			g := p.colGroup[c]
			w[c] = 1 / float64(ng*len(benchesInGroup[g])*len(p.benchCols[b]))
		}
	}
	return w
}

// Groups returns the task groups in order.
func (p *Problem) Groups() []string { return p.groups }

// BenchmarkIndex returns the index of a benchmark ID (exact match).
func (p *Problem) BenchmarkIndex(id string) (int, bool) {
	for i, b := range p.Benchmarks {
		if b == id {
			return i, true
		}
	}
	return 0, false
}
