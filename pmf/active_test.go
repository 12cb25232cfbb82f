package pmf

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

func TestAcquireRules(t *testing.T) {
	nan := math.NaN()
	d := &Data{Values: [][]float64{
		{1, nan, 3, nan},
		{nan, 2, 3, nan},
	}}
	c := &Completion{
		Mean:      [][]float64{{1, 5, 3, nan}, {0, 2, 3, nan}},
		LatentStd: [][]float64{{0, 0.5, 0, nan}, {2, 0, 0, nan}},
		Noise:     0.1,
		Scale:     Scale{Mean: []float64{1, 2, 3, nan}, Std: []float64{1, 1, 1, nan}, Count: []int{1, 1, 2, 0}},
	}
	truth := [][]float64{{1, 2, 3, 4}, {1, 2, 3, 4}}
	rng := rand.New(rand.NewPCG(1, 1))
	tests := []struct {
		rule string
		want [][2]int
	}{
		// The column with nothing observed goes first, then the rule's order.
		{"uncertainty", [][2]int{{0, 3}, {1, 3}, {1, 0}}},
		{"oracle", [][2]int{{0, 3}, {1, 3}, {0, 1}}}, // |5-2| > |0-1|
	}
	for _, tt := range tests {
		got, err := Acquire(tt.rule, d, c, truth, 3, rng)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0][1] != 3 || got[1][1] != 3 || got[2] != tt.want[2] {
			t.Errorf("%s picked %v, want %v", tt.rule, got, tt.want)
		}
	}
	got, _ := Acquire("random", d, c, truth, 10, rng)
	if len(got) != 4 {
		t.Errorf("random picked %d of the 4 unobserved cells", len(got))
	}
	if _, err := Acquire("variance", d, c, truth, 1, rng); err == nil {
		t.Error("variance without draws: no error")
	}
	if _, err := Acquire("greedy", d, c, truth, 1, rng); err == nil {
		t.Error("unknown rule accepted")
	}
}

// TestVariancePrefersInformativeCells: two cells equally uncertain, one
// correlated with three others and one with none: the variance rule
// picks the first, and conditioning on it makes its partners no longer
// attractive for the rest of the batch.
func TestVariancePrefersInformativeCells(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	c := &Completion{Noise: 0.1, Scale: Scale{Count: []int{1, 1, 1, 1, 1, 1}, Std: []float64{1, 1, 1, 1, 1, 1}}}
	for k := 0; k < 400; k++ {
		shared, alone, other := rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
		// cells 0..3 share one factor; cell 4 is alone; cell 5 is another
		// lone cell with less spread.
		c.Draws = append(c.Draws, []float64{shared, shared, shared, shared, 1.2 * alone, 0.5 * other})
	}
	got := greedyVariance(c, [][2]int{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}}, 6, 2)
	if got[0][1] > 3 {
		t.Errorf("first pick %v is not one of the four correlated cells", got[0])
	}
	if got[1][1] != 4 {
		t.Errorf("second pick %v, want the lone uncertain cell 4 (its partners are known once one is)", got[1])
	}
}

// TestSimulateImproves: on a low-rank matrix every rule lowers the error
// as cells are revealed, and the oracle ends no worse than random.
func TestSimulateImproves(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	full, _ := lowRank(rng, 20, 15, 2, 0.1)
	o := ActiveOptions{Start: 0.3, Batch: 15, Rounds: 4, Seeds: 2, Rules: Rules(), Workers: 2}
	opts := DefaultOptions()
	opts.Warmup, opts.Draws, opts.Latent = 200, 50, 5
	curves, err := Simulate(context.Background(), &Data{Values: full}, &Sampler{Opts: opts}, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	final := map[string]float64{}
	for _, cv := range curves {
		first, last := cv.RMSE[0].Mean, cv.RMSE[len(cv.RMSE)-1].Mean
		final[cv.Rule] = last
		if last >= first {
			t.Errorf("%s: RMSE %.3f after %d cells, %.3f at the start", cv.Rule, last, cv.Revealed[len(cv.Revealed)-1], first)
		}
		t.Logf("%-12s %.3f -> %.3f", cv.Rule, first, last)
	}
	if final["oracle"] > final["random"] {
		t.Errorf("oracle %.3f ends worse than random %.3f", final["oracle"], final["random"])
	}
}

// TestUncertaintyRuleUnits: "uncertainty" ranks the posterior std in
// column-std units, "uncertainty_raw" in the columns' own: with a loss
// column 1000 times the scale of an accuracy column, the raw rule picks
// the loss column's cells although they are the better known ones.
func TestUncertaintyRuleUnits(t *testing.T) {
	nan := math.NaN()
	d := &Data{Values: [][]float64{{0.5, 900}, {nan, nan}, {0.7, 1200}, {nan, nan}}}
	c := &Completion{
		Mean:      [][]float64{{0.5, 900}, {0.6, 1000}, {0.7, 1200}, {0.6, 1100}},
		LatentStd: [][]float64{{0, 0}, {0.08, 30}, {0, 0}, {0.09, 20}}, // z: 0.8, 0.3, 0.9, 0.2
		Noise:     0.1,
		Scale:     Scale{Mean: []float64{0.6, 1050}, Std: []float64{0.1, 100}, Count: []int{2, 2}},
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for rule, want := range map[string][][2]int{
		"uncertainty":     {{3, 0}, {1, 0}},
		"uncertainty_raw": {{1, 1}, {3, 1}},
	} {
		got, err := Acquire(rule, d, c, nil, 2, rng)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s picked %v, want %v", rule, got, want)
		}
	}
}
