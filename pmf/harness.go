package pmf

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// EvalOptions configure the masked-ratio protocol of the paper (§4.2).
type EvalOptions struct {
	// Ratios are the shares of observed entries hidden (the test ratio P).
	Ratios []float64
	// Seeds is the number of random masks per ratio.
	Seeds int
	// Workers fit in parallel (at least 1).
	Workers int
	// HideColumns is the number of columns each mask also hides wholly
	// (chosen by the seed): no method can predict a column it has no
	// observation of, and Coverage shows how many cells that leaves out.
	HideColumns int
}

// DefaultEvalOptions are the paper's: P in {20, 40, 60, 80, 90, 95}%, 10
// seeds.
func DefaultEvalOptions() EvalOptions {
	return EvalOptions{Ratios: []float64{0.2, 0.4, 0.6, 0.8, 0.9, 0.95}, Seeds: 10, Workers: 1}
}

// EvalRow is one method at one test ratio, over the seeds.
type EvalRow struct {
	Method string  `json:"method"`
	Ratio  float64 `json:"ratio"`
	RMSE   Stat    `json:"rmse"`
	MAE    Stat    `json:"mae"`
	R2     Stat    `json:"r2"`
	// StdErrCorr is the Spearman correlation between the posterior std and
	// the absolute error over the hidden cells (samplers only).
	StdErrCorr Stat `json:"std_err_spearman"`
	// Coverage is the share of hidden cells that could be scored: a cell
	// whose column kept no observation is predicted by no method (see
	// Completion.Predicts) and left out for all of them.
	Coverage Stat `json:"coverage"`
	// Cover90 and Cover95 are the shares of the scored hidden cells inside
	// their 90% and 95% intervals (Completion.Interval; samplers only).
	Cover90 Stat `json:"interval90_coverage"`
	Cover95 Stat `json:"interval95_coverage"`
}

// Units returns the complete matrix's per-column normalisation: errors
// and R² are computed on values z-scored with it (each column's z-score
// units of the full matrix), the same for every mask, so ratios and seeds
// compare.
func Units(d *Data) Scale {
	_, s := Normalise(&Data{Values: d.Values, Metric: d.Metric})
	return s
}

// Evaluate runs every method on every (ratio, seed) mask of d's observed
// entries and scores the hidden ones. progress, if not nil, is called
// after each fit with the number done and the total.
func Evaluate(ctx context.Context, d *Data, methods []Method, o EvalOptions, progress func(done, total int)) ([]EvalRow, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	if o.Seeds < 1 || len(o.Ratios) == 0 || len(methods) == 0 {
		return nil, fmt.Errorf("evaluation needs at least one ratio, seed and method")
	}
	for _, r := range o.Ratios {
		if r <= 0 || r >= 1 {
			return nil, fmt.Errorf("test ratio %v is not between 0 and 1", r)
		}
	}
	results := make([][][]evalScore, len(o.Ratios))
	var jobs []evalJob
	for r := range o.Ratios {
		results[r] = make([][]evalScore, o.Seeds)
		for s := 0; s < o.Seeds; s++ {
			results[r][s] = make([]evalScore, len(methods))
			for m := range methods {
				jobs = append(jobs, evalJob{r, s, m})
			}
		}
	}
	if err := runEvalJobs(ctx, d, methods, o, jobs, results, progress); err != nil {
		return nil, err
	}
	var rows []EvalRow
	for r, ratio := range o.Ratios {
		for m, method := range methods {
			rows = append(rows, summarise(method.Name(), ratio, results[r], m))
		}
	}
	return rows, nil
}

// evalJob is one fit: a method on the mask of a ratio and seed.
type evalJob struct{ ratio, seed, method int }

// evalScore is how one fit did on the hidden cells.
type evalScore struct {
	rmse, mae, r2, corr, coverage float64
	in90, in95                    float64
}

