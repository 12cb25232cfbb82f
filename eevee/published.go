package eevee

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// Published is one benchmark combination the paper reports.
type Published struct {
	Source     string
	K          int
	Benchmarks []string
	Complete   bool
}

// LoadPublished reads gate_combinations.csv (source,k,benchmarks,complete;
// benchmarks separated by ";"). The paper labels HappyWhale "happy" in one
// figure; it is mapped to the matrix ID "happywhale".
func LoadPublished(r io.Reader) ([]Published, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	var out []Published
	for i, row := range rows {
		if i == 0 {
			continue
		}
		if len(row) != 4 {
			return nil, fmt.Errorf("line %d: want 4 fields, got %d", i+1, len(row))
		}
		k, err := strconv.Atoi(row[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: k %q", i+1, row[1])
		}
		var bs []string
		for _, b := range strings.Split(row[2], ";") {
			if b == "happy" {
				b = "happywhale"
			}
			bs = append(bs, strings.TrimSpace(b))
		}
		out = append(out, Published{Source: row[0], K: k, Benchmarks: bs, Complete: row[3] == "true"})
	}
	return out, nil
}

// PublishedCheck is how one published combination ranks among random
// combinations of the same size.
type PublishedCheck struct {
	K         int     `json:"k"`
	Source    string  `json:"source"`
	Score     float64 `json:"score"`
	Random    int     `json:"random"`
	Beaten    int     `json:"beaten_by"`
	Share     float64 `json:"share"`
	BestRand  float64 `json:"best_random"`
	MedianRnd float64 `json:"median_random"`
}

// CheckPublished scores each published combination and n random pool
// combinations of the same size (drawn with seed), and reports the share
// of random ones that score better (lower).
func (p *Problem) CheckPublished(ctx context.Context, e *Evaluator, pubs []Published, n int, seed uint64) ([]PublishedCheck, error) {
	var out []PublishedCheck
	for _, pub := range pubs {
		combo, err := p.Combo(pub.Benchmarks)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pub.Source, err)
		}
		rng := rand.New(rand.NewPCG(seed, 0xc0ffee+uint64(pub.K)))
		combos := [][]int{combo}
		for i := 0; i < n; i++ {
			combos = append(combos, p.randomCombo(rng, len(combo)))
		}
		scores, err := e.Scores(ctx, combos)
		if err != nil {
			return nil, err
		}
		c := PublishedCheck{K: pub.K, Source: pub.Source, Score: scores[0], Random: n}
		rs := append([]float64(nil), scores[1:]...)
		for _, s := range rs {
			if s < scores[0] {
				c.Beaten++
			}
		}
		sort.Float64s(rs)
		c.Share = float64(c.Beaten) / float64(n)
		c.BestRand, c.MedianRnd = rs[0], rs[len(rs)/2]
		out = append(out, c)
	}
	return out, nil
}

// PublishedRange returns, for each k in lo..hi, the first complete
// published combination of that size (the figures of the paper's best-k
// sets; the tier figures repeat three of them).
func PublishedRange(pubs []Published, lo, hi int) []Published {
	var out []Published
	seen := map[int]bool{}
	for _, p := range pubs {
		if p.K < lo || p.K > hi || !p.Complete || seen[p.K] || len(p.Benchmarks) != p.K {
			continue
		}
		seen[p.K] = true
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].K < out[j].K })
	return out
}
