package eevee

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/internal/peer"
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
		s.score(p.randomCombo(rng, 8))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
}

var torchRate = regexp.MustCompile(`= ([0-9.]+) candidates/s`)

// torchCandidatesPerSec runs eevee/reference/score_torch.py (the splits
// batched as one model) with Debian's python3-torch, best-configured
// (peer.TorchEnv), or returns 0 when PyTorch is not installed.
func torchCandidatesPerSec(b *testing.B, threads, candidates int) float64 {
	if !peer.HasTorch() {
		return 0
	}
	out, err := peer.Torch(threads, "reference/score_torch.py", "--matrix", "../stdlib/data/gate_table3.csv",
		"--k", "8", "--candidates", strconv.Itoa(candidates), "--threads", strconv.Itoa(threads)).CombinedOutput()
	if err != nil {
		b.Fatalf("PyTorch reference: %v\n%s", err, out)
	}
	m := torchRate.FindSubmatch(out)
	if m == nil {
		b.Fatalf("cannot read PyTorch rate from %q", out)
	}
	b.Logf("%s", out)
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// BenchmarkVsPyTorch compares candidates scored per second for k = 8 on
// the paper matrix with the straightforward PyTorch implementation of
// Algorithm 1 (eevee/reference/score_torch.py, float32 as PyTorch
// defaults to, the 20 splits batched as one model), at 1 and 2 threads:
// Go scores candidates on that many goroutines, PyTorch runs best
// configured with that many threads (peer.TorchEnv).
func BenchmarkVsPyTorch(b *testing.B) {
	p, err := NewProblem(loadPaper(b), Defaults())
	if err != nil {
		b.Fatal(err)
	}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, uint64(threads)))
			var combos [][]int
			for len(combos) < 200*threads {
				combos = append(combos, p.randomCombo(rng, 8))
			}
			// Three rounds alternating the two sides; medians.
			var ours, torch []float64
			for range b.N {
				for range 3 {
					e := p.NewEvaluator(threads)
					start := time.Now()
					if _, err := e.Scores(context.Background(), combos); err != nil {
						b.Fatal(err)
					}
					ours = append(ours, float64(e.Scored)/time.Since(start).Seconds())
					if t := torchCandidatesPerSec(b, threads, 20); t > 0 {
						torch = append(torch, t)
					}
				}
			}
			goRate := medianOf(ours)
			b.ReportMetric(goRate, "go-candidates/s")
			if len(torch) == 0 {
				b.Log("python3-torch is not installed: no PyTorch comparison (make deps-bench)")
				return
			}
			t := medianOf(torch)
			b.ReportMetric(t, "torch-candidates/s")
			b.ReportMetric(goRate/t, "speedup")
			fmt.Printf("EEVEE k=8 scoring, %d threads, median of %d alternating rounds: gatepipe %.1f candidates/s, PyTorch batched %.1f candidates/s (%s), ratio %.2f\n",
				threads, len(ours), goRate, t, peer.Describe(peer.TorchEnv(threads)), goRate/t)
		})
	}
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSearchK8 runs a full k = 8 search with the paper's settings
// (I=1000, W=50, C=10) and G = 10 on every CPU, and reports its wall time.
func BenchmarkSearchK8(b *testing.B) {
	o := Defaults()
	o.Exclude = []string{"cityscapes"}
	p, err := NewProblem(loadPaper(b), o)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		e := p.NewEvaluator(0)
		start := time.Now()
		res, err := p.Search(context.Background(), e, DefaultSearch(8))
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.ReportMetric(took.Seconds(), "search-s")
		b.ReportMetric(float64(res[0].Scored)/took.Seconds(), "candidates/s")
		b.Logf("best %v score %.4f, %d candidates scored", res[0].Best().Benchmarks, res[0].Best().Score, res[0].Scored)
	}
}
