package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGroupRetrievalScoresEachItemAlone: Winoground's text, image and
// group scores and the within-pair accuracies, on hand-made embeddings
// (each row [image | caption]); a tie is a miss.
func TestGroupRetrievalScoresEachItemAlone(t *testing.T) {
	row := func(img, txt [2]float32) []float32 { return []float32{img[0], img[1], txt[0], txt[1]} }
	for _, c := range []struct {
		name                          string
		emb                           [][]float32
		i2t, t2i, text, image, groupS float64
	}{
		{"both right", [][]float32{row([2]float32{1, 0}, [2]float32{1, 0}), row([2]float32{0, 1}, [2]float32{0, 1})}, 100, 100, 100, 100, 100},
		// Both images prefer caption 0; each caption still prefers its
		// own image.
		{"text wrong", [][]float32{row([2]float32{1, 0}, [2]float32{1, 0}), row([2]float32{1, 0.1}, [2]float32{0, 1})}, 50, 100, 0, 100, 0},
		{"a tie misses", [][]float32{row([2]float32{1, 0}, [2]float32{1, 0}), row([2]float32{1, 0}, [2]float32{0, 1})}, 50, 0, 0, 0, 0},
	} {
		// The same item twice beside a perfect one: scores are per item
		// and never compare across items.
		emb := append(append([][]float32{}, c.emb...), row([2]float32{1, 0}, [2]float32{1, 0}), row([2]float32{0, 1}, [2]float32{0, 1}))
		m := retrievalMetrics(&Data{Task: Retrieval, Group: 2}, emb)
		want := map[string]float64{"i2t_acc1": (c.i2t + 100) / 2, "t2i_acc1": (c.t2i + 100) / 2, "text_score": (c.text + 100) / 2, "image_score": (c.image + 100) / 2, "group_score": (c.groupS + 100) / 2}
		for k, v := range want {
			if math.Abs(m[k]-v) > 1e-9 {
				t.Errorf("%s: %s = %g, want %g", c.name, k, m[k], v)
			}
		}
		if _, ok := m["i2t_acc5"]; ok {
			t.Errorf("%s: Acc@5 over pairs of two means nothing, yet it is reported", c.name)
		}
		// The pair loss is the 2-way cross-entropy at the training scale.
		s00, s01 := 1.0, 0.0
		if c.name == "both right" {
			want := -(s00*retrievalScale - math.Log(math.Exp(s00*retrievalScale)+math.Exp(s01*retrievalScale)))
			if math.Abs(m["i2t_loss"]-want) > 1e-9 {
				t.Errorf("i2t_loss %g, want %g", m["i2t_loss"], want)
			}
		}
	}
}

// TestPaperMetricsNameWinogroundScores: the scores reach metrics.json.
func TestPaperMetricsNameWinogroundScores(t *testing.T) {
	got := map[string]bool{}
	for _, m := range PaperMetrics(Retrieval, map[string]float64{"i2t_acc1": 1, "text_score": 2, "image_score": 3, "group_score": 4}) {
		got[m.Name] = m.HigherIsBetter
	}
	for _, n := range []string{"Img2Txt Acc@1", "Text Score", "Image Score", "Group Score"} {
		if !got[n] {
			t.Errorf("no higher-is-better %q in %v", n, got)
		}
	}
}

// winoRow is one example of a Winoground split: its image and caption
// embeddings side by side.
func winoRow(img, txt [2]float32) []float32 { return []float32{img[0], img[1], txt[0], txt[1]} }

var (
	wx = [2]float32{1, 0}
	wy = [2]float32{0, 1}
)

