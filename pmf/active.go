package pmf

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
)

// Rules lists the acquisition rules Acquire knows:
//
//   - "random": uniformly among the unobserved cells;
//   - "uncertainty": the largest posterior std (the paper's rule), in
//     units of each column's standard deviation (the z-scores the model
//     is fitted on), so that a loss column of scale 1000 does not outrank
//     an accuracy column of scale 1 by its units alone;
//   - "uncertainty_raw": the largest posterior std in each column's own
//     units, as an implementation that ranks the denormalised std does
//     (the alternative to "uncertainty", kept to compare);
//   - "variance": the largest expected reduction of the summed posterior
//     variance of all unobserved cells, greedily for a batch, from the
//     posterior draws' covariance (an observation of cell c with noise σ²
//     shrinks cell j's variance by Cov(c,j)²/(Var(c)+σ²)); it prefers cells
//     that inform many others over isolated uncertain ones;
//   - "oracle": the largest actual absolute error (needs the truth; an
//     upper bound for simulation only).
func Rules() []string {
	return []string{"random", "uncertainty", "uncertainty_raw", "variance", "oracle"}
}

// Acquire picks up to n unobserved cells of d by rule, from the completion
// c (fitted on d). truth is needed by "oracle" only. Cells in columns with
// no observation of their own go first under every rule but random: only
// a borrowed scale is known of them.
func Acquire(rule string, d *Data, c *Completion, truth [][]float64, n int, rng *rand.Rand) ([][2]int, error) {
	var cand [][2]int
	for i, row := range d.Values {
		for j, v := range row {
			if math.IsNaN(v) && (truth == nil || !math.IsNaN(truth[i][j])) {
				cand = append(cand, [2]int{i, j})
			}
		}
	}
	return AcquireAmong(rule, d, c, truth, cand, n, rng)
}

// AcquireAmong is Acquire restricted to the candidate cells cand (those
// that can be run); the variance rule sums the variance reductions over
// the candidates.
func AcquireAmong(rule string, d *Data, c *Completion, truth [][]float64, cand [][2]int, n int, rng *rand.Rand) ([][2]int, error) {
	cand = append([][2]int(nil), cand...)
	n = min(n, len(cand))
	if n == 0 {
		return nil, nil
	}
	cols := d.Cols()
	switch rule {
	case "random":
		rng.Shuffle(len(cand), func(a, b int) { cand[a], cand[b] = cand[b], cand[a] })
		return cand[:n], nil
	case "uncertainty", "uncertainty_raw", "oracle":
		if c.LatentStd == nil && rule != "oracle" {
			return nil, fmt.Errorf("the %s rule needs a sampler's posterior spread", rule)
		}
		score := func(ij [2]int) float64 {
			i, j := ij[0], ij[1]
			switch {
			case !c.Scale.Observed(j):
				return math.Inf(1)
			case rule == "oracle":
				return math.Abs(c.Mean[i][j]-truth[i][j]) / c.Scale.Std[j]
			case rule == "uncertainty_raw":
				return c.LatentStd[i][j]
			}
			return c.LatentStd[i][j] / c.Scale.Std[j]
		}
		sort.SliceStable(cand, func(a, b int) bool { return score(cand[a]) > score(cand[b]) })
		return cand[:n], nil
	case "variance":
		if c.Draws == nil {
			return nil, fmt.Errorf("the variance rule needs posterior draws (a sampler with KeepDraws)")
		}
		return greedyVariance(c, cand, cols, n), nil
	}
	return nil, fmt.Errorf("unknown acquisition rule %q (want one of %s)", rule, strings.Join(Rules(), ", "))
}

// greedyVariance picks n cells one by one, each maximising the summed
// variance reduction over the candidates, then conditions the covariance
// on it (Gaussian update), so a batch does not pile onto one region.
func greedyVariance(c *Completion, cand [][2]int, cols, n int) [][2]int {
	var picked [][2]int
	var rest [][2]int
	for _, ij := range cand { // unknown columns first
		if !c.Scale.Observed(ij[1]) && len(picked) < n {
			picked = append(picked, ij)
		} else {
			rest = append(rest, ij)
		}
	}
	h := len(rest)
	if len(picked) >= n || h == 0 {
		return picked
	}
	k := len(c.Draws)
	mean := make([]float64, h)
	for _, draw := range c.Draws {
		for a, ij := range rest {
			mean[a] += draw[ij[0]*cols+ij[1]]
		}
	}
	for a := range mean {
		mean[a] /= float64(k)
	}
	dev := make([][]float64, h) // centred draws, per cell
	for a, ij := range rest {
		dev[a] = make([]float64, k)
		for s, draw := range c.Draws {
			dev[a][s] = draw[ij[0]*cols+ij[1]] - mean[a]
		}
	}
	cov := make([][]float64, h)
	for a := range cov {
		cov[a] = make([]float64, h)
	}
	for a := 0; a < h; a++ {
		for b := a; b < h; b++ {
			v := dot(dev[a], dev[b]) / float64(k-1)
			cov[a][b], cov[b][a] = v, v
		}
	}
	noise := c.Noise * c.Noise
	taken := make([]bool, h)
	for len(picked) < n {
		best, bestGain := -1, -1.0
		for a := 0; a < h; a++ {
			if taken[a] {
				continue
			}
			var gain float64
			for b := 0; b < h; b++ {
				gain += cov[a][b] * cov[a][b]
			}
			gain /= cov[a][a] + noise
			if gain > bestGain {
				best, bestGain = a, gain
			}
		}
		if best < 0 {
			break
		}
		taken[best] = true
		picked = append(picked, rest[best])
		denom := cov[best][best] + noise
		col := append([]float64(nil), cov[best]...)
		for a := 0; a < h; a++ {
			for b := 0; b < h; b++ {
				cov[a][b] -= col[a] * col[b] / denom
			}
		}
	}
	return picked
}

