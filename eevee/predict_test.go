package eevee

import (
	"math"
	"strings"
	"testing"
)

func TestPlaceAndRanks(t *testing.T) {
	// Four models; column 0 higher is better, column 1 lower is better.
	m := tiny(4, []string{"A/a/acc", "B/b/loss"}, func(i, j int) float64 { return float64(i) })
	m.Columns[1].HigherIsBetter = false
	p, err := NewProblem(m, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	// Best on acc (4 > 3), worst on loss (4 > 3): ranks 1 and 5.
	pl := p.Place([]float64{4, 4})
	if pl.MeanRank != 3 || pl.Of != 5 {
		t.Fatalf("placement %+v", pl)
	}
	r := columnRanks([][]float64{{1}, {5}, {5}, {2}}, 0, true)
	want := []float64{4, 1.5, 1.5, 3}
	for i := range want {
		if r[i] != want[i] {
			t.Fatalf("ranks %v, want %v", r, want)
		}
	}
	if rho := spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}); math.Abs(rho-1) > 1e-12 {
		t.Fatalf("spearman of monotone data = %g", rho)
	}
	if rho := spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); math.Abs(rho+1) > 1e-12 {
		t.Fatalf("spearman of reversed data = %g", rho)
	}
}

func TestRankBaselineFollowsTierRank(t *testing.T) {
	m := tiny(5, []string{"A/a/acc", "B/b/acc"}, func(i, j int) float64 { return float64(10*i + j) })
	p, _ := NewProblem(m, Defaults())
	tier, _ := p.Combo([]string{"a"})
	// Better than every model on the tier -> predicted at the best value.
	got := p.rankBaseline(tier, []float64{100, math.NaN()})
	if got[1] != 41 {
		t.Fatalf("baseline for a top model = %v, want the best b value 41", got)
	}
	got = p.rankBaseline(tier, []float64{-5, math.NaN()})
	if got[1] != 1 {
		t.Fatalf("baseline for a bottom model = %v, want the worst b value 1", got)
	}
}

func TestPredictBeatsThePoolMeanOnThePaperMatrix(t *testing.T) {
	o := Defaults()
	o.Exclude = []string{"cityscapes"}
	rows, err := LeaveOneModelOut(loadPaper(t), o, []string{"iwildcam", "ade20k", "clevr-math", "acdc", "imagenet1k", "mini", "cubirds", "cifar100"})
	if err != nil {
		t.Fatal(err)
	}
	meta, mean := rows[0], rows[1]
	t.Logf("%+v", rows)
	if meta.MAE >= mean.MAE || meta.RankRho <= mean.RankRho || meta.PositionError >= mean.PositionError {
		t.Fatalf("meta-model %+v does not beat the pool mean %+v", meta, mean)
	}
}

func TestPredictGoesWithoutUnmeasuredColumns(t *testing.T) {
	m := tiny(6, []string{"A/a/acc", "A/a/top5", "B/b/acc"}, func(i, j int) float64 { return float64(10*i + j) })
	o := Defaults()
	o.Epochs = 5
	p, err := NewProblem(m, o)
	if err != nil {
		t.Fatal(err)
	}
	tier, _ := p.Combo([]string{"a"})
	pred, err := p.Predict(tier, []float64{30, math.NaN(), math.NaN()})
	if err != nil {
		t.Fatal(err)
	}
	if len(pred.Unmeasured) != 1 || pred.Unmeasured[0] != "a:top5" {
		t.Fatalf("Unmeasured = %q, want [a:top5]", pred.Unmeasured)
	}
	if _, err := p.Predict(tier, []float64{math.NaN(), math.NaN(), 3}); err == nil {
		t.Fatal("a tier benchmark with nothing measured must be an error")
	}
}

