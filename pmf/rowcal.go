package pmf

import (
	"math"
	"math/rand/v2"
	"sort"
)

// A row far sparser than the others is a new model's, as predict holds
// one out: its posterior spread is wider than a dense row's, and the
// residuals of cells held out of dense rows say nothing of how much. So
// the calibration also thins a few dense rows to the sparse rows' share
// and gives each sparse row the scores of cells held out of rows like
// it (Mondrian conformal prediction, the rows grouped by how much of
// them is seen). Random masks, whose rows are all about as sparse, have
// no such row: they keep one set of scores.

// sparseRowGap is how far below the median row share a row's share must
// be for the row to be calibrated on rows thinned like it.
const sparseRowGap = 0.25

// rowShareTolerance is how close a thinned row's share must be to a
// sparse row's for its cells' scores to calibrate it.
const rowShareTolerance = 0.15

// donorsPerFold is how many dense rows each fold thins.
const donorsPerFold = 2

// rowShares is each row's share of observed cells.
func rowShares(d *Data) []float64 {
	out := make([]float64, d.Rows())
	for i, row := range d.Values {
		n := 0
		for _, v := range row {
			if !math.IsNaN(v) {
				n++
			}
		}
		out[i] = float64(n) / float64(max(len(row), 1))
	}
	return out
}

// sparseRows returns the rows whose share is sparseRowGap below the
// median, their mean share, and the rows at or above the median (the
// donors a fold may thin).
func sparseRows(d *Data) (sparse []int, share float64, dense []int) {
	shares := rowShares(d)
	sorted := append([]float64(nil), shares...)
	sort.Float64s(sorted)
	median := sorted[len(sorted)/2]
	for i, s := range shares {
		switch {
		case s < median-sparseRowGap:
			sparse = append(sparse, i)
			share += s
		case s >= median:
			dense = append(dense, i)
		}
	}
	if len(sparse) > 0 {
		share /= float64(len(sparse))
	}
	return sparse, share, dense
}

// addSparseRowCells adds to each fold the cells that thin donorsPerFold
// dense rows (different ones each fold where there are enough) down to
// the sparse rows' mean share; a column always keeps one observation.
func addSparseRowCells(d *Data, folds [][][2]int, seed uint64) {
	sparse, share, dense := sparseRows(d)
	if len(sparse) == 0 || len(dense) == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(seed, 0x7370617273))
	rng.Shuffle(len(dense), func(a, b int) { dense[a], dense[b] = dense[b], dense[a] })
	for f := range folds {
		hidden := map[[2]int]bool{}
		left := make([]int, d.Cols())
		for _, row := range d.Values {
			for j, v := range row {
				if !math.IsNaN(v) {
					left[j]++
				}
			}
		}
		for _, ij := range folds[f] {
			hidden[ij] = true
			left[ij[1]]--
		}
		for k := range donorsPerFold {
			i := dense[(f*donorsPerFold+k)%len(dense)]
			keep := int(math.Round(share * float64(d.Cols())))
			seen := 0
			var cand []int
			for j, v := range d.Values[i] {
				if !math.IsNaN(v) && !hidden[[2]int{i, j}] {
					seen++
					cand = append(cand, j)
				}
			}
			rng.Shuffle(len(cand), func(a, b int) { cand[a], cand[b] = cand[b], cand[a] })
			for _, j := range cand {
				if seen <= keep {
					break
				}
				if left[j] >= 2 {
					hidden[[2]int{i, j}] = true
					left[j]--
					seen--
					folds[f] = append(folds[f], [2]int{i, j})
				}
			}
		}
	}
}

// sortedScores are the held-out cells' scores, sorted: every row's
// calibration but the sparse rows'.
func sortedScores(cells []heldOut) []float64 {
	out := make([]float64, len(cells))
	for k, h := range cells {
		out[k] = h.score
	}
	sort.Float64s(out)
	return out
}

// rowCalibrations gives each row of d far sparser than the rest the
// sorted scores of cells held out of rows thinned like it, where there
// are at least minCalibrationCells of them.
func rowCalibrations(d *Data, cells []heldOut) map[int][]float64 {
	sparse, _, _ := sparseRows(d)
	shares := rowShares(d)
	out := map[int][]float64{}
	for _, i := range sparse {
		var own []float64
		for _, h := range cells {
			if math.Abs(h.rowShare-shares[i]) <= rowShareTolerance {
				own = append(own, h.score)
			}
		}
		if len(own) >= minCalibrationCells {
			sort.Float64s(own)
			out[i] = own
		}
	}
	return out
}

// scoresOf are the scores that calibrate row i.
func (c *Completion) scoresOf(i int) []float64 {
	if s, ok := c.rowCalibration[i]; ok {
		return s
	}
	return c.Calibration
}