// ActiveOptions configure the active-evaluation simulation (paper §4.3).
type ActiveOptions struct {
	// Start is the share of observed cells revealed at the start (the
	// paper: 20%, i.e. 80% masked).
	Start float64
	// Batch cells are revealed per round, Rounds times, refitting between.
	Batch, Rounds int
	Seeds         int
	Rules         []string
	Workers       int
}

// DefaultActiveOptions: 20% revealed at the start, 10 batches of 20
// cells, 10 seeds, every rule.
func DefaultActiveOptions() ActiveOptions {
	return ActiveOptions{Start: 0.2, Batch: 20, Rounds: 10, Seeds: 10, Rules: Rules(), Workers: 1}
}

// Curve is one rule's error after each round, over the seeds. Point 0 is
// before any acquisition.
type Curve struct {
	Rule     string `json:"rule"`
	Revealed []int  `json:"revealed"` // cells observed at each point
	RMSE     []Stat `json:"rmse"`
	MAE      []Stat `json:"mae"`
}

// Simulate runs active evaluation on the complete matrix d for each rule
// and seed: start from Start of its cells, fit method, acquire a batch,
// reveal it, refit; after each fit it scores the completed matrix over
// the cells hidden at the start (a revealed cell counts with its true
// value), in the full matrix's column units.
func Simulate(ctx context.Context, d *Data, method *Sampler, o ActiveOptions, progress func(done, total int)) ([]Curve, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	if o.Start <= 0 || o.Start >= 1 || o.Batch < 1 || o.Rounds < 1 || o.Seeds < 1 || len(o.Rules) == 0 {
		return nil, fmt.Errorf("active evaluation needs a start share between 0 and 1 and at least one batch, round, seed and rule")
	}
	units := Units(d)
	type result struct{ rmse, mae []float64 }
	res := make([][]result, len(o.Rules))
	for r := range res {
		res[r] = make([]result, o.Seeds)
	}
	revealed := make([]int, o.Rounds+1)
	var mu sync.Mutex
	total, done := len(o.Rules)*o.Seeds*(o.Rounds+1), 0
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(o.Workers, 1))
	for r, rule := range o.Rules {
		for s := 0; s < o.Seeds; s++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				rm, ma, counts, err := simulateOne(ctx, d, method, rule, o, uint64(s), units, func() {
					mu.Lock()
					done++
					if progress != nil {
						progress(done, total)
					}
					mu.Unlock()
				})
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("rule %s, seed %d: %w", rule, s, err)
				}
				res[r][s] = result{rm, ma}
				copy(revealed, counts)
			}()
		}
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	var curves []Curve
	for r, rule := range o.Rules {
		cv := Curve{Rule: rule, Revealed: revealed}
		for p := 0; p <= o.Rounds; p++ {
			var rm, ma []float64
			for s := 0; s < o.Seeds; s++ {
				rm, ma = append(rm, res[r][s].rmse[p]), append(ma, res[r][s].mae[p])
			}
			cv.RMSE, cv.MAE = append(cv.RMSE, statOf(rm)), append(cv.MAE, statOf(ma))
		}
		curves = append(curves, cv)
	}
	return curves, nil
}

func simulateOne(ctx context.Context, d *Data, method *Sampler, rule string, o ActiveOptions, seed uint64, units Scale, tick func()) (rmse, mae []float64, counts []int, err error) {
	cur, hidden := maskShare(d, 1-o.Start, seed) // same start for every rule
	// Every cell hidden at the start is scored in every round (revealed
	// ones exactly), so all rounds and rules score the same cells.
	scored := hidden
	rng := rand.New(rand.NewPCG(seed, 0x61637476))
	sampler := &Sampler{Opts: method.Opts}
	sampler.Opts.KeepDraws = rule == "variance"
	sampler.Opts.CalibrationFolds = 0 // the rules rank the posterior's own spread
	for round := 0; round <= o.Rounds; round++ {
		c, err := sampler.Complete(ctx, cur, seed*1000+uint64(round))
		if err != nil {
			return nil, nil, nil, err
		}
		var pred, truth []float64
		for _, ij := range scored {
			i, j := ij[0], ij[1]
			p := cur.Values[i][j] // revealed: known exactly
			if math.IsNaN(p) {
				p = c.Mean[i][j]
			}
			pred = append(pred, (p-units.Mean[j])/units.Std[j])
			truth = append(truth, (d.Values[i][j]-units.Mean[j])/units.Std[j])
		}
		r, m, _ := errorStats(pred, truth)
		rmse, mae = append(rmse, r), append(mae, m)
		counts = append(counts, cur.Observed())
		tick()
		if round == o.Rounds {
			break
		}
		pick, err := Acquire(rule, cur, c, d.Values, o.Batch, rng)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, ij := range pick {
			cur.Values[ij[0]][ij[1]] = d.Values[ij[0]][ij[1]]
		}
	}
	return rmse, mae, counts, nil
}
