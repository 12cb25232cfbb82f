package pmf

import (
	"fmt"
	"math"
	"sort"
)

// Data is a partly observed matrix to complete.
type Data struct {
	// Values[row][col] in the column's own units; NaN where unobserved.
	Values [][]float64
	// Benchmark[col] groups the columns that share one latent benchmark
	// vector under PTF, and Metric[col] indexes the per-metric linear map
	// (w_s, b_s). PMF ignores both (one latent vector per column). Nil
	// means each column is its own benchmark and all share one metric.
	Benchmark, Metric []int
	// Profiles[row] are optional model covariates (constrained PMF):
	// U'_m = U_m + Profiles[m] Y. Nil means none.
	Profiles [][]float64
}

// Rows and Cols return the matrix shape.
func (d *Data) Rows() int { return len(d.Values) }

// Cols returns the number of columns.
func (d *Data) Cols() int {
	if len(d.Values) == 0 {
		return 0
	}
	return len(d.Values[0])
}

// Check reports a ragged matrix, an infinite value or mismatched
// groupings.
func (d *Data) Check() error {
	if d.Rows() == 0 || d.Cols() == 0 {
		return fmt.Errorf("the matrix is empty")
	}
	for i, row := range d.Values {
		if len(row) != d.Cols() {
			return fmt.Errorf("row %d has %d values, want %d", i, len(row), d.Cols())
		}
		for j, v := range row {
			if math.IsInf(v, 0) {
				return fmt.Errorf("row %d column %d is infinite", i, j)
			}
		}
	}
	if d.Benchmark != nil && len(d.Benchmark) != d.Cols() || d.Metric != nil && len(d.Metric) != d.Cols() {
		return fmt.Errorf("benchmark and metric indices need one entry per column")
	}
	if d.Profiles != nil {
		if len(d.Profiles) != d.Rows() {
			return fmt.Errorf("profiles need one row per model: have %d, want %d", len(d.Profiles), d.Rows())
		}
		for i, p := range d.Profiles {
			if len(p) != len(d.Profiles[0]) {
				return fmt.Errorf("profile %d has %d entries, want %d", i, len(p), len(d.Profiles[0]))
			}
		}
	}
	return nil
}

// Observed counts the observed cells.
func (d *Data) Observed() int {
	n := 0
	for _, row := range d.Values {
		for _, v := range row {
			if !math.IsNaN(v) {
				n++
			}
		}
	}
	return n
}

// metricOf returns column j's metric index (0 when none is given).
func (d *Data) metricOf(j int) int {
	if d.Metric == nil {
		return 0
	}
	return d.Metric[j]
}

// Scale is the per-column normalisation: z = (v - Mean) / Std.
type Scale struct {
	Mean, Std []float64
	// Count is the number of observed entries in each column.
	Count []int
	// Borrowed marks columns whose Std came from other columns.
	Borrowed []bool
}

// Observed reports whether column j has an observed entry of its own; a
// column without one is predicted on a scale borrowed from the others.
func (s *Scale) Observed(j int) bool { return s.Count[j] > 0 }

// Normalise z-scores each column on its observed entries (population
// standard deviation). Columns with too few observations are handled so:
//
//   - two or more observations with a spread: their own mean and std;
//   - one observation, or all observations equal: mean of the observed
//     value(s), and a std of |mean| times the median coefficient of
//     variation (std/|mean|) of the columns of the same metric that have a
//     spread, else of every such column, else 1. Borrowing the relative
//     spread, not the std itself, keeps a loss column of scale 1000 from
//     lending its spread to one of scale 1;
//   - no observation: the mean of the observed values of the columns of
//     the same metric (else of every column) as mean, and a std borrowed
//     as above. That scale only lets the fit and the acquisition rules
//     treat the column as a typical one of its metric: a column's units
//     cannot be known from other benchmarks' (a loss of 1 on one is 1,000
//     standard deviations on another), so its cells are not predicted
//     (Completion.Predicts is false) and the masked-ratio protocol leaves
//     them out of the score, its coverage saying how many.
func Normalise(d *Data) (z [][]float64, s Scale) {
	rows, cols := d.Rows(), d.Cols()
	s = Scale{Mean: make([]float64, cols), Std: make([]float64, cols), Count: make([]int, cols), Borrowed: make([]bool, cols)}
	own := map[int][]float64{} // metric -> coefficients of variation of columns with a spread
	var all []float64
	for j := 0; j < cols; j++ {
		var sum float64
		for i := 0; i < rows; i++ {
			if v := d.Values[i][j]; !math.IsNaN(v) {
				sum += v
				s.Count[j]++
			}
		}
		if s.Count[j] == 0 {
			s.Borrowed[j] = true
			continue
		}
		mean := sum / float64(s.Count[j])
		var sq float64
		for i := 0; i < rows; i++ {
			if v := d.Values[i][j]; !math.IsNaN(v) {
				sq += (v - mean) * (v - mean)
			}
		}
		s.Mean[j] = mean
		std := math.Sqrt(sq / float64(s.Count[j]))
		if s.Count[j] >= 2 && std > 1e-12*math.Max(1, math.Abs(mean)) {
			s.Std[j] = std
			if math.Abs(mean) > 1e-12 {
				own[d.metricOf(j)] = append(own[d.metricOf(j)], std/math.Abs(mean))
				all = append(all, std/math.Abs(mean))
			}
		} else {
			s.Borrowed[j] = true
		}
	}
	for j := 0; j < cols; j++ {
		if s.Count[j] == 0 {
			s.Mean[j] = metricMean(d, j)
		}
	}
	for j := 0; j < cols; j++ {
		if !s.Borrowed[j] {
			continue
		}
		cv := 0.0
		switch {
		case len(own[d.metricOf(j)]) > 0:
			cv = median(own[d.metricOf(j)])
		case len(all) > 0:
			cv = median(all)
		}
		s.Std[j] = cv * math.Abs(s.Mean[j])
		if s.Std[j] < 1e-12 {
			s.Std[j] = 1
		}
	}
	z = make([][]float64, rows)
	for i := range z {
		z[i] = make([]float64, cols)
		for j := range z[i] {
			z[i][j] = (d.Values[i][j] - s.Mean[j]) / s.Std[j] // NaN stays NaN
		}
	}
	return z, s
}

