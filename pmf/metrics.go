package pmf

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/gonum/stat"
)

// Stat is a mean and standard deviation over seeds.
type Stat struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// MarshalJSON writes NaN (a score that does not apply) as null.
func (s Stat) MarshalJSON() ([]byte, error) {
	f := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "null"
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	return []byte(`{"mean":` + f(s.Mean) + `,"std":` + f(s.Std) + `}`), nil
}

// UnmarshalJSON reads null as NaN.
func (s *Stat) UnmarshalJSON(b []byte) error {
	var raw struct{ Mean, Std *float64 }
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	s.Mean, s.Std = math.NaN(), math.NaN()
	if raw.Mean != nil {
		s.Mean = *raw.Mean
	}
	if raw.Std != nil {
		s.Std = *raw.Std
	}
	return nil
}

func statOf(v []float64) Stat {
	switch len(v) {
	case 0:
		return Stat{math.NaN(), math.NaN()}
	case 1:
		return Stat{Mean: v[0]}
	}
	mean, std := stat.MeanStdDev(v, nil)
	return Stat{Mean: mean, Std: std}
}

// errors summarises predictions against truth: root mean squared error,
// mean absolute error and R² (1 - SSE/SST about the truth's mean).
func errorStats(pred, truth []float64) (rmse, mae, r2 float64) {
	var sse, sae, mean float64
	for i := range pred {
		e := pred[i] - truth[i]
		sse += e * e
		sae += math.Abs(e)
		mean += truth[i]
	}
	n := float64(len(pred))
	mean /= n
	var sst float64
	for _, t := range truth {
		sst += (t - mean) * (t - mean)
	}
	r2 = math.NaN()
	if sst > 0 {
		r2 = 1 - sse/sst
	}
	return math.Sqrt(sse / n), sae / n, r2
}

// spearman is the rank correlation of a and b (average ranks for ties).
func spearman(a, b []float64) float64 {
	return stat.Correlation(ranks(a), ranks(b), nil) // NaN when either is constant
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(x, y int) bool { return v[idx[x]] < v[idx[y]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}
