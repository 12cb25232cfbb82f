package eevee

import (
	"context"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Evaluator scores candidates in parallel and remembers every score, so a
// combination is never trained twice. Scores do not depend on the number
// of workers: each candidate's training uses only streams derived from the
// problem's seed.
type Evaluator struct {
	p       *Problem
	workers int
	mu      sync.Mutex
	memo    map[string]float64
	// Scored counts the candidates actually trained.
	Scored int
}

// NewEvaluator returns an evaluator with the given number of workers
// (0 means one per CPU).
func (p *Problem) NewEvaluator(workers int) *Evaluator {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	return &Evaluator{p: p, workers: workers, memo: map[string]float64{}}
}

// Key is the memo key of a combination: its sorted benchmark indices.
func Key(combo []int) string {
	s := append([]int(nil), combo...)
	sort.Ints(s)
	var b strings.Builder
	for i, v := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(v))
	}
	return b.String()
}

// Scores returns the score of every combination, training only the ones
// not scored before, in parallel. It stops early when ctx is cancelled.
func (e *Evaluator) Scores(ctx context.Context, combos [][]int) ([]float64, error) {
	out := make([]float64, len(combos))
	keys := make([]string, len(combos))
	var pending []int
	seen := map[string]bool{}
	e.mu.Lock()
	for i, c := range combos {
		keys[i] = Key(c)
		if _, ok := e.memo[keys[i]]; !ok && !seen[keys[i]] {
			seen[keys[i]] = true
			pending = append(pending, i)
		}
	}
	e.mu.Unlock()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(e.workers, max(len(pending), 1)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := e.p.newScorer()
			for i := range jobs {
				score := s.score(combos[i])
				e.mu.Lock()
				e.memo[keys[i]] = score
				e.Scored++
				e.mu.Unlock()
			}
		}()
	}
	for _, i := range pending {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	for i := range combos {
		out[i] = e.memo[keys[i]]
	}
	e.mu.Unlock()
	return out, nil
}

// All returns every scored combination with its score.
func (e *Evaluator) All() map[string]float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]float64, len(e.memo))
	for k, v := range e.memo {
		out[k] = v
	}
	return out
}

// ParseKey turns a memo key back into indices.
func ParseKey(key string) []int {
	if key == "" {
		return nil
	}
	parts := strings.Split(key, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		out[i], _ = strconv.Atoi(p)
	}
	return out
}
