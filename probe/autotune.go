package probe

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// TuneConfig is ELEVATER's automatic hyper-parameter search for the
// linear probe (Elevater_Toolkit_IC's hyperparameter_sweep_lr and
// hyperparameter_sweep).
type TuneConfig struct {
	// LRs is the learning-rate grid: logspace(-6, -1, 6) by default.
	LRs []float64
	// WDs is the weight-decay grid: logspace(-6, 6, 97) by default.
	WDs []float64
	// Coarse are the indices into WDs tried first: the 7 points of
	// logspace(-6, 6, 7) by default (every 16th). Refinement then tries
	// the peak +- 8, 4, 2, 1, keeping any better score.
	Coarse []int
	// Epochs per trial (10); the score of a trial is its best validation
	// epoch. FinalEpochs for the final run on train + val (50).
	Epochs, FinalEpochs int
	Batch               int // 32
	Seed                uint64
	Metric              Metric
	// Workers bounds the learning rates searched at once (default 1).
	Workers int
}

// Logspace returns n points from 10^lo to 10^hi, as numpy.logspace.
func Logspace(lo, hi float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		e := lo
		if n > 1 {
			e = lo + (hi-lo)*float64(i)/float64(n-1)
		}
		out[i] = math.Pow(10, e)
	}
	return out
}

// DefaultTune returns the toolkit's defaults with metric m.
func DefaultTune(m Metric) TuneConfig {
	return TuneConfig{
		LRs: Logspace(-6, -1, 6), WDs: Logspace(-6, 6, 97), Coarse: []int{0, 16, 32, 48, 64, 80, 96},
		Epochs: 10, FinalEpochs: 50, Batch: 32, Metric: m, Workers: 1,
	}
}

// The random streams of a search's heads (with the seed, rand.NewPCG's
// two words): every trial starts from the same head and sees the same
// example order (TrialStream); the final run on train + val has its own
// (FinalStream).
const (
	TrialStream uint64 = 0x11ea
	FinalStream uint64 = 0xf1a1
)

// Draws are a training run's random draws: the head's initial weights
// (C x D) and biases, and each epoch's order of the n examples (epoch e's
// at Order[e*n:(e+1)*n]). Another runtime replays them to train the same
// heads as Train.
type Draws struct {
	W, B  []float64
	Order []int32
}

// NewDraws makes the draws of a run of epochs over n examples of width d
// and c classes, from seed and stream, in the order Train takes them.
func NewDraws(d, c, n, epochs int, seed, stream uint64) Draws {
	r := rand.New(rand.NewPCG(seed, stream))
	h := NewLinear(d, c, r)
	out := Draws{W: h.W, B: h.B, Order: make([]int32, 0, n*epochs)}
	for range epochs {
		for _, i := range r.Perm(n) {
			out.Order = append(out.Order, int32(i))
		}
	}
	return out
}

// Trial is one (learning rate, weight decay) tried on the validation split.
type Trial struct {
	LR    float64 `json:"lr"`
	WD    float64 `json:"weight_decay"`
	Score float64 `json:"val_score"`
}

// Tuned is the outcome of a search and its final run.
type Tuned struct {
	LR        float64 `json:"lr"`
	WD        float64 `json:"weight_decay"`
	ValScore  float64 `json:"val_score"`
	TestScore float64 `json:"test_score"`
	Params    int     `json:"trainable_parameters"`
	Trials    []Trial `json:"trials"`
}

// ScoreTolerance is the relative margin by which a score must beat
// another to be better: scores closer than this are ties, and a tie keeps
// the earlier choice. Without it, scores equal but for rounding (the same
// search on another device, where sums run in another order) chose other
// hyperparameters (found on an H200: the torch probe's search took another
// path than Go's on equal validation scores).
const ScoreTolerance = 1e-9

// beats reports whether score s is better than best by more than
// ScoreTolerance (relative, at least absolute).
func beats(s, best float64) bool { return s > best+ScoreTolerance*max(1, math.Abs(best)) }

