package predict

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
)

// Interval is the range of positions the placement takes under the
// prediction's own uncertainty: every predicted value moved by its spread
// (the meta-models' ensemble standard deviation, or matrix completion's
// calibrated spread) towards better results (Best) and towards worse ones
// (Worst), measured values kept (eevee.Problem.PlaceRange).
type Interval struct {
	Best  int `json:"best"`
	Worst int `json:"worst"`
}

// Benchmark is one benchmark the encoder was measured on, and what the
// prediction made of it.
type Benchmark struct {
	Benchmark string   `json:"benchmark"`
	Category  string   `json:"category"`
	Metrics   []Metric `json:"metrics"`
	// Placed: some of its measured values are ranked among the pool's
	// models in the placement.
	Placed bool `json:"placed"`
	// Input: the prediction is made from it (a tier benchmark of the
	// meta-model; for matrix completion, any benchmark of the pool).
	Input bool `json:"input"`
	// Reason says why it is left out of the placement (Placed false), or,
	// for a placed benchmark, what of it is not used; empty when all of
	// it is.
	Reason string `json:"reason,omitempty"`
}

// Metric is one measured result.
type Metric struct {
	Metric         string  `json:"metric"`
	Value          float64 `json:"value"`
	HigherIsBetter bool    `json:"higher_is_better"`
	// Placed: ranked in the placement.
	Placed bool `json:"placed"`
}

// measuredBenchmarks lists the benchmarks of mine's model mi with their
// measured metrics, and for each whether the placement ranks it: pool is
// the pool matrix, used the columns the placement ranks (the scoring's
// columns), columns their selection's name, tier the meta-model's inputs
// (nil: every benchmark of the pool is one, as in matrix completion).
func measuredBenchmarks(pool, used, mine *eevee.Matrix, mi int, tier []string, columns string) []Benchmark {
	inPool, inUsed := map[string][]eevee.Column{}, map[string]bool{}
	for _, c := range pool.Columns {
		inPool[c.Benchmark] = append(inPool[c.Benchmark], c)
	}
	for _, c := range used.Columns {
		inUsed[c.Name()] = true
	}
	var out []Benchmark
	index := map[string]int{}
	for j, c := range mine.Columns {
		v := mine.Values[mi][j]
		if math.IsNaN(v) {
			continue
		}
		k, ok := index[c.Benchmark]
		if !ok {
			k = len(out)
			index[c.Benchmark] = k
			out = append(out, Benchmark{Benchmark: c.Benchmark, Category: c.Category})
		}
		b := &out[k]
		placed := inUsed[c.Name()]
		b.Metrics = append(b.Metrics, Metric{Metric: c.Metric, Value: v, HigherIsBetter: c.HigherIsBetter, Placed: placed})
		b.Placed = b.Placed || placed
	}
	for k := range out {
		b := &out[k]
		cols := inPool[b.Benchmark]
		b.Input = len(cols) > 0 && (tier == nil || slices.Contains(tier, b.Benchmark))
		b.Reason = leftOutReason(*b, cols, inUsed, columns)
		if b.Placed && !b.Input && tier != nil {
			b.Reason = joinReasons("not an input of the prediction: it is not in the predict block's tier", b.Reason)
		} else if !b.Placed && len(cols) > 0 && tier != nil && !slices.Contains(tier, b.Benchmark) {
			b.Reason = joinReasons(b.Reason, "and it is not in the predict block's tier (the prediction's inputs) either")
		}
	}
	return out
}

// leftOutReason says why none, or only some, of benchmark b's measured
// metrics are ranked in the placement: cols are the pool's columns of b,
// inUsed the columns the placement ranks.
func leftOutReason(b Benchmark, cols []eevee.Column, inUsed map[string]bool, columns string) string {
	var measured, unplaced []string
	for _, m := range b.Metrics {
		measured = append(measured, m.Metric)
		if !m.Placed {
			unplaced = append(unplaced, metricName(m.Metric, m.HigherIsBetter))
		}
	}
	if len(cols) == 0 {
		return fmt.Sprintf("%s is not a benchmark of the pool matrix, so there are no results of the pool's models to rank it against", b.Benchmark)
	}
	var usedCols, poolCols []string
	for _, c := range cols {
		poolCols = append(poolCols, metricName(c.Metric, c.HigherIsBetter))
		if inUsed[c.Name()] {
			usedCols = append(usedCols, c.Metric)
		}
	}
	switch {
	case len(usedCols) == 0 && columns == "higher_is_better":
		return fmt.Sprintf("the prediction ranks the pool's higher-is-better columns only (columns = %q), and every one of %s's (%s) is lower-is-better; a loss's or an error's scale depends on the training run more than on the encoder",
			columns, b.Benchmark, strings.Join(poolCols, ", "))
	case len(usedCols) == 0:
		return fmt.Sprintf("the prediction ranks the pool's %q columns, and none of %s's (%s) is one", columns, b.Benchmark, strings.Join(poolCols, ", "))
	case !b.Placed:
		return fmt.Sprintf("its measured metrics (%s) are none of the columns the prediction ranks for it (%s)", strings.Join(measured, ", "), strings.Join(usedCols, ", "))
	case len(unplaced) > 0:
		return fmt.Sprintf("%s measured but not ranked: the prediction ranks %s only", strings.Join(unplaced, ", "), strings.Join(usedCols, ", "))
	}
	return ""
}

// metricName is a metric with ↓ when lower is better.
func metricName(m string, higher bool) string {
	if higher {
		return m
	}
	return m + " ↓"
}

func joinReasons(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// project maps v, indexed by the columns from, onto the columns to (by
// name; NaN where from lacks one).
func project(from, to []eevee.Column, v []float64) []float64 {
	idx := make(map[string]int, len(from))
	for j, c := range from {
		idx[c.Name()] = j
	}
	out := make([]float64, len(to))
	for j, c := range to {
		out[j] = math.NaN()
		if k, ok := idx[c.Name()]; ok {
			out[j] = v[k]
		}
	}
	return out
}

// looCommand is the `gatepipe eevee loo` command line that runs the same
// leave-one-model-out computation as a predict block validating with
// options o on the tier (the matrix as the block names it), or "" when
// the block sets a scoring option the command has no flag for. The
// block's exclude is not passed: it leaves the search's candidate pool
// only, which leave-one-model-out does not use.
func looCommand(matrix string, o eevee.Options, tier []string) string {
	d := eevee.Defaults()
	d.Columns, d.Seed, d.Exclude = o.Columns, o.Seed, o.Exclude
	if !reflect.DeepEqual(d, o) {
		return ""
	}
	args := []string{"gatepipe eevee loo", "-matrix", shellQuote(matrix), "-tier", shellQuote(strings.Join(tier, ",")), "-columns", o.Columns}
	if o.Seed != 0 {
		args = append(args, "-seed", strconv.FormatUint(o.Seed, 10))
	}
	return strings.Join(args, " ")
}

// shellQuote single-quotes s for a POSIX shell unless it is plain.
func shellQuote(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-,:+@=", r))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
