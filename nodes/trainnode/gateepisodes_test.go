package trainnode

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/protocol"
	"github.com/gatepipe/gatepipe/train"
)

// fewshotSplit is a split of classes examples of each of k classes.
func fewshotSplit(k, each int) *train.Data {
	d := &train.Data{Task: train.FewShot}
	for i := range k * each {
		d.Y = append(d.Y, int64(i%k))
	}
	return d
}

func gateNode(val, test int) *Node {
	return &Node{task: train.FewShot, card: &protocol.Card{Name: protocol.GATE, Adapter: "fewshot", Episodes: &protocol.Episodes{
		Ways: [2]int{3, 4}, MaxShots: 50, SupportBudget: 250, MaxQueries: 5, Val: val, Test: test}}}
}

// TestGATEEpisodeDraws: the draws file's ragged tensors for the three
// splits (the iterations' training episodes, the card's validation and
// test ones), the test episodes kept in work and read back as drawn.
func TestGATEEpisodeDraws(t *testing.T) {
	work := t.TempDir()
	n := gateNode(6, 5)
	if !n.gateEpisodes() || (&Node{task: train.FewShot}).gateEpisodes() {
		t.Fatal("gateEpisodes: want true with a card that has episodes only")
	}
	tr, val, test := fewshotSplit(6, 20), fewshotSplit(5, 10), fewshotSplit(4, 9)
	ts, err := n.gateEpisodeDraws(tr, val, test, 7, 3, work)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]safetensors.Tensor{}
	for _, x := range ts {
		byName[x.Name] = x
	}
	for split, eps := range map[string]int{"train": 7, "val": 6, "test": 5} {
		for _, s := range []string{"_index", "_label", "_query", "_offsets"} {
			if _, ok := byName["gate_"+split+s]; !ok {
				t.Fatalf("no tensor gate_%s%s", split, s)
			}
		}
		if o := byName["gate_"+split+"_offsets"]; o.Shape[0] != eps+1 {
			t.Errorf("%s: %d offsets, want %d", split, o.Shape[0], eps+1)
		}
	}
	if q := byName["gate_train_query"]; q.DType != safetensors.U8 {
		t.Errorf("query flags %s, want U8", q.DType)
	}
	want, err := train.GATEEpisodes(test, episodeSpec(n.card.Episodes, "test"), 5, gateEvalSeed)
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(filepath.Join(work, gateTestFile))
	if err != nil {
		t.Fatal(err)
	}
	got, err := raggedEpisodes(f, "gate_test")
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].Index, want[i].Index) || !reflect.DeepEqual(got[i].Label, want[i].Label) || !reflect.DeepEqual(got[i].Query, want[i].Query) {
			t.Fatalf("test episode %d read back as %+v, drawn %+v", i, got[i], want[i])
		}
	}
	// The evaluation episodes do not follow the recipe's seed.
	again := t.TempDir()
	ts2, err := n.gateEpisodeDraws(tr, val, test, 7, 4, again)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ts2[4:], ts[4:]) || reflect.DeepEqual(ts2[:4], ts[:4]) {
		t.Error("seed 4: want other training episodes and the same validation and test ones")
	}

	// A split too small names itself.
	if _, err := n.gateEpisodeDraws(tr, fewshotSplit(2, 10), test, 7, 3, t.TempDir()); err == nil || !strings.Contains(err.Error(), "val split") {
		t.Errorf("two validation classes for 3 ways: %v", err)
	}
	if _, err := gateNode(0, 5).gateEpisodeDraws(tr, val, test, 7, 3, t.TempDir()); err == nil || !strings.Contains(err.Error(), "val split") {
		t.Errorf("no validation episodes: %v", err)
	}
}

// TestGATEEpisodeMetricsFromTheWorker works the test metrics by hand
// from a worker's gate_pred: two episodes, means over the episodes.
func TestGATEEpisodeMetricsFromTheWorker(t *testing.T) {
	work := t.TempDir()
	if gateEpisodesDrawn(work) {
		t.Fatal("an empty work directory has GATE's episodes")
	}
	eps := []train.Episode{
		// 2 classes: support 0 0 1 1, queries of 0, 1, 1
		{Index: []int{0, 1, 2, 3, 4, 5, 6}, Label: []int{0, 0, 1, 1, 0, 1, 1}, Query: []bool{false, false, false, false, true, true, true}},
		// 3 classes: one query, of class 1
		{Index: []int{7, 8, 9, 10}, Label: []int{0, 1, 2, 1}, Query: []bool{false, false, false, true}},
	}
	if err := safetensors.WriteFile(filepath.Join(work, gateTestFile), raggedTensors("gate_test", eps), nil); err != nil {
		t.Fatal(err)
	}
	if !gateEpisodesDrawn(work) {
		t.Fatal("gateEpisodesDrawn: false with the file there")
	}
	probs := []float32{
		0.9, 0.1, // query of 0: right
		0.2, 0.8, // query of 1: right
		0.6, 0.4, // query of 1: wrong
		0.5, 0.25, 0.25, // query of 1: wrong
	}
	pred := filepath.Join(work, "pred.safetensors")
	if err := safetensors.WriteFile(pred, []safetensors.Tensor{safetensors.F32Tensor(gatePred, []int{len(probs)}, probs)}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(pred)
	if err != nil {
		t.Fatal(err)
	}
	m, err := gateEpisodeMetrics(work, f)
	if err != nil {
		t.Fatal(err)
	}
	// Episode accuracies 2/3 and 0: Acc@1 (66.67 + 0) / 2 = 33.33 (pooled:
	// 2 of 4, 50). Losses: (-ln .9 - ln .8 - ln .4) / 3 and -ln .25.
	nll := func(p float64) float64 { return -math.Log(p + 1e-7) }
	acc, loss := 100.0/3, ((nll(0.9)+nll(0.8)+nll(0.4))/3+nll(0.25))/2
	if math.Abs(m["acc1"]-acc) > 1e-9 || math.Abs(m["loss"]-loss) > 1e-6 {
		t.Errorf("metrics %v, want acc1 %.4f and loss %.6f", m, acc, loss)
	}

	// The worker's predictions must cover the episodes' queries exactly.
	if err := safetensors.WriteFile(pred, []safetensors.Tensor{safetensors.F32Tensor(gatePred, []int{6}, probs[:6])}, nil); err != nil {
		t.Fatal(err)
	}
	if f, err = safetensors.ReadFile(pred); err != nil {
		t.Fatal(err)
	}
	if _, err := gateEpisodeMetrics(work, f); err == nil || !strings.Contains(err.Error(), "gate_pred") {
		t.Errorf("6 probabilities for 9: %v", err)
	}
	if _, err := gateEpisodeMetrics(work, &safetensors.File{Tensors: map[string]*safetensors.Tensor{}}); err == nil || !strings.Contains(err.Error(), "no F32 tensor gate_pred") {
		t.Errorf("no gate_pred: %v", err)
	}
	os.Remove(filepath.Join(work, gateTestFile))
	if gateEpisodesDrawn(work) {
		t.Error("gateEpisodesDrawn: true without the file")
	}
}
