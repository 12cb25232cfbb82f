package pmf

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Method completes a matrix. seed fixes any randomness.
type Method interface {
	Name() string
	Complete(ctx context.Context, d *Data, seed uint64) (*Completion, error)
}

// GlobalMean predicts every cell as the mean of all observed normalised
// entries. Under per-column normalisation that is close to each column's
// observed mean, a stronger baseline than the raw global mean of the paper.
type GlobalMean struct{}

// Name returns "global_mean".
func (GlobalMean) Name() string { return "global_mean" }

// Complete fills every cell with the global mean.
func (GlobalMean) Complete(ctx context.Context, d *Data, seed uint64) (*Completion, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	z, s := Normalise(d)
	g, _ := meanOf(z, func(int, int) bool { return true })
	return constantCompletion("global_mean", z, s, func(int, int) float64 { return g }), nil
}

// MeanOfMeans predicts cell (m, n) as the average of model m's mean,
// column n's mean and the global mean, on the observed normalised entries
// (the paper's second baseline). A model without observations uses the
// global mean in its place.
type MeanOfMeans struct{}

// Name returns "mean_of_means".
func (MeanOfMeans) Name() string { return "mean_of_means" }

// Complete fills every cell with the mean of means.
func (MeanOfMeans) Complete(ctx context.Context, d *Data, seed uint64) (*Completion, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	z, s := Normalise(d)
	g, _ := meanOf(z, func(int, int) bool { return true })
	rowMean := make([]float64, len(z))
	for i := range z {
		m, ok := meanOf(z, func(r, _ int) bool { return r == i })
		if !ok {
			m = g
		}
		rowMean[i] = m
	}
	colMean := make([]float64, d.Cols())
	for j := range colMean {
		m, ok := meanOf(z, func(_, c int) bool { return c == j })
		if !ok {
			m = g
		}
		colMean[j] = m
	}
	return constantCompletion("mean_of_means", z, s, func(i, j int) float64 { return (rowMean[i] + colMean[j] + g) / 3 }), nil
}

func meanOf(z [][]float64, in func(r, c int) bool) (float64, bool) {
	var sum float64
	n := 0
	for i, row := range z {
		for j, v := range row {
			if !math.IsNaN(v) && in(i, j) {
				sum += v
				n++
			}
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

func constantCompletion(name string, z [][]float64, s Scale, value func(i, j int) float64) *Completion {
	mean := make([][]float64, len(z))
	std := make([][]float64, len(z))
	for i := range z {
		mean[i] = make([]float64, len(z[i]))
		std[i] = make([]float64, len(z[i]))
		for j := range z[i] {
			mean[i][j] = value(i, j)
		}
	}
	c := &Completion{Method: name, Noise: math.NaN(), Scale: s}
	c.denormalise(mean, std)
	return c
}

// Methods lists the method names New accepts.
func Methods() []string {
	return []string{"pmf", "bpmf", "ptf", "bptf", "global_mean", "mean_of_means"}
}

// New returns the named method with the given sampler options (ignored by
// the baselines).
func New(name string, o Options) (Method, error) {
	switch name {
	case "pmf", "bpmf", "ptf", "bptf":
		o.Tensor = strings.HasSuffix(name, "ptf")
		o.ARD = strings.HasPrefix(name, "b")
		return &Sampler{Opts: o}, nil
	case "global_mean":
		return GlobalMean{}, nil
	case "mean_of_means":
		return MeanOfMeans{}, nil
	}
	names := Methods()
	sort.Strings(names)
	return nil, fmt.Errorf("unknown method %q (want one of %s)", name, strings.Join(names, ", "))
}
