package command

import (
	"fmt"
	"math"
	"slices"
)

// AggregateSeeds combines the metrics of one experiment trained once per
// seed (runs[i] with seeds[i]) into one: each metric's mean, its sample
// standard deviation (n-1; 0 for one seed), n and the per-seed values. A
// metric must be in every run, with one direction.
func AggregateSeeds(runs []Metrics, seeds []uint64) (Metrics, error) {
	if len(runs) == 0 || len(runs) != len(seeds) {
		return Metrics{}, fmt.Errorf("aggregating seeds: %d results for %d seeds", len(runs), len(seeds))
	}
	first := runs[0]
	out := Metrics{Model: first.Model, Benchmark: first.Benchmark, Category: first.Category, Primary: first.Primary,
		Seeds: slices.Clone(seeds), Metrics: map[string]Metric{}}
	for name, m0 := range first.Metrics {
		vals := make([]float64, len(runs))
		for i, r := range runs {
			m, ok := r.Metrics[name]
			if !ok {
				return Metrics{}, fmt.Errorf("aggregating seeds: seed %d has no %q", seeds[i], name)
			}
			if m.HigherIsBetter != m0.HigherIsBetter {
				return Metrics{}, fmt.Errorf("aggregating seeds: %q changes direction at seed %d", name, seeds[i])
			}
			vals[i] = m.Value
		}
		mean, std := MeanStd(vals)
		out.Metrics[name] = Metric{Value: mean, HigherIsBetter: m0.HigherIsBetter, Std: &std, N: len(vals), Values: vals}
	}
	for i, r := range runs[1:] {
		if len(r.Metrics) != len(first.Metrics) {
			return Metrics{}, fmt.Errorf("aggregating seeds: seed %d has %d metrics, seed %d has %d", seeds[i+1], len(r.Metrics), seeds[0], len(first.Metrics))
		}
	}
	return out, nil
}

// MeanStd returns the mean of xs and their sample standard deviation
// (n-1 in the denominator, as numpy's std(ddof=1) and torch.std; 0 for
// fewer than two values).
func MeanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return math.NaN(), 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}
