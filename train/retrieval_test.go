package train

import (
	"math"
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
