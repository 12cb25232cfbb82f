package main

import (
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/stdlib"
)

func TestPaperEncodersTable(t *testing.T) {
	if err := checkPaperEncoders(stdlib.FS()); err != nil {
		t.Fatal(err)
	}
}

// TestEvalTakesThePapersEncoders: -encoder by Table 3 id writes the model,
// weights and family GATE's code used; the ones gatepipe cannot build say
// why.
func TestEvalTakesThePapersEncoders(t *testing.T) {
	for _, tc := range []struct {
		encoder, weights, adapters string
		want                       []string
		err                        string
	}{
		{"cvnxtv2", "", "", []string{`preset = "convnextv2_base"`, `family = "convnext_resnext"`, `weights = "hf:timm/convnextv2_base.fcmae_ft_in22k_in1k"`, `model = "cvnxtv2"`}, ""},
		{"gate:vit", "", "", []string{`preset = "vit_base_patch16_224"`, `weights = "hf:timm/vit_base_patch16_224.augreg_in1k"`, `family = "transformer"`}, ""},
		{"vit", "", "", []string{`arch = "vit"`}, ""}, // gatepipe's architecture, not the paper's
		// D6: Table 3's "clip" is what GATE's untagged timm name chose;
		// protocol gate takes the OpenAI CLIP the paper names.
		{"clip", "", "", []string{`preset = "vit_base_patch16_clip_224"`, `weights = "hf:timm/vit_base_patch16_clip_224.laion2b_ft_in12k_in1k"`}, ""},
		{"clip", "", "table3", []string{`weights = "hf:timm/vit_base_patch16_clip_224.laion2b_ft_in12k_in1k"`}, ""},
		{"clip", "", "gate", []string{`weights = "hf:timm/vit_base_patch16_clip_224.openai"`, "mends D6"}, ""},
		{"clip", "hf:me/my-clip", "gate", []string{`weights = "hf:me/my-clip"`}, ""},
		{"cvnxtv2", "", "gate", []string{`weights = "hf:timm/convnextv2_base.fcmae_ft_in22k_in1k"`}, ""},
		{"effrmr", "", "", []string{`arch = "timm:efficientformerv2_s0"`, `family = "transformer"`}, ""},
		{"svit", "", "", []string{`preset = "vit_base_patch16_224"`}, ""},
		{"bert", "", "", nil, "not built by gatepipe yet"},
		{"laion", "", "", nil, "needs -weights"},
		{"gate:nope", "", "", nil, `has no encoder "nope"`},
	} {
		text, err := evalConfig{encoder: tc.encoder, weights: tc.weights, adapters: tc.adapters, tier: "small", runtime: "auto", scale: "test", gpus: -1}.pipeline()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.encoder, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.encoder, err)
		}
		flat := strings.Join(strings.Fields(text), " ") // hclwrite aligns the = signs
		for _, w := range tc.want {
			if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
				t.Errorf("%s: the pipeline lacks %q:\n%s", tc.encoder, w, text)
			}
		}
		if tc.encoder == "svit" && strings.Contains(text, "weights =") {
			t.Errorf("svit (from scratch) has weights:\n%s", text)
		}
	}
}