// metricMean is the mean of the observed values of the columns of column
// j's metric, or of every column when none of them has one.
func metricMean(d *Data, j int) float64 {
	var same, all float64
	var nSame, nAll int
	for _, row := range d.Values {
		for c, v := range row {
			if math.IsNaN(v) {
				continue
			}
			all += v
			nAll++
			if d.metricOf(c) == d.metricOf(j) {
				same += v
				nSame++
			}
		}
	}
	switch {
	case nSame > 0:
		return same / float64(nSame)
	case nAll > 0:
		return all / float64(nAll)
	}
	return 0
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Completion is a completed matrix.
type Completion struct {
	Method string
	// Mean and Std are the prediction and its predictive standard
	// deviation per cell, in the column's own units: the posterior
	// spread of the cell's mean plus the noise, scaled by the calibration
	// (see Calibration) when there is one, so that it is the spread of a
	// hidden cell's value around Mean. Observed cells are predicted too
	// (the fitted value), so a caller chooses whether to show the
	// observation. A column with no observation has values on a borrowed
	// scale, for acquisition only: Predicts is false for it.
	Mean, Std [][]float64
	// LatentStd is the posterior standard deviation of each cell's mean
	// alone (what revealing the cell would remove; the acquisition rules
	// rank it), in the column's units; nil for the baselines.
	LatentStd [][]float64
	// Calibration holds the sorted split-conformal scores of held-out
	// cells: each absolute residual over its fold fit's predictive std.
	// Std is the predictive std times the scores' conformal 90% quantile
	// over z90 (so mean ± 1.645 Std is the calibrated 90% interval, and
	// one outlying score cannot swamp it as it did the scores' RMS), and
	// Interval takes its quantiles from them. nil without a calibration.
	Calibration []float64
	// rowCalibration replaces Calibration for the rows far sparser than
	// the rest (a new model's): the scores of cells held out of rows
	// thinned like them (rowcal.go).
	rowCalibration map[int][]float64
	// Noise is the posterior mean of the noise standard deviation in
	// normalised units (NaN for the baselines).
	Noise float64
	// Draws[k][row*cols+col] are the kept posterior draws of the
	// normalised prediction (nil for the baselines): acquisition rules
	// read their covariances.
	Draws [][]float64
	Scale Scale
}

// Predicts reports whether column j's cells are predictions: false for a
// column that had no observation, whose units are unknown.
func (c *Completion) Predicts(j int) bool { return c.Scale.Count[j] > 0 }

// denormalise fills Mean and Std in column units from normalised ones.
func (c *Completion) denormalise(zMean, zStd [][]float64) {
	c.Mean = make([][]float64, len(zMean))
	for i := range zMean {
		c.Mean[i] = make([]float64, len(zMean[i]))
		for j := range zMean[i] {
			c.Mean[i][j] = zMean[i][j]*c.Scale.Std[j] + c.Scale.Mean[j]
		}
	}
	c.Std = c.scaled(zStd)
}

// scaled maps normalised spreads to column units.
func (c *Completion) scaled(z [][]float64) [][]float64 {
	out := make([][]float64, len(z))
	for i := range z {
		out[i] = make([]float64, len(z[i]))
		for j := range z[i] {
			out[i][j] = z[i][j] * c.Scale.Std[j]
		}
	}
	return out
}
