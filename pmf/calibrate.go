package pmf

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
)

// calibrationShare is the share of the observed cells each calibration
// fold holds out.
const calibrationShare = 0.1

// minCalibrationCells is the fewest held-out residuals a calibration uses;
// with fewer (tiny matrices) the intervals stay Gaussian on the
// uncalibrated predictive std.
const minCalibrationCells = 10

// calibrate fits the sampler again on o.CalibrationFolds disjoint folds of
// d, each with calibrationShare of the observed cells held out (a column
// always keeps one observation), and returns the held-out cells' absolute
// residuals in units of each fold fit's predictive std, sorted. These are
// split-conformal scores: a quantile q of them, times a cell's predictive
// std, is an interval that covers about q of cells hidden like them. nil
// when too few cells can be held out.
func (s *Sampler) calibrate(ctx context.Context, d *Data, seed uint64) ([]float64, error) {
	folds := heldOutFolds(d, s.Opts.CalibrationFolds, seed)
	total := 0
	for _, f := range folds {
		total += len(f)
	}
	if total < minCalibrationCells {
		return nil, nil
	}
	inner := &Sampler{Opts: s.Opts}
	inner.Opts.CalibrationFolds, inner.Opts.KeepDraws = 0, false
	scores := make([][]float64, len(folds))
	errs := make([]error, len(folds))
	var wg sync.WaitGroup
	for k, cells := range folds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fold := withHidden(d, cells)
			c, err := inner.Complete(ctx, fold, seed^(0x63616c69+uint64(k)))
			if err != nil {
				errs[k] = err
				return
			}
			for _, ij := range cells {
				i, j := ij[0], ij[1]
				if sd := c.Std[i][j]; sd > 0 {
					scores[k] = append(scores[k], math.Abs(d.Values[i][j]-c.Mean[i][j])/sd)
				}
			}
		}()
	}
	wg.Wait()
	var out []float64
	for k := range folds {
		if errs[k] != nil {
			return nil, errs[k]
		}
		out = append(out, scores[k]...)
	}
	if len(out) < minCalibrationCells {
		return nil, nil
	}
	sort.Float64s(out)
	return out, nil
}

// heldOutFolds picks n disjoint sets of observed cells, each about
// calibrationShare of them, at random by seed; a cell is only taken while
// its column keeps at least one other observation in that fold.
func heldOutFolds(d *Data, n int, seed uint64) [][][2]int {
	var obs [][2]int
	count := make([]int, d.Cols())
	for i, row := range d.Values {
		for j, v := range row {
			if !math.IsNaN(v) {
				obs = append(obs, [2]int{i, j})
				count[j]++
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x666f6c64))
	rng.Shuffle(len(obs), func(a, b int) { obs[a], obs[b] = obs[b], obs[a] })
	want := int(math.Ceil(calibrationShare * float64(len(obs))))
	used := make([]bool, len(obs))
	folds := make([][][2]int, n)
	for f := range folds {
		left := append([]int(nil), count...)
		for k, ij := range obs {
			if len(folds[f]) == want {
				break
			}
			if !used[k] && left[ij[1]] >= 2 {
				used[k] = true
				left[ij[1]]--
				folds[f] = append(folds[f], ij)
			}
		}
	}
	return folds
}

// withHidden returns a copy of d with cells unobserved.
func withHidden(d *Data, cells [][2]int) *Data {
	out := *d
	out.Values = make([][]float64, len(d.Values))
	for i := range d.Values {
		out.Values[i] = append([]float64(nil), d.Values[i]...)
	}
	for _, ij := range cells {
		out.Values[ij[0]][ij[1]] = math.NaN()
	}
	return &out
}

// quantile is the linearly interpolated q-quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	x := q * float64(len(sorted)-1)
	k := int(x)
	if k+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[k] + (x-float64(k))*(sorted[k+1]-sorted[k])
}

// Interval returns the central interval of cell (i, j) at level (0.9 for a
// 90% interval) in the column's units: the mean plus or minus the level's
// quantile of the calibration scores times the cell's predictive std, or,
// without a calibration, the Gaussian quantile times it. A baseline's
// interval is its point prediction (its std is zero).
func (c *Completion) Interval(i, j int, level float64) (lo, hi float64) {
	half := c.Std[i][j] * c.halfWidth(level)
	return c.Mean[i][j] - half, c.Mean[i][j] + half
}

// halfWidth is the interval's half-width at level in units of Std.
func (c *Completion) halfWidth(level float64) float64 {
	if c.Calibration == nil {
		return math.Sqrt2 * math.Erfinv(level)
	}
	return quantile(c.Calibration, level) / c.calibrationRMS()
}

// calibrationRMS is the root mean square of the calibration scores: the
// factor that turned the predictive std into Std.
func (c *Completion) calibrationRMS() float64 {
	var ss float64
	for _, r := range c.Calibration {
		ss += r * r
	}
	return math.Sqrt(ss / float64(len(c.Calibration)))
}
