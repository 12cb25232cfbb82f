package transfer

import (
	"math"
	"math/rand/v2"
	"os/exec"
	"testing"

	"github.com/gatepipe/gatepipe/stdlib"
)

func siteTable(t *testing.T) Table {
	t.Helper()
	f, err := stdlib.FS().Open("data/site_finetune_acc.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := ReadTable(f)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestStaticRankingReproducesSITETable1: the static ranking's weighted tau
// against the published fine-tuning accuracies is the paper's Table 1 row
// within 0.03 per dataset (0.84 0.91 0.98 0.99 0.80 0.94, mean 0.91).
func TestStaticRankingReproducesSITETable1(t *testing.T) {
	tab := siteTable(t)
	paper := map[string]float64{"aircraft": 0.84, "cifar10": 0.91, "cifar100": 0.98, "dtd": 0.99, "food": 0.80, "pets": 0.94}
	var sum float64
	for d, want := range paper {
		models := tab.Models(d)
		got := WeightedTau(StaticScores(SITEStaticOrder, models), tab.Accuracies(d, models))
		if math.Abs(got-want) > 0.03 {
			t.Errorf("%s: static ranking weighted tau %.3f, paper %.2f", d, got, want)
		}
		t.Logf("%-9s %.3f (paper %.2f)", d, got, want)
		sum += got
	}
	if mean := sum / float64(len(paper)); math.Abs(mean-0.91) > 0.01 {
		t.Errorf("mean weighted tau %.3f, paper 0.91", mean)
	}
}

// TestRankStatisticsMatchScipy compares with scipy.stats (weightedtau,
// kendalltau, pearsonr, spearmanr) on random data with ties, when Debian's
// python3-scipy is there, and always with values scipy 1.10.1 gave.
func TestRankStatisticsMatchScipy(t *testing.T) {
	// scipy.stats.weightedtau(static scores, accuracies) on the SITE table.
	tab := siteTable(t)
	for d, want := range map[string]float64{"aircraft": 0.863, "cifar10": 0.887, "cifar100": 0.970, "dtd": 0.977, "food": 0.808, "pets": 0.934} {
		models := tab.Models(d)
		if got := WeightedTau(StaticScores(SITEStaticOrder, models), tab.Accuracies(d, models)); math.Abs(got-want) > 6e-4 {
			t.Errorf("%s: weighted tau %.4f, scipy %.3f", d, got, want)
		}
	}
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		t.Skip("no python3 for the scipy comparison")
	}
	if exec.Command("/usr/bin/python3", "-c", "import scipy").Run() != nil {
		t.Skip("python3-scipy is not installed: only the recorded values were compared")
	}
	r := rand.New(rand.NewPCG(5, 5))
	type pair struct{ X, Y []float64 }
	var cases []pair
	for c := range 30 {
		n := 3 + r.IntN(12)
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = float64(r.IntN(6)), r.NormFloat64()
			if c%3 == 0 {
				y[i] = float64(r.IntN(4)) // ties on both sides
			}
		}
		cases = append(cases, pair{x, y})
	}
	script := `
import json, sys
from scipy import stats
out = []
for c in json.load(sys.stdin):
    x, y = c["X"], c["Y"]
    out.append([stats.weightedtau(x, y)[0], stats.kendalltau(x, y)[0], stats.pearsonr(x, y)[0], stats.spearmanr(x, y)[0]])
print(json.dumps(out))
`
	var want [][4]float64
	runPython(t, script, cases, &want)
	for i, c := range cases {
		got := [4]float64{WeightedTau(c.X, c.Y), KendallTau(c.X, c.Y), Pearson(c.X, c.Y), Spearman(c.X, c.Y)}
		for k, name := range []string{"weightedtau", "kendalltau", "pearson", "spearman"} {
			w := want[i][k]
			if w == 0 && math.IsNaN(got[k]) {
				continue // scipy's NaN (constant input) decoded as null
			}
			if math.Abs(got[k]-w) > 1e-9 {
				t.Errorf("case %d %s: %v, scipy %v (x %v, y %v)", i, name, got[k], w, c.X, c.Y)
			}
		}
	}
}

func TestTopHitAndFidelity(t *testing.T) {
	acc := []float64{90, 80, 70, 60}
	if !TopHit([]float64{4, 3, 2, 1}, acc) || TopHit([]float64{1, 4, 3, 2}, acc) {
		t.Error("top-1 hit")
	}
	// A score that is an affine map of the accuracy has fidelity 1; a
	// monotone but distorted one less.
	if f := Fidelity([]float64{9, 8, 7, 6}, acc); math.Abs(f-1) > 1e-12 {
		t.Errorf("fidelity of an affine score %v", f)
	}
	if f := Fidelity([]float64{100, 10, 1, 0}, acc); f >= 0.99 {
		t.Errorf("fidelity of a distorted score %v, want < 0.99", f)
	}
}

// TestMeanRankBaselineUsesOtherDatasetsOnly: the leave-one-out mean-rank
// baseline ranks the standard benchmark's models nearly as the static
// ranking does (its leaderboard is static), and changing the target's own
// accuracies does not change its scores.
func TestMeanRankBaselineUsesOtherDatasetsOnly(t *testing.T) {
	tab := siteTable(t)
	models := tab.Models("cifar10")
	before := MeanRankScores(tab, "cifar10")
	tau := WeightedTau(before, tab.Accuracies("cifar10", models))
	if tau < 0.8 {
		t.Errorf("mean-rank baseline weighted tau on cifar10 %.3f, want > 0.8 on a static leaderboard", tau)
	}
	tab["cifar10"]["mnasnet1_0"] = 99.9
	after := MeanRankScores(tab, "cifar10")
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("the target's accuracies changed the baseline: %v -> %v", before, after)
		}
	}
	t.Logf("mean-rank baseline on cifar10: weighted tau %.3f", tau)
}
