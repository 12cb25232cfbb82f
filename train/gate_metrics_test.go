package train

import (
	"math"
	"testing"
)

// TestGATESegmentationScores checks the matrix's mIoU (label 0 ignored)
// and Dice Score (GATE's soft Dice, a fraction) on a case worked by hand.
func TestGATESegmentationScores(t *testing.T) {
	probs := [][]float32{{0.8, 0.1, 0.1}, {0.2, 0.7, 0.1}, {0.1, 0.3, 0.6}, {0.1, 0.1, 0.8}}
	y := []int64{0, 1, 1, 2}
	c := newSegConfusion(3)
	best, py := make([]int32, len(y)), make([]float32, len(y))
	psum := make([]float64, 3)
	for px, row := range probs {
		k := 0
		for j := range row {
			if row[j] > row[k] {
				k = j
			}
			psum[j] += float64(row[j])
		}
		best[px], py[px] = int32(k), row[y[px]]
	}
	c.add(y, best, py)
	c.addSoftDice(y, py, psum)
	m := c.scores()
	// Dice per class: 1/2.2, 3/4.2, 2.6/3.6 (background's truth zeroed).
	want := map[string]float64{"soft_dice": (1/2.2 + 3/4.2 + 2.6/3.6) / 3, "miou_gate": 50, "miou": 100 * (1 + 0.5 + 0.5) / 3}
	for k, v := range want {
		if math.Abs(m[k]-v) > 1e-6 {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	names := map[string]float64{}
	for _, pm := range PaperMetrics(Segmentation, m) {
		names[pm.Name] = pm.Value
	}
	if names["Dice Score"] > 1 || names["mIoU"] != m["miou_gate"] || names["mIoU (all classes)"] != m["miou"] {
		t.Errorf("matrix columns: %v", names)
	}
}

// TestInBatchRetrieval: GATE's accuracies over consecutive batches of 64,
// averaged over the batches (the last one shorter).
func TestInBatchRetrieval(t *testing.T) {
	n := 66
	sim := make([][]float64, n)
	for i := range sim {
		sim[i] = make([]float64, n)
		sim[i][i] = 1
	}
	sim[0][1] = 2  // image 0 prefers caption 1; caption 1 prefers image 0
	sim[0][65] = 5 // outside image 0's batch: it does not count
	out := map[string]float64{}
	inBatch(sim, out)
	want := (100*63.0/64 + 100) / 2
	for k, v := range map[string]float64{"i2t_inbatch_acc1": want, "t2i_inbatch_acc1": want, "i2t_inbatch_acc5": 100, "t2i_inbatch_acc5": 100} {
		if math.Abs(out[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, out[k], v)
		}
	}
}

// TestInBatchOnlyForPairs: the whole split's pairs get GATE's in-batch
// columns; Winoground's groups are scored per item, not in batches.
func TestInBatchOnlyForPairs(t *testing.T) {
	emb := [][]float32{{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 1, 1, 0}, {0, 1, 1, 1}}
	pairs := retrievalMetrics(&Data{Q: []int64{1, 2, 3, 4}, QLen: 1}, emb)
	if _, ok := pairs["i2t_inbatch_acc1"]; !ok {
		t.Errorf("pairs: %v", pairs)
	}
	groups := retrievalMetrics(&Data{Q: []int64{1, 2, 3, 4}, QLen: 1, Group: 2}, emb)
	if _, ok := groups["i2t_inbatch_acc1"]; ok {
		t.Errorf("groups: %v", groups)
	}
}
