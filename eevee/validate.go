package eevee

import (
	"fmt"
	"math"
	"sort"
)

// LOMORow summarises one prediction method under leave-one-model-out.
type LOMORow struct {
	Method string `json:"method"`
	// MAE and RMSE of predicted vs actual metrics, in units of each
	// column's standard deviation over the remaining models.
	MAE  float64 `json:"mae_z"`
	RMSE float64 `json:"rmse_z"`
	// MedAE is the median absolute error: robust to the few metrics (large
	// printed losses) where one model lies far outside the others.
	MedAE float64 `json:"medae_z"`
	// RankRho is the Spearman correlation, across the held-out models, of
	// predicted and actual mean rank among the pool.
	RankRho float64 `json:"rank_spearman"`
	// MetricRho is the mean over held-out models of the Spearman
	// correlation between predicted and actual metric vectors (z units).
	MetricRho float64 `json:"metric_spearman"`
	// PositionError is the mean absolute difference of predicted and
	// actual position among the pool's models.
	PositionError float64 `json:"position_error"`
}

// LeaveOneModelOut holds each model of m out in turn, trains on the rest,
// and predicts its results on every column from its results on the tier,
// with the meta-model and two baselines: the pool mean, and the value at
// the model's mean rank on the tier.
func LeaveOneModelOut(m *Matrix, o Options, tier []string) ([]LOMORow, error) {
	methods := []string{"eevee meta-model", "pool mean", "mean rank on tier"}
	type acc struct {
		abs, sq, n, rho, posErr float64
		errs                    []float64
		predRank, trueRank      []float64
	}
	accs := make([]acc, len(methods))
	if len(m.Models) < MinModels+1 {
		return nil, fmt.Errorf("leave-one-model-out needs at least %d models, the matrix has %d", MinModels+1, len(m.Models))
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// The held-out model's row is compared with predictions over the
	// problem's columns (o.Columns may keep some only): select them here,
	// so that row and prediction index the same columns.
	m = selectColumns(m, o.Columns)
	for held := range m.Models {
		rest := &Matrix{Columns: m.Columns}
		for i := range m.Models {
			if i != held {
				rest.Models = append(rest.Models, m.Models[i])
				rest.Values = append(rest.Values, m.Values[i])
			}
		}
		p, err := NewProblem(rest, o)
		if err != nil {
			return nil, err
		}
		tierIdx, err := p.Combo(tier)
		if err != nil {
			return nil, err
		}
		actual := m.Values[held]
		pred, err := p.Predict(tierIdx, actual)
		if err != nil {
			return nil, err
		}
		preds := [][]float64{pred.Mean, append([]float64(nil), p.mean...), p.rankBaseline(tierIdx, actual)}
		truth := p.Place(actual)
		for k, pv := range preds {
			a := &accs[k]
			zp, za := make([]float64, len(pv)), make([]float64, len(pv))
			for c := range pv {
				zp[c] = (pv[c] - p.mean[c]) / p.std[c]
				za[c] = (actual[c] - p.mean[c]) / p.std[c]
				d := zp[c] - za[c]
				a.abs += math.Abs(d)
				a.errs = append(a.errs, math.Abs(d))
				a.sq += d * d
				a.n++
			}
			a.rho += spearman(zp, za)
			pl := p.Place(pv)
			a.predRank = append(a.predRank, pl.MeanRank)
			a.trueRank = append(a.trueRank, truth.MeanRank)
			a.posErr += math.Abs(float64(pl.Position - truth.Position))
		}
	}
	out := make([]LOMORow, len(methods))
	nm := float64(len(m.Models))
	for k, a := range accs {
		sort.Float64s(a.errs)
		out[k] = LOMORow{Method: methods[k], MAE: a.abs / a.n, RMSE: math.Sqrt(a.sq / a.n), MedAE: a.errs[len(a.errs)/2],
			RankRho: spearman(a.predRank, a.trueRank), MetricRho: a.rho / nm, PositionError: a.posErr / nm}
	}
	return out, nil
}

// rankBaseline predicts each column as the pool's value at the model's
// mean relative rank on the tier's columns (0 = best, 1 = worst),
// interpolating between the pool's sorted values.
func (p *Problem) rankBaseline(tier []int, values []float64) []float64 {
	m := p.Matrix
	n := len(m.Models)
	var q float64
	var cnt int
	for _, b := range tier {
		for _, c := range p.benchCols[b] {
			better := 0
			for i := 0; i < n; i++ {
				if m.Columns[c].HigherIsBetter && m.Values[i][c] > values[c] || !m.Columns[c].HigherIsBetter && m.Values[i][c] < values[c] {
					better++
				}
			}
			q += float64(better) / float64(n)
			cnt++
		}
	}
	q /= float64(cnt)
	out := make([]float64, len(m.Columns))
	col := make([]float64, n)
	for c := range m.Columns {
		for i := 0; i < n; i++ {
			col[i] = m.Values[i][c]
		}
		sort.Float64s(col)
		if m.Columns[c].HigherIsBetter { // best first
			for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
				col[i], col[j] = col[j], col[i]
			}
		}
		pos := q * float64(n-1)
		lo := int(pos)
		hi := min(lo+1, n-1)
		out[c] = col[lo] + (col[hi]-col[lo])*(pos-float64(lo))
	}
	return out
}

// StrongestBaseline returns the baseline row (any row after the first,
// the meta-model's) with the lowest MAE.
func StrongestBaseline(rows []LOMORow) (LOMORow, bool) {
	if len(rows) < 2 {
		return LOMORow{}, false
	}
	best := rows[1]
	for _, r := range rows[2:] {
		if r.MAE < best.MAE {
			best = r
		}
	}
	return best, true
}

// BeatsBaselines reports whether the meta-model (rows[0]) beats the
// strongest baseline: an MAE at least 5% lower and a lower median error.
func BeatsBaselines(rows []LOMORow) bool {
	b, ok := StrongestBaseline(rows)
	return ok && rows[0].MAE <= 0.95*b.MAE && rows[0].MedAE < b.MedAE
}

// BaselineVerdict compares the meta-model's leave-one-model-out errors
// (rows[0]) with the strongest trivial baseline's, in one sentence with
// both figures (see BeatsBaselines).
func BaselineVerdict(rows []LOMORow) string {
	b, ok := StrongestBaseline(rows)
	if !ok {
		return ""
	}
	m := rows[0]
	figures := fmt.Sprintf("MAE %.3f vs %.3f, median %.3f vs %.3f (column std units)", m.MAE, b.MAE, m.MedAE, b.MedAE)
	if BeatsBaselines(rows) {
		return fmt.Sprintf("The meta-model beats the strongest trivial baseline (%s): %s.", b.Method, figures)
	}
	return fmt.Sprintf("The meta-model does not clearly beat the strongest trivial baseline (%s): %s; predicting each metric from the model's mean rank on the tier does about as well.", b.Method, figures)
}
