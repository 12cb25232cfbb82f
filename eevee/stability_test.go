package eevee

import (
	"math"
	"testing"
)

func TestStabilityOf(t *testing.T) {
	run := func(best []string, imp map[string]float64) []KResult {
		r := KResult{K: 3, Winners: []Candidate{{Benchmarks: best}}}
		for b, v := range imp {
			r.Importance = append(r.Importance, Importance{Benchmark: b, Increase: v})
		}
		return []KResult{r}
	}
	runs := [][]KResult{
		run([]string{"a", "b", "c"}, map[string]float64{"a": 3, "b": 2, "c": 1}),
		run([]string{"a", "b", "d"}, map[string]float64{"a": 3, "b": 2, "d": 0.5}),
		run([]string{"a", "c", "e"}, map[string]float64{"a": 3, "c": 1, "e": 2}),
		run([]string{"a", "d", "e"}, map[string]float64{"a": 3, "d": 0.5, "e": 2}),
	}
	st := StabilityOf([]uint64{0, 1, 2, 3}, runs)
	if len(st) != 1 {
		t.Fatalf("%d results", len(st))
	}
	s := st[0]
	if s.Frequency["a"] != 1 || s.Frequency["b"] != 0.5 || s.Frequency["c"] != 0.5 || s.Frequency["e"] != 0.5 {
		t.Errorf("frequencies %v", s.Frequency)
	}
	// a always; then b, c, d, e all at 0.5: b (2) and e (2) beat c (1) and
	// d (0.5) by importance, and b precedes e by name.
	want := []string{"a", "b", "e"}
	for i := range want {
		if s.Consensus[i] != want[i] {
			t.Fatalf("consensus %v, want %v", s.Consensus, want)
		}
	}
	// Jaccard to {a,b,e}: {a,b,c} 2/4, {a,b,d} 2/4, {a,c,e} 2/4, {a,d,e} 2/4.
	if math.Abs(s.Agreement-0.5) > 1e-12 {
		t.Errorf("agreement %v, want 0.5", s.Agreement)
	}
}
