package protocol

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/stdlib"
)

func load(t *testing.T) *Table {
	t.Helper()
	tab, err := Load(stdlib.FS())
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestSmallTierCards holds the cards the issue names for the small tier
// with a ViT-B/16 encoder at full scale.
func TestSmallTierCards(t *testing.T) {
	tab := load(t)
	cases := []struct {
		adapter, bench string
		check          func(c Card) bool
		want           string
	}{
		{"segmentation", "ade20k", func(c Card) bool {
			return c.Head.Name == "transformer_decoder" && c.Head.Blocks == 8 && c.Head.Width == 1024 && c.ImageSize[0] == 1024 && c.Loss == "focal_ce_ignore0" && *c.IgnoreLabel == 0
		}, "an 8-block, width-1024 decoder at 1024 px"},
		{"segmentation", "acdc", func(c Card) bool {
			return c.Loss == "dice_ignore0" && c.ImageSize[0] == 512 && c.Metric == "Dice Score" && c.Head.Blocks == 8 && c.BatchSize == 1
		}, "a Dice loss at 512 px"},
		{"relational", "clevr-math", func(c Card) bool {
			return c.TextEncoder != nil && *c.TextEncoder == "openai/clip-vit-base-patch16" && c.Head.Blocks == 4 && c.Head.Width == 512
		}, "the CLIP text tower"},
		{"fewshot", "mini", func(c Card) bool {
			return c.Episodes != nil && c.Episodes.Ways == [2]int{5, 49} && c.Episodes.Test == 600 && c.Episodes.Val == 600
		}, "ways [5, 49], 600 test episodes"},
		{"fewshot", "cubirds", func(c Card) bool { return c.Episodes.Ways == [2]int{5, 49} && c.Episodes.Test == 600 }, "ways [5, 49]"},
		{"fewshot", "aircraft", func(c Card) bool { return c.Episodes.Ways == [2]int{5, 9} }, "aircraft's ways [5, 9]"},
		{"video_regression", "iwildcam", func(c Card) bool {
			return c.Loss == "l1" && c.Selection.Direction == "min" && c.Head.Blocks == 6 && c.Head.Width == 768
		}, "an L1 loss"},
		{"classification", "cifar100", func(c Card) bool {
			return c.Head.Name == "linear" && c.Head.Projection == 768 && c.TextEncoder == nil && c.BatchSize == 64 && c.Stem == "instance_norm"
		}, "a linear head on a 768-d projection"},
	}
	for _, tc := range cases {
		c, err := tab.Card(Table3, tc.adapter, tc.bench, "")
		if err != nil {
			t.Fatal(err)
		}
		if !tc.check(c) {
			b, _ := json.Marshal(c)
			t.Errorf("%s: want %s, got %s", tc.bench, tc.want, b)
		}
	}
}

func TestCappedScalesShrinkTheAdapters(t *testing.T) {
	tab := load(t)
	c, err := tab.Card(Table3, "segmentation", "ade20k", "test")
	if err != nil {
		t.Fatal(err)
	}
	if c.Head.Name != "transformer_decoder" || c.Head.Blocks != 1 || c.Head.Width != 16 || c.ImageSize != nil || c.Scale != "test" {
		t.Errorf("test scale: %+v", c)
	}
	// A size the adapter does not have stays absent.
	c, _ = tab.Card(Table3, "classification", "cifar100", "test")
	if c.Head.Blocks != 0 || c.Head.Width != 0 || c.Head.Projection != 16 {
		t.Errorf("linear head at test scale: %+v", c.Head)
	}
	c, _ = tab.Card(Table3, "fewshot", "omniglot", "test")
	if c.Episodes.Ways != [2]int{3, 3} || c.Episodes.Test != 4 || c.Episodes.MaxQueries != 5 {
		t.Errorf("few-shot at test scale: %+v", *c.Episodes)
	}
	if !strings.Contains(c.Words(), "[test sizes]") {
		t.Errorf("words: %s", c.Words())
	}
}

func TestUnknownsAreErrors(t *testing.T) {
	tab := load(t)
	if _, err := tab.Card(Table3, "telepathy", "", ""); err == nil || !strings.Contains(err.Error(), "classification") {
		t.Errorf("unknown adapter: %v", err)
	}
	if _, err := tab.Card(Table3, "fewshot", "", "huge"); err == nil || !strings.Contains(err.Error(), "smoke") {
		t.Errorf("unknown scale: %v", err)
	}
	for _, bad := range []string{`{`, `{"adapters": {"x": {"loss": "l1"}}}`, `{"adapters": {"x": {"head": {"name": "h"}, "loss": "l", "metric": "m", "selection": {}}}}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s) passed", bad)
		}
	}
}

func TestWords(t *testing.T) {
	c, _ := load(t).Card(Table3, "segmentation", "ade20k", "")
	want := "transformer decoder head (8 blocks (computed by GATE but not applied), width 1024, 8 heads, on a 768-d projection), focal ce ignore0 loss, 1024x1024 px, batch 8, augmentation random crop (1024 of a 2048 resize), horizontal flip, photometric distortion; mIoU (selected by mIoU, max); GATE's defects D1, D2, D3, D4, D5, D6, D7, D11 reproduced"
	if got := c.Words(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestRecipes holds GATE's learning rates by encoder family
// (gate/tiers/core.py get_model_selection) and the recipe around them.
func TestRecipes(t *testing.T) {
	tab := load(t)
	for _, tc := range []struct {
		adapter, bench, family string
		lr, decoder            float64
		precision              string
	}{
		{"classification", "cifar100", "transformer", 1e-5, 0, "bf16"},
		{"classification", "cifar100", "convnext_resnext", 2e-5, 0, "bf16"},
		{"classification", "cifar100", "conv", 1e-3, 0, "bf16"},
		{"segmentation", "ade20k", "conv", 6e-4, 10, "bf16"},
		{"segmentation", "ade20k", "transformer", 1e-5, 10, "bf16"},
		{"segmentation", "acdc", "convnext_resnext", 2e-5, 10, "fp16"},
	} {
		c, err := tab.Card(Table3, tc.adapter, tc.bench, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := tab.WithRecipe(&c, tc.family); err != nil {
			t.Fatal(err)
		}
		r := c.Recipe
		if r.LR != tc.lr || r.DecoderLRMultiplier != tc.decoder || r.Precision != tc.precision || r.EvalEvery != 250 ||
			r.Iterations != 10000 || r.Optimizer.Betas != [2]float64{0.9, 0.98} || r.Optimizer.Eps != 1e-6 ||
			r.Optimizer.WeightDecay != 0 || r.Schedule.On != "train_loss" || r.Schedule.Patience != 1000 {
			t.Errorf("%s/%s: %+v", tc.bench, tc.family, *r)
		}
	}
	c, _ := tab.Card(Table3, "classification", "cifar100", "")
	if err := tab.WithRecipe(&c, "quantum"); err == nil || !strings.Contains(err.Error(), "convnext_resnext") {
		t.Errorf("unknown family: %v", err)
	}
}

// TestProtocolsDifferByTheirDefects: table3 reproduces D1, D2 and D7;
// gate mends them (D2: GATE's intended decay).
func TestProtocolsDifferByTheirDefects(t *testing.T) {
	tab := load(t)
	t3, _ := tab.Card(Table3, "video", "hmdb51", "")
	g, _ := tab.Card(GATE, "video", "hmdb51", "")
	if !t3.Has("D1") || !t3.Has("D2") || !t3.Has("D3") || !t3.Has("D7") || len(g.Defects) != 0 || t3.Name != "table3" || g.Name != "gate" {
		t.Errorf("defects: table3 %v, gate %v", t3.Defects, g.Defects)
	}
	tab.WithRecipe(&t3, "transformer")
	tab.WithRecipe(&g, "transformer")
	if t3.Recipe.Optimizer.WeightDecay != 0 || g.Recipe.Optimizer.WeightDecay != 0.01 || len(g.Recipe.Optimizer.NoDecay) != 2 {
		t.Errorf("D2: table3 %+v, gate %+v", t3.Recipe.Optimizer, g.Recipe.Optimizer)
	}
	if _, err := tab.Card("paper", "video", "", ""); err == nil || !strings.Contains(err.Error(), "table3") {
		t.Errorf("unknown protocol: %v", err)
	}
}

// TestCardSaysWhatRuns: the recipe values that run replace GATE's on the
// card, each that differs noted with GATE's beside it.
func TestCardSaysWhatRuns(t *testing.T) {
	tab := load(t)
	c, _ := tab.Card(Table3, "classification", "cifar100", "")
	tab.WithRecipe(&c, "transformer")
	full := c
	full.Recipe = new(*c.Recipe)
	full.RunsWith(1e-5, 0, 64, 10000, 250, 3)
	if len(full.Differs) != 0 {
		t.Errorf("GATE's own recipe differs: %v", full.Differs)
	}
	c.RunsWith(1e-5, 0, 8, 4, 2, 1)
	want := []string{"batch 8 (GATE's 64)", "iterations 4 (GATE's 10000)", "eval every 2 (GATE's 250)", "ensemble top-1 (GATE's top-3)"}
	if !slices.Equal(c.Differs, want) || c.BatchSize != 8 || c.Recipe.Iterations != 4 || c.Recipe.EvalEvery != 2 {
		t.Errorf("differs %q, batch %d, recipe %+v", c.Differs, c.BatchSize, *c.Recipe)
	}
}
