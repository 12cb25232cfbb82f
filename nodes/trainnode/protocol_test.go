package trainnode

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/protocol"
	"github.com/gatepipe/gatepipe/stdlib"
	"github.com/gatepipe/gatepipe/train"
)

func TestSplitTexts(t *testing.T) {
	vocab := []string{"<pad>", "<unk>", "how", "many", "cubes"}
	got, err := splitTexts([]int64{2, 3, 4, 0, 1, 4, 0, 0}, 4, vocab)
	if err != nil || !slices.Equal(got, []string{"how many cubes", "cubes"}) {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := splitTexts([]int64{2, 9}, 2, vocab); err == nil || !strings.Contains(err.Error(), "token 9 outside the vocabulary of 5") {
		t.Errorf("bad token: %v", err)
	}
	if _, err := splitTexts(nil, 0, vocab); err == nil {
		t.Error("no tokens passed")
	}
}

// TestTextRefFetchesWeightsOnlyWhenPretrained: a capped scale's tower
// starts from the seed and needs only the tokenizer.
func TestTextRefFetchesWeightsOnlyWhenPretrained(t *testing.T) {
	enc := "openai/clip-vit-base-patch16"
	for _, tc := range []struct {
		pretrained bool
		files      []string
	}{{true, []string{"vocab.json", "merges.txt", "model.safetensors"}}, {false, []string{"vocab.json", "merges.txt"}}} {
		n := &Node{card: &protocol.Card{TextEncoder: &enc, Text: &protocol.TextTower{Pretrained: tc.pretrained}}}
		ref, ok := n.textRef()
		if !ok || !ref.Model || ref.HF != enc || !slices.Equal(ref.Files, tc.files) {
			t.Errorf("pretrained %v: %+v", tc.pretrained, ref)
		}
	}
	if _, ok := (&Node{}).textRef(); ok {
		t.Error("a node without a card reads text")
	}
}

// TestFamilyOf: the encoder families GATE's learning rates follow
// (gate/tiers/core.py get_model_selection).
func TestFamilyOf(t *testing.T) {
	for _, tc := range []struct {
		enc     train.EncoderSpec
		family  string
		assumed bool
	}{
		{train.EncoderSpec{Arch: "vit"}, "transformer", false},
		{train.EncoderSpec{Arch: "convnext", Version: 2}, "convnext_resnext", false},
		{train.EncoderSpec{Arch: "convnext", Version: 1}, "conv", false},
		{train.EncoderSpec{Arch: "resnet", Groups: 32}, "convnext_resnext", false},
		{train.EncoderSpec{Arch: "resnet"}, "conv", false},
		{train.EncoderSpec{Arch: "timm:vit_base_patch16_siglip_224"}, "transformer", false},
		{train.EncoderSpec{Arch: "timm:efficientformerv2_s0"}, "transformer", false},
		{train.EncoderSpec{Arch: "timm:convnextv2_base.fcmae_ft_in22k_in1k"}, "convnext_resnext", false},
		{train.EncoderSpec{Arch: "timm:efficientnetv2_rw_s"}, "conv", false},
		{train.EncoderSpec{Arch: "torchvision:resnext50_32x4d"}, "convnext_resnext", false},
		{train.EncoderSpec{Arch: "torchvision:vit_b_16"}, "transformer", false},
		{train.EncoderSpec{Arch: "python:m.py:Net"}, "conv", true},
		{train.EncoderSpec{Arch: "patchroot:google-bert/bert-base-uncased"}, "transformer", false},
		{train.EncoderSpec{Arch: "patchroot:facebook/bart-base"}, "transformer", false},
		{train.EncoderSpec{Arch: "patchroot:sentence-transformers/all-mpnet-base-v2"}, "transformer", false},
		{train.EncoderSpec{Arch: "patchroot:openai/whisper-base"}, "transformer", false},
	} {
		if f, a := familyOf(tc.enc); f != tc.family || a != tc.assumed {
			t.Errorf("%s: %s %v, want %s %v", tc.enc.Arch, f, a, tc.family, tc.assumed)
		}
	}
}

// TestD3FirstCharacters: table3's Flickr30k and NYCC captions are one
// character each, as GATE's loaders gave them.
func TestD3FirstCharacters(t *testing.T) {
	if got := firstCharacters([]string{"a dog runs", "", "éclair"}); !slices.Equal(got, []string{"a", "", "é"}) {
		t.Errorf("got %q", got)
	}
}

// TestD4WinogroundColumns: under table3 (D4) the Winoground columns
// Img2Txt and Txt2Img are GATE's misplaced 2 x 2 blocks, under gate each
// item's own, from the same embeddings read from the torch worker's
// output; Winoground's scores are there under both. Two items (one
// batch), every image (1, 0), captions (1, 0), (0, 1), (0, 1), (1, 0):
// GATE's pairs give 100 and 50 (train.TestGATEBlocksWinoground works
// them out); per item 50 and 0 (ties miss).
func TestD4WinogroundColumns(t *testing.T) {
	tab, err := protocol.Load(stdlib.FS())
	if err != nil {
		t.Fatal(err)
	}
	emb := []float32{1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0}
	for _, c := range []struct {
		proto    string
		i2t, t2i float64
	}{{protocol.Table3, 100, 50}, {protocol.GATE, 50, 0}} {
		card, err := tab.Card(c.proto, "retrieval", "winoground", "")
		if err != nil {
			t.Fatal(err)
		}
		n := &Node{card: &card, task: train.Retrieval}
		split := func() *train.Data {
			return &train.Data{Task: train.Retrieval, Group: 2, QLen: 1, Q: []int64{1, 2, 3, 4}, Vocab: 5}
		}
		d := &loaded{task: train.Retrieval, splits: [3]*train.Data{split(), split(), split()}}
		n.gateMetrics(d)
		work := t.TempDir()
		if err := os.WriteFile(filepath.Join(work, "result.json"), []byte(`{"kept": []}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := safetensors.WriteFile(filepath.Join(work, "pred.safetensors"), []safetensors.Tensor{safetensors.F32Tensor("pred", []int{4, 4}, emb)}, nil); err != nil {
			t.Fatal(err)
		}
		res, err := readTorchResult(work, train.Retrieval, train.HeadSpec{}, d.splits[2], 0)
		if err != nil {
			t.Fatal(err)
		}
		cols := map[string]float64{}
		for _, pm := range train.PaperMetrics(train.Retrieval, res.Metrics) {
			cols[pm.Name] = pm.Value
		}
		want := map[string]float64{"Img2Txt Acc@1": c.i2t, "Txt2Img Acc@1": c.t2i, "Text Score": 0, "Image Score": 0, "Group Score": 0}
		if card.Has("D4") {
			want["Img2Txt Acc@1 (per item)"], want["Txt2Img Acc@1 (per item)"] = 50, 0
		}
		for k, v := range want {
			if got, ok := cols[k]; !ok || math.Abs(got-v) > 1e-9 {
				t.Errorf("%s: %s = %v (present %v), want %v", c.proto, k, got, ok, v)
			}
		}
	}
}
