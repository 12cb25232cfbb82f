package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gatepipe/gatepipe/engine"
	commandnode "github.com/gatepipe/gatepipe/nodes/command"
	"github.com/gatepipe/gatepipe/pmf"
	"github.com/gatepipe/gatepipe/report"
	"github.com/rs/zerolog"
)

// budget runs at most n experiments (instances that evaluate a model on a
// benchmark) in batches, choosing each batch by an acquisition rule on the
// results matrix completed by PMF, refitted between batches.
type budget struct {
	n, batch int
	rule     string
	method   string
	prior    string // a results matrix of known cells ("" for none)
	spent    int
}

// choice is one round's decision.
type choice struct {
	hold   func(addr string) bool
	chosen []engine.Experiment
	// resolve: no experiment can be chosen yet (their cells wait on
	// dependencies), so the round runs everything else.
	resolve bool
	done    bool
	// rule is the rule that chose (random when the matrix could not be
	// completed yet).
	rule string
}

// next decides the round: which pending experiments run, which are held.
func (b *budget) next(ctx context.Context, exps []engine.Experiment, log zerolog.Logger, seed uint64) (choice, error) {
	var pendingKnown, pendingUnknown []engine.Experiment
	for _, x := range exps {
		switch {
		case x.Cached:
		case x.Known:
			pendingKnown = append(pendingKnown, x)
		default:
			pendingUnknown = append(pendingUnknown, x)
		}
	}
	pending := map[string]bool{} // apply asks once per instance: no scan
	for _, x := range exps {
		if !x.Cached {
			pending[x.Addr] = true
		}
	}
	holdAll := func(addr string) bool { return pending[addr] }
	left := b.n - b.spent
	if left <= 0 || len(pendingKnown)+len(pendingUnknown) == 0 {
		return choice{hold: holdAll, done: true}, nil
	}
	if len(pendingKnown) == 0 {
		return choice{hold: holdAll, resolve: true}, nil
	}
	d, rows, cols, err := b.matrix(exps)
	if err != nil {
		return choice{}, err
	}
	type cellKey struct{ m, b string }
	var cand [][2]int
	seen := map[cellKey]bool{}
	for _, x := range pendingKnown {
		k := cellKey{x.Model, x.Benchmark}
		if seen[k] {
			continue
		}
		seen[k] = true
		cand = append(cand, [2]int{slices.Index(rows, x.Model), slices.Index(cols, x.Benchmark)})
	}
	k := min(b.batch, left, len(cand))
	rng := rand.New(rand.NewPCG(seed, uint64(b.spent)))
	rule := b.rule
	var comp *pmf.Completion
	if rule != "random" {
		m, _ := pmf.New(b.method, pmf.DefaultOptions())
		s := m.(*pmf.Sampler)
		s.Opts.KeepDraws = rule == "variance"
		s.Opts.CalibrationFolds = 0 // the rules rank the posterior's own spread
		if comp, err = s.Complete(ctx, d, seed); err != nil {
			log.Warn().Err(err).Msg("budget: the results matrix cannot be completed yet; choosing at random")
			rule = "random"
		}
	}
	picked, err := pmf.AcquireAmong(rule, d, comp, nil, cand, k, rng)
	if err != nil {
		return choice{}, err
	}
	chosenCells := map[cellKey]bool{}
	for _, ij := range picked {
		chosenCells[cellKey{rows[ij[0]], cols[ij[1]]}] = true
	}
	var chosen []engine.Experiment
	run := map[string]bool{}
	for _, x := range pendingKnown {
		if chosenCells[cellKey{x.Model, x.Benchmark}] {
			chosen = append(chosen, x)
			run[x.Addr] = true
		}
	}
	for _, ij := range picked {
		ev := log.Info().Str("model", rows[ij[0]]).Str("benchmark", cols[ij[1]]).Str("rule", rule)
		if comp != nil && !math.IsNaN(comp.Mean[ij[0]][ij[1]]) {
			ev = ev.Float64("predicted", comp.Mean[ij[0]][ij[1]]).Float64("spread", comp.Std[ij[0]][ij[1]])
		}
		ev.Msg("budget: chosen")
	}
	b.spent += len(picked)
	hold := func(addr string) bool { return holdAll(addr) && !run[addr] }
	return choice{hold: hold, chosen: chosen, rule: rule}, nil
}

// matrix builds the model x benchmark matrix of headline results: the
// prior matrix's primary column per benchmark, and every cached
// experiment's value of the same metric (else its own headline metric).
func (b *budget) matrix(exps []engine.Experiment) (*pmf.Data, []string, []string, error) {
	var rows, cols []string
	metricOf := map[string]string{}
	vals := map[[2]string]float64{}
	add := func(model, bench string) {
		if !slices.Contains(rows, model) {
			rows = append(rows, model)
		}
		if !slices.Contains(cols, bench) {
			cols = append(cols, bench)
		}
	}
	if b.prior != "" {
		m, err := loadMatrixFile(b.prior)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("budget prior: %w", err)
		}
		m = m.Select("primary")
		for j, c := range m.Columns {
			metricOf[c.Benchmark] = c.Metric
			for i, model := range m.Models {
				add(model, c.Benchmark)
				if v := m.Values[i][j]; !math.IsNaN(v) {
					vals[[2]string{model, c.Benchmark}] = v
				}
			}
		}
	}
	for _, x := range exps {
		if !x.Known {
			continue
		}
		add(x.Model, x.Benchmark)
		if !x.Cached || x.Metrics == "" {
			continue
		}
		met, err := commandnode.ReadMetrics(x.Metrics)
		if err != nil {
			continue // a node without the trainer protocol's metrics
		}
		name := metricOf[x.Benchmark]
		if _, ok := met.Metrics[name]; !ok {
			values, higher := map[string]float64{}, map[string]bool{}
			for k, v := range met.Metrics {
				values[k], higher[k] = v.Value, v.HigherIsBetter
			}
			name = report.PrimaryMetric(met.Primary, values, higher)
			if metricOf[x.Benchmark] == "" {
				metricOf[x.Benchmark] = name
			} else if name != metricOf[x.Benchmark] {
				continue // a different metric than the column's
			}
		}
		if v, ok := met.Metrics[name]; ok && !math.IsNaN(v.Value) && !math.IsInf(v.Value, 0) {
			vals[[2]string{x.Model, x.Benchmark}] = v.Value
		}
	}
	d := &pmf.Data{Values: make([][]float64, len(rows))}
	for i, model := range rows {
		d.Values[i] = make([]float64, len(cols))
		for j, bench := range cols {
			v, ok := vals[[2]string{model, bench}]
			if !ok {
				v = math.NaN()
			}
			d.Values[i][j] = v
		}
	}
	return d, rows, cols, nil
}

// describe lists experiments' cells for a log line.
func describe(xs []engine.Experiment) string {
	var s []string
	for _, x := range xs {
		s = append(s, x.Model+"/"+x.Benchmark)
	}
	return strings.Join(s, ", ")
}