// trialScore trains a fresh head and returns its best validation score
// over the epochs (0 for a head that diverged, as the toolkit scores a
// failed trial).
func trialScore(train, val Set, classes int, cfg TuneConfig, lr, wd float64) float64 {
	r := rand.New(rand.NewPCG(cfg.Seed, TrialStream))
	h := NewLinear(train.D, classes, r)
	best := 0.0
	h.Train(train, LinearConfig{LR: lr, WeightDecay: wd, Epochs: cfg.Epochs, Batch: cfg.Batch}, r, func(int) {
		if !h.finite() {
			return
		}
		if s := cfg.Metric(h.Scores(val), classes, val.Y); beats(s, best) && !math.IsNaN(s) {
			best = s
		}
	})
	return best
}

// searchWD is the toolkit's weight-decay search for one learning rate:
// the coarse points, then the peak +- 8, 4, 2, 1 (each index scored
// once). A score must beat the peak (beats) to move it.
func searchWD(cfg TuneConfig, score func(i int) float64) (peak int, best float64, tried []int) {
	seen := map[int]float64{}
	eval := func(i int) float64 {
		if s, ok := seen[i]; ok {
			return s
		}
		s := score(i)
		seen[i] = s
		tried = append(tried, i)
		return s
	}
	peak, best = cfg.Coarse[0], -1.0
	for _, i := range cfg.Coarse {
		if s := eval(i); beats(s, best) {
			peak, best = i, s
		}
	}
	for span := 8; span > 0; span /= 2 {
		left, right := max(peak-span, 0), min(peak+span, len(cfg.WDs)-1)
		centre := peak
		for _, i := range []int{left, right} {
			if i == centre {
				continue
			}
			if s := eval(i); beats(s, best) {
				peak, best = i, s
			}
		}
	}
	return peak, best, tried
}

// Autotune searches (learning rate, weight decay) on train/val, each
// learning rate's weight-decay search on its own worker, then trains on
// train + val for cfg.FinalEpochs and scores test after the last epoch.
// The toolkit reports the final run's best epoch on the evaluation split;
// that selects on the test set, so gatepipe reports the last epoch.
func Autotune(ctx context.Context, train, val, test Set, classes int, cfg TuneConfig) (*Tuned, error) {
	if train.N < 2 || val.N == 0 {
		return nil, fmt.Errorf("probe: %d training and %d validation examples; the search needs at least 2 and 1", train.N, val.N)
	}
	type lrResult struct {
		peak   int
		best   float64
		trials []Trial
	}
	results := make([]lrResult, len(cfg.LRs))
	sem := make(chan struct{}, max(cfg.Workers, 1))
	var wg sync.WaitGroup
	for k, lr := range cfg.LRs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var trials []Trial
			peak, best, _ := searchWD(cfg, func(i int) float64 {
				if ctx.Err() != nil {
					return 0
				}
				s := trialScore(train, val, classes, cfg, lr, cfg.WDs[i])
				trials = append(trials, Trial{LR: lr, WD: cfg.WDs[i], Score: s})
				return s
			})
			results[k] = lrResult{peak, best, trials}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &Tuned{ValScore: -1}
	for k, r := range results {
		out.Trials = append(out.Trials, r.trials...)
		if beats(r.best, out.ValScore) {
			out.LR, out.WD, out.ValScore = cfg.LRs[k], cfg.WDs[r.peak], r.best
		}
	}
	all := Concat(train, val)
	rng := rand.New(rand.NewPCG(cfg.Seed, FinalStream))
	h := NewLinear(all.D, classes, rng)
	h.Train(all, LinearConfig{LR: out.LR, WeightDecay: out.WD, Epochs: cfg.FinalEpochs, Batch: cfg.Batch}, rng, nil)
	out.Params = h.Params()
	if h.finite() {
		out.TestScore = cfg.Metric(h.Scores(test), classes, test.Y)
	}
	return out, nil
}