// runEvalJobs fits and scores the jobs on o.Workers goroutines into
// results[ratio][seed][method]; the first error stops the others.
func runEvalJobs(ctx context.Context, d *Data, methods []Method, o EvalOptions, jobs []evalJob, results [][][]evalScore, progress func(done, total int)) error {
	units := Units(d)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan evalJob)
	for w := 0; w < max(o.Workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				masked, hidden := maskShare(d, o.Ratios[j.ratio], uint64(j.seed))
				hidden = hideColumns(d, masked, hidden, o.HideColumns, uint64(j.seed))
				c, err := methods[j.method].Complete(ctx, masked, uint64(j.seed))
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s at %.0f%% hidden, seed %d: %w", methods[j.method].Name(), 100*o.Ratios[j.ratio], j.seed, err)
					cancel()
				}
				if err == nil {
					var res evalScore
					res.rmse, res.mae, res.r2, res.corr, res.coverage = score(c, d, hidden, units)
					res.in90, res.in95 = intervalCoverage(c, d, hidden, 0.9), intervalCoverage(c, d, hidden, 0.95)
					results[j.ratio][j.seed][j.method] = res
				}
				done++
				if progress != nil {
					progress(done, len(jobs))
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// summarise is one method's row at one ratio: each score's statistics
// over the seeds (bySeed[seed][method]).
func summarise(method string, ratio float64, bySeed [][]evalScore, m int) EvalRow {
	var rm, ma, r2, co, cv, in90, in95 []float64
	for _, seed := range bySeed {
		res := seed[m]
		rm, ma, r2, cv = append(rm, res.rmse), append(ma, res.mae), append(r2, res.r2), append(cv, res.coverage)
		if !math.IsNaN(res.corr) {
			co = append(co, res.corr)
		}
		if !math.IsNaN(res.in90) {
			in90, in95 = append(in90, res.in90), append(in95, res.in95)
		}
	}
	return EvalRow{Method: method, Ratio: ratio, RMSE: statOf(rm), MAE: statOf(ma), R2: statOf(r2), StdErrCorr: statOf(co), Coverage: statOf(cv),
		Cover90: statOf(in90), Cover95: statOf(in95)}
}

// maskShare hides round(share x observed) of d's observed cells, chosen
// by seed (the same cells for every method). The cells kept are drawn at
// random too, except that each column keeps one observed cell first while
// the kept count allows: a column that lost every observation has no units
// of its own to be predicted in (Normalise can only borrow a scale), and
// the protocol scores every hidden cell.
func maskShare(d *Data, share float64, seed uint64) (*Data, [][2]int) {
	var obs [][2]int
	for i, row := range d.Values {
		for j, v := range row {
			if !math.IsNaN(v) {
				obs = append(obs, [2]int{i, j})
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d61736b))
	rng.Shuffle(len(obs), func(a, b int) { obs[a], obs[b] = obs[b], obs[a] })
	keep := len(obs) - int(math.Round(share*float64(len(obs))))
	kept := make([]bool, len(obs))
	covered := map[int]bool{}
	n := 0
	for k, ij := range obs {
		if n < keep && !covered[ij[1]] {
			kept[k], covered[ij[1]] = true, true
			n++
		}
	}
	for k := range obs {
		if n < keep && !kept[k] {
			kept[k] = true
			n++
		}
	}
	var hidden [][2]int
	for k, ij := range obs {
		if !kept[k] {
			hidden = append(hidden, ij)
		}
	}
	return withHidden(d, hidden), hidden
}

// hideColumns hides k of d's columns wholly in masked (chosen by seed,
// the same for every method), adding their cells to hidden.
func hideColumns(d, masked *Data, hidden [][2]int, k int, seed uint64) [][2]int {
	if k <= 0 {
		return hidden
	}
	rng := rand.New(rand.NewPCG(seed, 0x636f6c73))
	gone := map[[2]int]bool{}
	for _, ij := range hidden {
		gone[ij] = true
	}
	for _, j := range rng.Perm(d.Cols())[:min(k, d.Cols())] {
		for i := range d.Values {
			if !math.IsNaN(d.Values[i][j]) && !gone[[2]int{i, j}] {
				masked.Values[i][j] = math.NaN()
				hidden = append(hidden, [2]int{i, j})
			}
		}
	}
	return hidden
}

// score compares c with the truth d on the hidden cells, in units.
func score(c *Completion, d *Data, hidden [][2]int, units Scale) (rmse, mae, r2, corr, coverage float64) {
	var pred, truth, std, abs []float64
	for _, ij := range hidden {
		i, j := ij[0], ij[1]
		p := c.Mean[i][j]
		if math.IsNaN(p) || !c.Predicts(j) {
			continue
		}
		u := units.Std[j]
		pred = append(pred, (p-units.Mean[j])/u)
		truth = append(truth, (d.Values[i][j]-units.Mean[j])/u)
		std = append(std, c.Std[i][j]/u)
		abs = append(abs, math.Abs(p-d.Values[i][j])/u)
	}
	coverage = float64(len(pred)) / float64(len(hidden))
	if len(pred) == 0 {
		return math.NaN(), math.NaN(), math.NaN(), math.NaN(), 0
	}
	rmse, mae, r2 = errorStats(pred, truth)
	corr = math.NaN()
	if c.Draws != nil || !math.IsNaN(c.Noise) {
		corr = spearman(std, abs)
	}
	return rmse, mae, r2, corr, coverage
}

// intervalCoverage is the share of the scored hidden cells whose truth
// lies inside their interval at level (NaN for a baseline, which has no
// spread, or when no cell is scored).
func intervalCoverage(c *Completion, d *Data, hidden [][2]int, level float64) float64 {
	if c.LatentStd == nil {
		return math.NaN()
	}
	in, n := 0, 0
	for _, ij := range hidden {
		i, j := ij[0], ij[1]
		if math.IsNaN(c.Mean[i][j]) || !c.Predicts(j) {
			continue
		}
		lo, hi := c.Interval(i, j, level)
		if v := d.Values[i][j]; v >= lo && v <= hi {
			in++
		}
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return float64(in) / float64(n)
}
