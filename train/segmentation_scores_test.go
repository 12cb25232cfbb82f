package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The segmentation metrics of hand-checked cases, as HF evaluate's
// mean_iou defines them: IoU (and Dice) averaged over the classes in the
// truth or the prediction, accuracy over the classes in the truth.
func TestSegmentationScoresByHand(t *testing.T) {
	tests := []struct {
		name                         string
		truth                        []int64
		pred                         []int32
		classes                      int
		miou, meanAcc, overall, dice float64
	}{
		// Class 1 is only predicted: IoU 0 counts, accuracy has none.
		{"predicted only", []int64{0, 0}, []int32{0, 1}, 2, 25, 50, 50, 100 * (2.0 / 3) / 2},
		{"three classes", []int64{0, 0, 1, 1, 2, 2}, []int32{0, 1, 1, 1, 2, 0}, 3, 50, 200.0 / 3, 200.0 / 3, 100 * (0.5 + 0.8 + 2.0/3) / 3},
		// A fourth class in neither counts nowhere.
		{"absent class", []int64{0, 0, 1, 1, 2, 2}, []int32{0, 1, 1, 1, 2, 0}, 4, 50, 200.0 / 3, 200.0 / 3, 100 * (0.5 + 0.8 + 2.0/3) / 3},
		{"one true class", []int64{1, 1, 1}, []int32{0, 0, 1}, 2, 100.0 / 6, 100.0 / 3, 100.0 / 3, 100 * 0.5 / 2},
	}
	for _, tc := range tests {
		py := make([]float32, len(tc.truth))
		for i := range py {
			py[i] = 0.5
		}
		got := segmentationScores(tc.truth, tc.pred, py, tc.classes)
		for name, want := range map[string]float64{"miou": tc.miou, "mean_acc": tc.meanAcc, "overall_acc": tc.overall, "dice": tc.dice} {
			if math.Abs(got[name]-want) > 1e-9 {
				t.Errorf("%s: %s = %.6f, want %.6f", tc.name, name, got[name], want)
			}
		}
	}
}

// On random masks the metrics equal HF evaluate's mean_iou computed its
// way: per-class areas of intersection, union and label, NaN where an
// area is zero, then nanmean.
func TestSegmentationScoresEqualMeanIoUOnRandomMasks(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 1))
	for trial := range 50 {
		classes := 2 + rng.IntN(6)
		n := 1 + rng.IntN(200)
		truth, pred, py := make([]int64, n), make([]int32, n), make([]float32, n)
		for i := range truth {
			// Skewed draws leave some classes out of the truth, the
			// prediction or both.
			truth[i] = int64(rng.IntN(classes) * rng.IntN(2))
			pred[i] = int32(rng.IntN(classes))
			py[i] = 0.5
		}
		inter, area, label := make([]float64, classes), make([]float64, classes), make([]float64, classes)
		for i := range truth {
			label[truth[i]]++
			area[pred[i]]++
			if int64(pred[i]) == truth[i] {
				inter[truth[i]]++
			}
		}
		nanmean := func(f func(k int) float64) float64 {
			var s float64
			m := 0
			for k := range classes {
				if v := f(k); !math.IsNaN(v) {
					s += v
					m++
				}
			}
			return s / float64(m)
		}
		ratio := func(a, b float64) float64 {
			if b == 0 {
				return math.NaN()
			}
			return a / b
		}
		wantIoU := 100 * nanmean(func(k int) float64 { return ratio(inter[k], area[k]+label[k]-inter[k]) })
		wantAcc := 100 * nanmean(func(k int) float64 { return ratio(inter[k], label[k]) })
		got := segmentationScores(truth, pred, py, classes)
		if math.Abs(got["miou"]-wantIoU) > 1e-9 || math.Abs(got["mean_acc"]-wantAcc) > 1e-9 {
			t.Fatalf("trial %d: mIoU %.6f Mean Acc %.6f, mean_iou gives %.6f %.6f", trial, got["miou"], got["mean_acc"], wantIoU, wantAcc)
		}
	}
}
