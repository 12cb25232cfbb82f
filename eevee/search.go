package eevee

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// SearchOptions are the evolution's settings (paper defaults: I=1000,
// W=50, C=10).
type SearchOptions struct {
	K           []int
	Initial     int
	Winners     int
	Children    int
	Generations int
	Workers     int
	Seed        uint64
	// Progress, when set, is called after each generation.
	Progress func(GenerationStats)
}

// DefaultSearch returns the paper's evolution settings for the given k.
func DefaultSearch(k ...int) SearchOptions {
	return SearchOptions{K: k, Initial: 1000, Winners: 50, Children: 10, Generations: 10}
}

// Candidate is one scored combination.
type Candidate struct {
	Benchmarks []string `json:"benchmarks"`
	Score      float64  `json:"score"`
	indices    []int
}

// GenerationStats describes the top-W population after a generation
// (generation 0 is the initial population).
type GenerationStats struct {
	K                int           `json:"k"`
	Generation       int           `json:"generation"`
	Best             float64       `json:"best"`
	Q1               float64       `json:"q1"`
	Median           float64       `json:"median"`
	Q3               float64       `json:"q3"`
	Worst            float64       `json:"worst"`
	Scored           int           `json:"scored"`
	CandidatesPerSec float64       `json:"candidates_per_sec"`
	Elapsed          time.Duration `json:"elapsed_ns"`
}

// Importance is how much a member of a combination matters: the increase
// of the score when it is removed and the meta-model retrained.
type Importance struct {
	Benchmark string  `json:"benchmark"`
	Without   float64 `json:"score_without"`
	Increase  float64 `json:"increase"`
}

// KResult is the search outcome for one k.
type KResult struct {
	K          int               `json:"k"`
	Winners    []Candidate       `json:"winners"`
	History    []GenerationStats `json:"history"`
	Importance []Importance      `json:"importance"`
	Scored     int               `json:"scored"`
}

// Best returns the best combination.
func (r *KResult) Best() Candidate { return r.Winners[0] }

// Search runs EEVEE's evolution (Algorithm 3) for each k with scorer e.
func (p *Problem) Search(ctx context.Context, e *Evaluator, o SearchOptions) ([]KResult, error) {
	var out []KResult
	for _, k := range o.K {
		r, err := p.searchK(ctx, e, o, k)
		if err != nil {
			return out, err
		}
		out = append(out, *r)
	}
	return out, nil
}

func (p *Problem) searchK(ctx context.Context, e *Evaluator, o SearchOptions, k int) (*KResult, error) {
	if k < 1 || k > len(p.Pool) {
		return nil, fmt.Errorf("k = %d is outside 1..%d (the candidate pool)", k, len(p.Pool))
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0xe7ee+uint64(k)))
	res := &KResult{K: k}
	scored := map[string]float64{}
	before := e.Scored
	start := time.Now()
	evaluate := func(combos [][]int) error {
		scores, err := e.Scores(ctx, combos)
		if err != nil {
			return err
		}
		for i, c := range combos {
			scored[Key(c)] = scores[i]
		}
		return nil
	}
	initial := make([][]int, o.Initial)
	for i := range initial {
		initial[i] = p.randomCombo(rng, k)
	}
	if err := evaluate(initial); err != nil {
		return nil, err
	}
	winners := topW(scored, o.Winners)
	record := func(g int) {
		st := stats(winners, scored)
		st.K, st.Generation, st.Scored, st.Elapsed = k, g, e.Scored-before, time.Since(start)
		st.CandidatesPerSec = float64(st.Scored) / max(st.Elapsed.Seconds(), 1e-9)
		res.History = append(res.History, st)
		if o.Progress != nil {
			o.Progress(st)
		}
	}
	record(0)
	for g := 1; g <= o.Generations; g++ {
		var next [][]int
		for _, w := range winners {
			next = append(next, w)
			for c := 0; c < o.Children; c++ {
				next = append(next, p.mutate(rng, w))
			}
		}
		if err := evaluate(next); err != nil {
			return nil, err
		}
		winners = topW(scored, o.Winners)
		record(g)
	}
	for _, w := range winners {
		res.Winners = append(res.Winners, p.candidate(w, scored[Key(w)]))
	}
	res.Scored = e.Scored - before
	imp, err := p.importance(ctx, e, winners[0], scored[Key(winners[0])])
	if err != nil {
		return nil, err
	}
	res.Importance = imp
	return res, nil
}