// TestBaselineVerdict: the meta-model is said to beat the baselines only
// when its MAE is 5% below the strongest one's and its median lower too.
func TestBaselineVerdict(t *testing.T) {
	meta := LOMORow{Method: "eevee meta-model", MAE: 0.584, MedAE: 0.169}
	pool := LOMORow{Method: "pool mean", MAE: 1.169, MedAE: 0.923}
	tests := []struct {
		name  string
		rows  []LOMORow
		beats bool
		want  string
	}{
		{"ties the rank baseline (the paper's small tier)", []LOMORow{meta, pool, {Method: "mean rank on tier", MAE: 0.598, MedAE: 0.139}}, false,
			"does not clearly beat the strongest trivial baseline (mean rank on tier): MAE 0.584 vs 0.598, median 0.169 vs 0.139"},
		{"beats both", []LOMORow{meta, pool, {Method: "mean rank on tier", MAE: 0.7, MedAE: 0.3}}, true,
			"beats the strongest trivial baseline (mean rank on tier): MAE 0.584 vs 0.700"},
		{"lower MAE but a higher median", []LOMORow{meta, pool, {Method: "mean rank on tier", MAE: 0.9, MedAE: 0.1}}, false, "does not clearly beat"},
		{"the pool mean is the strongest", []LOMORow{meta, {Method: "pool mean", MAE: 0.5, MedAE: 0.2}, {Method: "mean rank on tier", MAE: 0.9, MedAE: 0.3}}, false,
			"(pool mean): MAE 0.584 vs 0.500"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := BeatsBaselines(tc.rows); got != tc.beats {
				t.Errorf("BeatsBaselines = %v", got)
			}
			if got := BaselineVerdict(tc.rows); !strings.Contains(got, tc.want) {
				t.Errorf("verdict %q lacks %q", got, tc.want)
			}
		})
	}
}

// TestLeaveOneModelOutOnSelectedColumns: with columns = "higher_is_better"
// (the tiers' predict block) each held-out model's row is compared on the
// selected columns: the same rows as on a matrix holding those columns
// only. Before, it was indexed by the whole matrix's columns, and the
// meta-model's MAE read 42.4 column standard deviations.
func TestLeaveOneModelOutOnSelectedColumns(t *testing.T) {
	tier := []string{"ade20k", "clevr-math", "acdc", "imagenet1k", "mini", "cubirds", "cifar100"}
	m := loadPaper(t)
	for _, cols := range []string{"higher_is_better", "primary"} {
		t.Run(cols, func(t *testing.T) {
			o := Defaults()
			o.Splits, o.Columns = 5, cols
			got, err := LeaveOneModelOut(m, o, tier)
			if err != nil {
				t.Fatal(err)
			}
			o.Columns = "all"
			want, err := LeaveOneModelOut(m.Select(cols), o, tier)
			if err != nil {
				t.Fatal(err)
			}
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("%s: %+v, want %+v", want[k].Method, got[k], want[k])
				}
			}
			if got[0].MAE > 1 {
				t.Errorf("meta-model MAE %.3f column std units", got[0].MAE)
			}
		})
	}
}

// TestPlaceRange: the interval of a placement moves every predicted value
// by its spread in the column's better direction and the other way;
// measured values (spread 0 or NaN) stay, and no spread is no interval.
func TestPlaceRange(t *testing.T) {
	// Five models, model 4 the best: acc 0, 10, ... 40 (higher is
	// better), loss 40, 30, ... 0 (lower is better).
	m := tiny(5, []string{"A/a/acc", "B/b/loss"}, func(i, j int) float64 { return float64(10*i + j*(40-20*i)) })
	m.Columns[1].HigherIsBetter = false
	p, err := NewProblem(m, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		values, spread   []float64
		best, pos, worst int
	}{
		// Between models 2 and 3 on both: third.
		{"no spread", []float64{25, 15}, []float64{0, math.NaN()}, 3, 3, 3},
		{"both predicted", []float64{25, 15}, []float64{10, 10}, 2, 3, 4},
		// Acc alone moves: mean rank 2.5 up, tied with model 3, and 3.5
		// down, tied with model 2; a tie takes the better position.
		{"loss measured", []float64{25, 15}, []float64{10, 0}, 2, 3, 3},
		{"a wide spread", []float64{25, 15}, []float64{100, 100}, 1, 3, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			best, worst := p.PlaceRange(tc.values, tc.spread)
			if pos := p.Place(tc.values).Position; best != tc.best || pos != tc.pos || worst != tc.worst {
				t.Errorf("best %d, position %d, worst %d; want %d, %d, %d", best, pos, worst, tc.best, tc.pos, tc.worst)
			}
		})
	}
}
