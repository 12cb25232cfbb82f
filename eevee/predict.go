package eevee

import (
	"fmt"
	"math"
	"sort"
)

// Prediction is a new model's predicted results on every column of the
// pool: the mean over the meta-models of all splits, and their spread.
type Prediction struct {
	Columns []Column
	Mean    []float64 // raw units
	Std     []float64 // spread over the split ensemble, raw units
	// Unmeasured names the tier columns the meta-model went without: a
	// measured benchmark can lack a column of the paper's (a per-class
	// metric of a class its test split does not hold).
	Unmeasured []string
}

// Predict trains the meta-model of every split on the tier's columns (tier
// holds benchmark indices) and predicts all columns for a model whose raw
// results on the tier's columns are given in measured (indexed by column;
// only the tier's columns are read). The ensemble over splits gives the
// spread. A tier column measured as NaN is left out of the meta-model's
// inputs (named in Unmeasured); a tier benchmark with no measured column
// is an error.
func (p *Problem) Predict(tier []int, measured []float64) (*Prediction, error) {
	sorted := append([]int(nil), tier...)
	sort.Ints(sorted)
	var inCols []int
	var unmeasured []string
	for _, b := range sorted {
		n := 0
		for _, c := range p.benchCols[b] {
			if math.IsNaN(measured[c]) {
				unmeasured = append(unmeasured, p.Matrix.Columns[c].Name())
				continue
			}
			inCols = append(inCols, c)
			n++
		}
		if n == 0 && len(p.benchCols[b]) > 0 {
			return nil, fmt.Errorf("no measured value for %s, which the tier needs", p.Matrix.Columns[p.benchCols[b][0]].Name())
		}
	}
	x := make([]float32, len(inCols))
	for i, c := range inCols {
		x[i] = float32((measured[c] - p.mean[c]) / p.std[c])
	}
	C := len(p.colBench)
	s := p.newScorer()
	net := newMLP(len(inCols), p.Opts.Hidden, C, len(p.z), p.Opts.Activation, p.Opts.LayerNorm)
	w32 := make([]float32, C)
	for i, v := range p.weights {
		w32[i] = float32(v)
	}
	preds := make([][]float64, 0, len(p.splits))
	for si, sp := range p.splits {
		s.x, s.y = s.gather(s.x, s.y, sp.train, inCols)
		net.reset(s.initRand(si, len(inCols)))
		for e := 1; e <= p.Opts.Epochs; e++ {
			net.forward(s.x, len(sp.train))
			net.loss(s.y, len(sp.train), w32, true)
			net.backward(s.x, len(sp.train))
			net.adamw(e, p.Opts.LR, p.Opts.WeightDecay)
		}
		net.forward(x, 1)
		row := make([]float64, C)
		for c := 0; c < C; c++ {
			row[c] = float64(net.p[c])*p.std[c] + p.mean[c]
		}
		preds = append(preds, row)
	}
	out := &Prediction{Columns: p.Matrix.Columns, Mean: make([]float64, C), Std: make([]float64, C), Unmeasured: unmeasured}
	for c := 0; c < C; c++ {
		var sum, sq float64
		for _, r := range preds {
			sum += r[c]
		}
		mean := sum / float64(len(preds))
		for _, r := range preds {
			sq += (r[c] - mean) * (r[c] - mean)
		}
		out.Mean[c], out.Std[c] = mean, math.Sqrt(sq/float64(len(preds)))
	}
	return out, nil
}

// Placement is where a model lands among the pool's models: its mean rank
// over columns (1 = best, direction-aware) and its position when models
// are ordered by mean rank, overall and per task group.
type Placement struct {
	MeanRank float64            `json:"mean_rank"`
	Position int                `json:"position"`
	Of       int                `json:"of"`
	Groups   map[string]float64 `json:"group_positions"`
}

// Place ranks a vector of results (one per column) against the pool's
// models: per column, its rank among the pool's values plus itself; then
// its position among all models ordered by mean rank (overall and within
// each task group).
func (p *Problem) Place(values []float64) Placement {
	m := p.Matrix
	n := len(m.Models)
	C := len(m.Columns)
	rows := make([][]float64, n+1)
	copy(rows, m.Values)
	rows[n] = values
	rank := func(cols []int) []float64 { // mean rank of each of the n+1 models over cols
		mean := make([]float64, n+1)
		for _, c := range cols {
			r := columnRanks(rows, c, m.Columns[c].HigherIsBetter)
			for i := range r {
				mean[i] += r[i] / float64(len(cols))
			}
		}
		return mean
	}
	position := func(mean []float64) int {
		pos := 1
		for i := 0; i < n; i++ {
			if mean[i] < mean[n] {
				pos++
			}
		}
		return pos
	}
	all := make([]int, C)
	for c := range all {
		all[c] = c
	}
	overall := rank(all)
	pl := Placement{MeanRank: overall[n], Position: position(overall), Of: n + 1, Groups: map[string]float64{}}
	for g, name := range p.groups {
		var cols []int
		for c := 0; c < C; c++ {
			if p.colGroup[c] == g {
				cols = append(cols, c)
			}
		}
		pl.Groups[name] = float64(position(rank(cols)))
	}
	return pl
}

// columnRanks returns 1-based ranks of rows' values in column c (1 = best),
// ties sharing their mean rank.
func columnRanks(rows [][]float64, c int, higherIsBetter bool) []float64 {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	val := func(i int) float64 {
		if higherIsBetter {
			return -rows[i][c]
		}
		return rows[i][c]
	}
	sort.SliceStable(idx, func(a, b int) bool { return val(idx[a]) < val(idx[b]) })
	ranks := make([]float64, len(rows))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && val(idx[j+1]) == val(idx[i]) {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			ranks[idx[k]] = r
		}
		i = j + 1
	}
	return ranks
}

// spearman returns the rank correlation of a and b.
func spearman(a, b []float64) float64 {
	ra := ranksOf(a)
	rb := ranksOf(b)
	return pearson(ra, rb)
}

func ranksOf(v []float64) []float64 {
	rows := make([][]float64, len(v))
	for i, x := range v {
		rows[i] = []float64{x}
	}
	return columnRanks(rows, 0, false)
}

func pearson(a, b []float64) float64 {
	n := float64(len(a))
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= n
	mb /= n
	var cov, va, vb float64
	for i := range a {
		cov += (a[i] - ma) * (b[i] - mb)
		va += (a[i] - ma) * (a[i] - ma)
		vb += (b[i] - mb) * (b[i] - mb)
	}
	if va == 0 || vb == 0 {
		return 0
	}
	return cov / math.Sqrt(va*vb)
}

// PlaceRange is the placement interval of a model whose results are
// values, spread[c] the uncertainty of a predicted value (0 or NaN for a
// measured one): Best is its position with every predicted value moved
// by its spread in the column's better direction (up where higher is
// better), Worst with every one moved the other way; measured values stay.
// All predicted values move together, as a model better or worse than
// predicted throughout would: the interval is wider than one in which
// the errors cancel.
func (p *Problem) PlaceRange(values, spread []float64) (best, worst int) {
	up := append([]float64(nil), values...)
	down := append([]float64(nil), values...)
	for c := range values {
		s := spread[c]
		if math.IsNaN(s) || s <= 0 {
			continue
		}
		if !p.Matrix.Columns[c].HigherIsBetter {
			s = -s
		}
		up[c] += s
		down[c] -= s
	}
	return p.Place(up).Position, p.Place(down).Position
}