func (p *Problem) candidate(combo []int, score float64) Candidate {
	c := Candidate{Score: score, indices: append([]int(nil), combo...)}
	sort.Ints(c.indices)
	for _, b := range c.indices {
		c.Benchmarks = append(c.Benchmarks, p.Benchmarks[b])
	}
	return c
}

// randomCombo samples k distinct benchmarks from the pool.
func (p *Problem) randomCombo(rng *rand.Rand, k int) []int {
	perm := rng.Perm(len(p.Pool))
	out := make([]int, k)
	for i := range out {
		out[i] = p.Pool[perm[i]]
	}
	sort.Ints(out)
	return out
}

// mutate replaces one random member with a random pool benchmark that is
// not yet selected (Algorithm 2). With k equal to the pool size there is
// nothing to swap in, and the combination is returned unchanged.
func (p *Problem) mutate(rng *rand.Rand, combo []int) []int {
	if len(combo) >= len(p.Pool) {
		return append([]int(nil), combo...)
	}
	in := map[int]bool{}
	for _, b := range combo {
		in[b] = true
	}
	out := append([]int(nil), combo...)
	remove := rng.IntN(len(out))
	add := p.Pool[rng.IntN(len(p.Pool))]
	for in[add] {
		add = p.Pool[rng.IntN(len(p.Pool))]
	}
	out[remove] = add
	sort.Ints(out)
	return out
}

// topW returns the W best combinations scored so far, ties broken by key.
func topW(scored map[string]float64, w int) [][]int {
	keys := make([]string, 0, len(scored))
	for k := range scored {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if scored[keys[i]] != scored[keys[j]] {
			return scored[keys[i]] < scored[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > w {
		keys = keys[:w]
	}
	out := make([][]int, len(keys))
	for i, k := range keys {
		out[i] = ParseKey(k)
	}
	return out
}

func stats(winners [][]int, scored map[string]float64) GenerationStats {
	s := make([]float64, len(winners))
	for i, w := range winners {
		s[i] = scored[Key(w)]
	}
	sort.Float64s(s)
	q := func(f float64) float64 {
		if len(s) == 0 {
			return 0
		}
		pos := f * float64(len(s)-1)
		lo := int(pos)
		hi := min(lo+1, len(s)-1)
		return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
	}
	return GenerationStats{Best: s[0], Q1: q(0.25), Median: q(0.5), Q3: q(0.75), Worst: s[len(s)-1]}
}

// importance scores the combination without each member in turn.
func (p *Problem) importance(ctx context.Context, e *Evaluator, combo []int, score float64) ([]Importance, error) {
	if len(combo) < 2 {
		return nil, nil
	}
	var without [][]int
	for i := range combo {
		w := append(append([]int(nil), combo[:i]...), combo[i+1:]...)
		without = append(without, w)
	}
	scores, err := e.Scores(ctx, without)
	if err != nil {
		return nil, err
	}
	out := make([]Importance, len(combo))
	for i, b := range combo {
		out[i] = Importance{Benchmark: p.Benchmarks[b], Without: scores[i], Increase: scores[i] - score}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Increase > out[j].Increase })
	return out, nil
}

// SingleBenchmarks scores every pool benchmark on its own (k = 1): how
// well each predicts the whole pool (paper Figure 3). Sorted best first.
func (p *Problem) SingleBenchmarks(ctx context.Context, e *Evaluator) ([]Candidate, error) {
	combos := make([][]int, len(p.Pool))
	for i, b := range p.Pool {
		combos[i] = []int{b}
	}
	scores, err := e.Scores(ctx, combos)
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, len(combos))
	for i, c := range combos {
		out[i] = p.candidate(c, scores[i])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score < out[j].Score })
	return out, nil
}

// Combo converts benchmark IDs into indices, matching IDs exactly.
func (p *Problem) Combo(ids []string) ([]int, error) {
	out := make([]int, len(ids))
	seen := map[int]bool{}
	for i, id := range ids {
		b, ok := p.BenchmarkIndex(id)
		if !ok {
			return nil, fmt.Errorf("benchmark %q is not in the matrix", id)
		}
		if seen[b] {
			return nil, fmt.Errorf("benchmark %q is listed twice", id)
		}
		seen[b] = true
		out[i] = b
	}
	return out, nil
}
