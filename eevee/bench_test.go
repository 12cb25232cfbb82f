package eevee

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkScoreK8 scores random 8-benchmark candidates of the paper
// matrix under the default scoring, on one goroutine.
func BenchmarkScoreK8(b *testing.B) {
	p, err := NewProblem(loadPaper(b), Defaults())
	if err != nil {
		b.Fatal(err)
	}
	s := p.newScorer()
	rng := rand.New(rand.NewPCG(1, 1))
	b.ResetTimer()
	for range b.N {
		perm := rng.Perm(len(p.Pool))[:8]
		s.score(perm)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
}
