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

// heldOut is one held-out cell of a calibration fold: its residual and
// its fold fit's predictive std, in the column's normalised units.
type heldOut struct{ resid, sd float64 }

// calibrate fits the sampler again on o.CalibrationFolds disjoint folds of
// d, each with calibrationShare of the observed cells held out (a column
// always keeps one observation), and returns the held-out cells'
// residuals and predictive stds (normalised units). nil when too few
// cells can be held out. See conformalScores for what is made of them.
func (s *Sampler) calibrate(ctx context.Context, d *Data, seed uint64) ([]heldOut, error) {
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
	scores := make([][]heldOut, len(folds))
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
				if sd, unit := c.Std[i][j], c.Scale.Std[j]; sd > 0 && unit > 0 {
					scores[k] = append(scores[k], heldOut{resid: math.Abs(d.Values[i][j]-c.Mean[i][j]) / unit, sd: sd / unit})
				}
			}
		}()
	}
	wg.Wait()
	var out []heldOut
	for k := range folds {
		if errs[k] != nil {
			return nil, errs[k]
		}
		out = append(out, scores[k]...)
	}
	if len(out) < minCalibrationCells {
		return nil, nil
	}
	return out, nil
}

// conformalScores turns held-out cells into split-conformal scores,
// sorted: each absolute residual over its fold fit's predictive std.
func conformalScores(cells []heldOut) []float64 {
	out := make([]float64, len(cells))
	for k, c := range cells {
		out[k] = c.resid / c.sd
	}
	sort.Float64s(out)
	return out
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

// conformalQuantile is split conformal prediction's quantile of the
// sorted scores at level: the ceil((n+1) level)-th smallest of the n
// scores, the finite-sample bound that makes the interval cover at least
// level of exchangeable cells (the largest score past it).
func conformalQuantile(sorted []float64, level float64) float64 {
	k := int(math.Ceil(float64(len(sorted)+1)*level)) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

// Interval returns the central interval of cell (i, j) at level (0.9 for a
// 90% interval) in the column's units: the mean plus or minus the level's
// conformal quantile of the calibration scores times the cell's
// predictive std, or, without a calibration, the Gaussian quantile times
// it. A baseline's interval is its point prediction (its std is zero).
func (c *Completion) Interval(i, j int, level float64) (lo, hi float64) {
	half := c.Std[i][j] * c.halfWidth(level)
	return c.Mean[i][j] - half, c.Mean[i][j] + half
}

// halfWidth is the interval's half-width at level in units of Std.
func (c *Completion) halfWidth(level float64) float64 {
	if c.Calibration == nil {
		return math.Sqrt2 * math.Erfinv(level)
	}
	return conformalQuantile(c.Calibration, level) / c.calibrationScale()
}

// z90 is the standard normal's 95th percentile: a Gaussian's central
// 90% interval is the mean plus or minus z90 sd.
var z90 = math.Sqrt2 * math.Erfinv(0.9)

// calibrationScale is the factor that turns the predictive std into Std:
// the calibrated 90% half-width over z90, so that the printed spread reads
// as a Gaussian sd would (mean ± 1.645 Std is the calibrated 90%
// interval). A quantile, not the scores' RMS, which one outlying held-out
// cell can swamp (it made spreads of 5-15 column sds).
func (c *Completion) calibrationScale() float64 {
	if s := conformalQuantile(c.Calibration, 0.9) / z90; s > 0 {
		return s
	}
	return 1
}
