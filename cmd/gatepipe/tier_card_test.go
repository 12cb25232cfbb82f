package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/torchtest"
)

// TestSmallTierCardsAtFullScale: the small tier at full scale with GATE's
// adapters gives each train node GATE's recipe for its encoder's family
// (cifar100's learning rate 2e-5 for ConvNeXt V2, 1e-5 for a ViT, 1e-3 for
// a ResNet), GATE's batch, augmentation, validation cadence and image
// sizes, under protocol table3 (the default) with its defects, or gate.
func TestSmallTierCardsAtFullScale(t *testing.T) {
	type card struct {
		Name         string   `json:"name"`
		Augmentation string   `json:"augmentation"`
		ImageSize    []int    `json:"image_size"`
		BatchSize    int      `json:"batch_size"`
		Defects      []string `json:"defects"`
		Recipe       struct {
			LR        float64 `json:"lr"`
			EvalEvery int     `json:"eval_every"`
			Precision string  `json:"precision"`
		} `json:"recipe"`
	}
	for _, tc := range []struct {
		preset, adapters string
		lr               float64
	}{
		{"convnextv2_base", "", 2e-5},
		{"vit_base_patch16_224", "", 1e-5},
		{"resnet50", "", 1e-3},
		{"vit_base_patch16_224", "gate", 1e-5},
	} {
		dir := t.TempDir()
		adapters := ""
		if tc.adapters != "" {
			adapters = fmt.Sprintf("  adapters = %q\n", tc.adapters)
		}
		writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
encoder "mine" {
  preset = %q
}

module "gate" {
  source  = "stdlib/tiers/small"
  encoder = encoder.mine
  model   = "mine"
  python  = %q
%s}
`, tc.preset, torchtest.Python(), adapters))
		r := gp(t, filepath.Join(t.TempDir(), "c"), "export", "-format", "json", dir)
		if r.code != 0 {
			t.Fatalf("%s: export: %d\n%s", tc.preset, r.code, r.stderr)
		}
		var plan struct {
			Nodes []struct {
				Node struct {
					Addr     string `json:"addr"`
					Protocol *card  `json:"protocol"`
				} `json:"node"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
			t.Fatal(err)
		}
		cards := map[string]*card{}
		for _, n := range plan.Nodes {
			if n.Node.Protocol != nil {
				cards[n.Node.Addr] = n.Node.Protocol
			}
		}
		at := func(b string) *card {
			c := cards[fmt.Sprintf("module.gate.module.run.train.run[%q]", b)]
			if c == nil {
				t.Fatalf("%s: no card for %s among %d", tc.preset, b, len(cards))
			}
			return c
		}
		name, defects := "table3", []string{"D1", "D2", "D3", "D4", "D5", "D6", "D7", "D11"}
		if tc.adapters == "gate" {
			name, defects = "gate", nil
		}
		cifar := at("cifar100")
		if cifar.Name != name || !slices.Equal(cifar.Defects, defects) || cifar.Recipe.LR != tc.lr || cifar.BatchSize != 64 ||
			cifar.Augmentation != "rand-m9-n3-mstd0.5-inc1" || cifar.Recipe.EvalEvery != 250 || cifar.Recipe.Precision != "bf16" {
			t.Errorf("%s %s: cifar100's card %+v", tc.preset, tc.adapters, *cifar)
		}
		if ade := at("ade20k"); ade.BatchSize != 8 || !slices.Equal(ade.ImageSize, []int{1024, 1024}) {
			t.Errorf("%s: ade20k's card %+v", tc.preset, *ade)
		}
		if ade := at("ade20k"); ade.Augmentation != "random crop (1024 of a 2048 resize), horizontal flip, photometric distortion" {
			t.Errorf("%s: ade20k's augmentation %q", tc.preset, ade.Augmentation)
		}
		if iw := at("iwildcam"); !strings.HasPrefix(iw.Augmentation, "resize 448, random crop 224") {
			t.Errorf("%s: iwildcam's augmentation %q", tc.preset, iw.Augmentation)
		}
		if acdc := at("acdc"); !slices.Equal(acdc.ImageSize, []int{512, 512}) || acdc.Recipe.Precision != "fp16" || !strings.HasPrefix(acdc.Augmentation, "medical: random crop") {
			t.Errorf("%s: acdc's card %+v", tc.preset, *acdc)
		}
	}
}