// TestGATEBlocksWinoground: under D4 the matrix's Img2Txt and Txt2Img are
// GATE's contrastive_accuracy(is_irregular_shape=True) of the batch's
// similarities, worked by hand; without D4 each item's own 2 x 2 block's.
// Two items (one batch of B = 2: 4 images, 4 captions; rows images,
// columns captions I0a I0b I1a I1b / T0a T0b T1a T1b). GATE cuts each row
// into the pairs (T0a, T0b) with target 0 and (T1a, T1b) with target 1,
// the same for every image, and argmax takes the first of a tie.
func TestGATEBlocksWinoground(t *testing.T) {
	for _, c := range []struct {
		name string
		emb  [][]float32
		// GATE's (D4) and each item's own accuracies, and Winoground's
		// text, image and group scores.
		gateI2T, gateT2I, itemI2T, itemT2I, text, image, groupS float64
	}{
		// S = [1 0 1 0; 0 1 0 1; 1 0 1 0; 0 1 0 1] (symmetric). Each
		// image gets the pair of its own item's index parity right and
		// the other wrong: 4 of 8 pairs, both ways. Per item: all right.
		{"right per item, 50 under D4", [][]float32{winoRow(wx, wx), winoRow(wy, wy), winoRow(wx, wx), winoRow(wy, wy)}, 50, 50, 100, 100, 100, 100, 100},
		// Every image (1, 0); captions T0a (1,0), T0b (0,1), T1a (0,1),
		// T1b (1,0). Image rows are all [1 0 0 1]: argmax 0 then 1, both
		// targets met: 100. Caption rows [1 1 1 1], [0 0 0 0] x 2,
		// [1 1 1 1]: ties, argmax 0, half the targets: 50. Per item:
		// I0a and I1b pick their own caption, I0b and I1a do not (50);
		// every caption ties its item's two images, a miss (0).
		{"one image everywhere, 100 under D4", [][]float32{winoRow(wx, wx), winoRow(wx, wy), winoRow(wx, wy), winoRow(wx, wx)}, 100, 50, 50, 0, 0, 0, 0},
		// As above with every image (0, 1): image rows [0 1 1 0], argmax
		// 1 then 0, both targets missed: 0. The per-item scores are the
		// same as above.
		{"the other image everywhere, 0 under D4", [][]float32{winoRow(wy, wx), winoRow(wy, wy), winoRow(wy, wy), winoRow(wy, wx)}, 0, 50, 50, 0, 0, 0, 0},
	} {
		for _, d4 := range []bool{false, true} {
			m := retrievalMetrics(&Data{Task: Retrieval, Group: 2, GATEBlocks: d4}, c.emb)
			cols := map[string]float64{}
			for _, pm := range PaperMetrics(Retrieval, m) {
				cols[pm.Name] = pm.Value
			}
			want := map[string]float64{"Img2Txt Acc@1": c.itemI2T, "Txt2Img Acc@1": c.itemT2I, "Text Score": c.text, "Image Score": c.image, "Group Score": c.groupS}
			if d4 {
				want["Img2Txt Acc@1"], want["Txt2Img Acc@1"] = c.gateI2T, c.gateT2I
				want["Img2Txt Acc@1 (per item)"], want["Txt2Img Acc@1 (per item)"] = c.itemI2T, c.itemT2I
			} else if _, ok := cols["Img2Txt Acc@1 (per item)"]; ok {
				t.Errorf("%s without D4: a per-item column beside the per-item accuracy", c.name)
			}
			for k, v := range want {
				got, ok := cols[k]
				if !ok || math.Abs(got-v) > 1e-9 {
					t.Errorf("%s, D4 %v: %s = %v (present %v), want %v", c.name, d4, k, got, ok, v)
				}
			}
		}
	}
}

// TestGATEBlocksBatches: GATE's evaluator scores 64 items (128 images
// and 128 captions) a batch, the last batch shorter, and averages the
// batches' accuracies. 64 items right per item (50 % under D4, as in
// TestGATEBlocksWinoground) and 2 items of one image everywhere (100 %):
// (50 + 100) / 2 = 75 image to text, where 64-example batches would give
// (50 + 50 + 100) / 3 and pooling every pair about 50.05. Text to image
// is 50 in both batches.
func TestGATEBlocksBatches(t *testing.T) {
	var emb [][]float32
	for range 64 {
		emb = append(emb, winoRow(wx, wx), winoRow(wy, wy))
	}
	emb = append(emb, winoRow(wx, wx), winoRow(wx, wy), winoRow(wx, wy), winoRow(wx, wx))
	m := retrievalMetrics(&Data{Task: Retrieval, Group: 2, GATEBlocks: true}, emb)
	for k, v := range map[string]float64{"i2t_blocks_acc1": 75, "t2i_blocks_acc1": 50} {
		if math.Abs(m[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	// Without D4, the images that pick their own caption: 128 + 2 of 132.
	m = retrievalMetrics(&Data{Task: Retrieval, Group: 2}, emb)
	if _, ok := m["i2t_blocks_acc1"]; ok || math.Abs(m["i2t_acc1"]-100*130.0/132) > 1e-9 {
		t.Errorf("without D4: %v", m)
	}
}

// TestGATEBlockAccuracyReplaysTheReshape checks gateBlockAccuracy against
// a replay of GATE's reshape as its shapes read: the [n, n] logits as
// [n, n/4, 2, 2] blocks (row i's values 4j..4j+3), each block's row k
// with target k, argmax first on a tie; random similarities, some tied,
// for batches of an even number of items.
func TestGATEBlockAccuracyReplaysTheReshape(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, items := range []int{2, 4, 20, 60, 64} {
		n := 2 * items
		s := make([][]float64, n)
		for i := range s {
			s[i] = make([]float64, n)
			for j := range s[i] {
				s[i][j] = float64(rng.IntN(3)) // ties are common
			}
		}
		hits, total := 0, 0
		for i := range n {
			for j := range n / 4 {
				block := [2][2]float64{{s[i][4*j], s[i][4*j+1]}, {s[i][4*j+2], s[i][4*j+3]}}
				for k := range 2 {
					arg := 0
					if block[k][1] > block[k][0] {
						arg = 1
					}
					if arg == k {
						hits++
					}
					total++
				}
			}
		}
		want := float64(hits) / float64(total)
		if got := gateBlockAccuracy(n, func(r, c int) float64 { return s[r][c] }); math.Abs(got-want) > 1e-12 {
			t.Errorf("%d items: %v, want %v", items, got, want)
		}
	}
}
