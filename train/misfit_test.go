package train

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// shapesOf returns the gatepipe-named tensor shapes a preset's model
// has, as far as size detection reads them (no values).
func shapesOf(t *testing.T, preset string) renamed {
	t.Helper()
	p, err := Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	r := renamed{tensors: map[string]*safetensors.Tensor{}}
	add := func(name string, shape ...int) { r.tensors[name] = &safetensors.Tensor{Name: name, Shape: shape} }
	s := sizeOfSpec(p)
	switch p.Arch {
	case "vit":
		add("encoder.patch_embed.proj.weight", s.width, 3, s.patch, s.patch)
		for b := range s.depth {
			add(fmt.Sprintf("encoder.blocks.%d.norm1.weight", b), s.width)
		}
	case "resnet":
		for stage, w := range s.widths {
			for b := range s.depths[stage] {
				add(fmt.Sprintf("encoder.layer%d.%d.conv1.weight", stage+1, b), w, 64, 1, 1)
				add(fmt.Sprintf("encoder.layer%d.%d.conv2.weight", stage+1, b), w, w/s.groups, 3, 3)
			}
		}
	}
	return r
}

// TestMisfitNamesBothSizes: weights of another size than the preset
// (ViT-S weights for a ViT-B preset) are explained by both sizes and the
// presets that fit the weights, not as 150 missing tensors.
func TestMisfitNamesBothSizes(t *testing.T) {
	tests := []struct {
		preset, weights string
		want            []string
	}{
		{"vit_base_patch16_224", "vit_small_patch16_224", []string{
			"the weights are a vit 384 wide with 12 blocks and 16-pixel patches; the encoder is 768 wide with 12 blocks and 16-pixel patches",
			"vit_small_patch16_224", "deit3_small_patch16_224"}},
		{"vit_base_patch16_224", "vit_base_patch32_224", []string{"32-pixel patches; the encoder is 768 wide with 12 blocks and 16-pixel patches", "vit_b_32"}},
		{"resnet50", "resnet101", []string{"the weights are a resnet [64 128 256 512] wide in its stages, [3 4 23 3] blocks deep; the encoder is [64 128 256 512] wide in its stages, [3 4 6 3] blocks deep", "presets of the weights' size: resnet101)"}},
		{"resnet50", "wide_resnet50_2", []string{"[128 256 512 1024] wide in its stages", "presets of the weights' size: wide_resnet50_2)"}},
		{"resnet50", "resnext50_32x4d", []string{"its 3x3 convolutions in 32 groups", "presets of the weights' size: resnext50_32x4d)"}},
	}
	for _, tc := range tests {
		t.Run(tc.weights+" as "+tc.preset, func(t *testing.T) {
			enc, _ := Preset(tc.preset)
			got := misfit(enc, shapesOf(t, tc.weights))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("misfit says %q, want it to say %q", got, w)
				}
			}
		})
	}
	enc, _ := Preset("resnet50")
	if got := misfit(enc, shapesOf(t, "resnet50")); got != "" {
		t.Errorf("weights of the preset's size: %q", got)
	}
}

// TestMatchWeightsReportsAMisfitNotMissingTensors: a file with the
// encoder's names but another width is read in its own naming, and the
// error gives both widths instead of calling every tensor missing.
func TestMatchWeightsReportsAMisfitNotMissingTensors(t *testing.T) {
	parity, err := safetensors.ReadFile(filepath.Join("testdata", "parity", "vit.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	// As timm names them: no "encoder." prefix.
	f := &safetensors.File{Tensors: map[string]*safetensors.Tensor{}}
	for name, tn := range parity.Tensors {
		name = strings.TrimPrefix(name, "encoder.")
		f.Tensors[name] = &safetensors.Tensor{Name: name, DType: tn.DType, Shape: tn.Shape, Data: tn.Data}
	}
	enc := EncoderSpec{Arch: "vit", Patch: 4, Dim: 32, Depth: 2, Heads: 2, MLPRatio: 2}
	_, _, err = MatchWeights(enc, Classification, []int{3, 8, 8}, 5, f)
	if err == nil {
		t.Fatal("weights 16 wide loaded into an encoder 32 wide")
	}
	msg := err.Error()
	if !strings.Contains(msg, "the weights are a vit 16 wide with 2 blocks and 4-pixel patches; the encoder is 32 wide") || strings.Contains(msg, "missing") {
		t.Fatalf("error: %v", err)
	}
}
