package transfer

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// hyperbolic is scipy's default weigher: the element of rank r (0 the
// best) weighs 1/(r+1).
func hyperbolic(r int) float64 { return 1 / float64(r+1) }

// WeightedTau is scipy.stats.weightedtau(x, y) with its defaults: the
// hyperbolic weigher, additive pair weights w(r_i) + w(r_j), and rank =
// True, which averages the weighted tau computed with the ranks of the
// decreasing lexicographic order by (x, y) and by (y, x). Ties count as
// in Vigna's definition: tau = <x, y> / (|x| |y|), with <x, y> the
// weighted sum of sgn(x_i - x_j) sgn(y_i - y_j) over pairs and |x|^2 =
// <x, x>. It returns NaN when either side is constant.
func WeightedTau(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 2 {
		return math.NaN()
	}
	return (weightedTauRanked(x, y, lexRank(x, y)) + weightedTauRanked(x, y, lexRank(y, x))) / 2
}

// lexRank ranks the elements by decreasing (a, b): rank 0 is the largest
// a, ties broken by the larger b.
func lexRank(a, b []float64) []int {
	idx := make([]int, len(a))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(p, q int) bool {
		i, j := idx[p], idx[q]
		if a[i] != a[j] {
			return a[i] > a[j]
		}
		return b[i] > b[j]
	})
	rank := make([]int, len(a))
	for r, i := range idx {
		rank[i] = r
	}
	return rank
}

func weightedTauRanked(x, y []float64, rank []int) float64 {
	var num, nx, ny float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			w := hyperbolic(rank[i]) + hyperbolic(rank[j])
			sx, sy := sign(x[i]-x[j]), sign(y[i]-y[j])
			num += w * sx * sy
			nx += w * sx * sx
			ny += w * sy * sy
		}
	}
	if nx == 0 || ny == 0 {
		return math.NaN()
	}
	return num / math.Sqrt(nx*ny)
}

func sign(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// KendallTau is Kendall's tau-b (scipy.stats.kendalltau's default):
// (concordant - discordant) / sqrt((n0 - ties in x)(n0 - ties in y)).
func KendallTau(x, y []float64) float64 {
	var num, nx, ny float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			sx, sy := sign(x[i]-x[j]), sign(y[i]-y[j])
			num += sx * sy
			nx += sx * sx
			ny += sy * sy
		}
	}
	if nx == 0 || ny == 0 {
		return math.NaN()
	}
	return num / math.Sqrt(nx*ny)
}

// Pearson is the linear correlation of x and y.
func Pearson(x, y []float64) float64 { return stat.Correlation(x, y, nil) }

// Spearman is the Pearson correlation of the ranks (ties share their mean
// rank).
func Spearman(x, y []float64) float64 { return Pearson(midRanks(x), midRanks(y)) }

func midRanks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(p, q int) bool { return v[idx[p]] < v[idx[q]] })
	r := make([]float64, len(v))
	for s := 0; s < len(idx); {
		e := s
		for e+1 < len(idx) && v[idx[e+1]] == v[idx[s]] {
			e++
		}
		for k := s; k <= e; k++ {
			r[idx[k]] = float64(s+e)/2 + 1
		}
		s = e + 1
	}
	return r
}

// TopHit reports whether the model the score ranks first is among the
// models with the best accuracy.
func TopHit(score, acc []float64) bool {
	best, top := 0, 0
	for i := range score {
		if score[i] > score[top] {
			top = i
		}
		if acc[i] > acc[best] {
			best = i
		}
	}
	return acc[top] == acc[best]
}

// Fidelity is the Pearson correlation between the pairwise differences of
// the scores and of the accuracies over all ordered pairs of models (the
// SITE paper's fidelity to accuracy differences; ordered pairs make it
// symmetric in sign).
func Fidelity(score, acc []float64) float64 {
	var ds, da []float64
	for i := range score {
		for j := range score {
			if i != j {
				ds = append(ds, score[i]-score[j])
				da = append(da, acc[i]-acc[j])
			}
		}
	}
	return Pearson(ds, da)
}
