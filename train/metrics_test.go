package train

import (
	"math"
	"testing"
)

// TestCLEVRAnswerTypeAccuracy: a relational dataset whose classes are
// CLEVR's answers reports Acc@1 per question type, over the examples of
// that type; other answer sets report none.
func TestCLEVRAnswerTypeAccuracy(t *testing.T) {
	d := &Data{Task: Relational, ClassNames: []string{"2", "blue", "no", "red", "yes"}, Y: []int64{0, 1, 1, 3, 4, 2}}
	// Right: example 0 (count), 1 (colour), 4 (yes/no); wrong: 2, 3, 5.
	probs := [][]float32{
		{0.9, 0, 0, 0, 0.1}, {0, 0.8, 0, 0.2, 0}, {0, 0.1, 0, 0.9, 0},
		{0, 0.7, 0, 0.3, 0}, {0, 0, 0.4, 0, 0.6}, {0, 0, 0.3, 0, 0.7},
	}
	m, err := metrics(Relational, d, probs, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"acc1": 50, "acc1/Count": 100, "acc1/Colour": 100.0 / 3, "acc1/Yes/No": 50}
	for k, v := range want {
		if math.Abs(m[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v (all: %v)", k, m[k], v, m)
		}
	}
	names := map[string]bool{}
	for _, pm := range PaperMetrics(Relational, m) {
		names[pm.Name] = true
	}
	for _, n := range []string{"Acc@1", "Colour Acc@1", "Count Acc@1", "Yes/No Acc@1"} {
		if !names[n] {
			t.Errorf("paper metrics lack %s: %v", n, names)
		}
	}
	if names["Shape Acc@1"] {
		t.Error("a type with no test question is reported")
	}
	d.ClassNames = []string{"2", "blue", "no", "red", "maybe"}
	if m, _ := metrics(Relational, d, probs, 5); len(m) != 2 {
		t.Errorf("answers outside CLEVR's got per-type metrics: %v", m)
	}
}
