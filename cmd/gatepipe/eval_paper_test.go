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
		// GATE's patch root on the Hub's text and audio encoders: the torch
		// runtime builds them (patchroot.py), their Hub weights by default.
		{"bert", "", "", []string{`arch = "patchroot:google-bert/bert-base-uncased"`, `family = "transformer"`, `weights = "hf:google-bert/bert-base-uncased"`, `model = "bert"`}, ""},
		{"bart", "", "gate", []string{`arch = "patchroot:facebook/bart-base"`, `weights = "hf:facebook/bart-base"`}, ""},
		{"mpnet", "", "", []string{`arch = "patchroot:sentence-transformers/all-mpnet-base-v2"`, `weights = "hf:sentence-transformers/all-mpnet-base-v2"`}, ""},
		{"whspr", "", "", []string{`arch = "patchroot:openai/whisper-base"`, `weights = "hf:openai/whisper-base"`, `family = "transformer"`}, ""},
		{"patchroot:openai/whisper-base", "", "", []string{`arch = "patchroot:openai/whisper-base"`, `family = "transformer"`, `model = "openai/whisper-base"`}, ""},
		{"patchroot:google-bert/bert-base-cased", "", "", nil, "GATE's patch root is built for patchroot:google-bert/bert-base-uncased, patchroot:facebook/bart-base"},
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
		if strings.HasPrefix(tc.encoder, "patchroot:") && strings.Contains(text, "weights =") {
			t.Errorf("%s without -weights has weights:\n%s", tc.encoder, text)
		}
		if tc.encoder == "svit" && strings.Contains(text, "weights =") {
			t.Errorf("svit (from scratch) has weights:\n%s", text)
		}
	}
	// The patch root is the torch worker's: -runtime go is refused.
	for _, enc := range []string{"bert", "whspr", "patchroot:facebook/bart-base"} {
		_, err := evalConfig{encoder: enc, adapters: "compact", tier: "small", runtime: "go", scale: "test", gpus: -1}.pipeline()
		if err == nil || !strings.Contains(err.Error(), "only the torch worker builds: use -runtime torch or auto") {
			t.Errorf("-encoder %s -runtime go: %v", enc, err)
		}
	}
}
