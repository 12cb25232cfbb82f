package trainnode

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/protocol"
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
