package train

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agext/levenshtein"
)

// Presets are the sizes of the pretrained models users load, by the name
// timm and torchvision give them (torchvision's spelling where the two
// differ, timm's as aliases). An encoder block's preset fills its
// architecture and sizes.
var Presets = map[string]EncoderSpec{}

func init() {
	resnet := func(block string, blocks []int, groups, wpg int) EncoderSpec {
		return EncoderSpec{Arch: "resnet", Stem: "imagenet", Block: block, Channels: []int{64, 128, 256, 512}, Blocks: blocks, Groups: groups, WidthPerGroup: wpg}
	}
	Presets["resnet18"] = resnet("basic", []int{2, 2, 2, 2}, 0, 0)
	Presets["resnet34"] = resnet("basic", []int{3, 4, 6, 3}, 0, 0)
	Presets["resnet50"] = resnet("bottleneck", []int{3, 4, 6, 3}, 0, 0)
	Presets["resnet101"] = resnet("bottleneck", []int{3, 4, 23, 3}, 0, 0)
	Presets["resnet152"] = resnet("bottleneck", []int{3, 8, 36, 3}, 0, 0)
	Presets["resnext50_32x4d"] = resnet("bottleneck", []int{3, 4, 6, 3}, 32, 4)
	Presets["resnext101_32x8d"] = resnet("bottleneck", []int{3, 4, 23, 3}, 32, 8)
	Presets["resnext101_64x4d"] = resnet("bottleneck", []int{3, 4, 23, 3}, 64, 4)
	Presets["wide_resnet50_2"] = resnet("bottleneck", []int{3, 4, 6, 3}, 0, 128)
	Presets["wide_resnet101_2"] = resnet("bottleneck", []int{3, 4, 23, 3}, 0, 128)

	convnext := func(version int, dims, depths []int) EncoderSpec {
		return EncoderSpec{Arch: "convnext", Channels: dims, Blocks: depths, Version: version}
	}
	for _, v := range []struct {
		name   string
		dims   []int
		depths []int
	}{
		{"atto", []int{40, 80, 160, 320}, []int{2, 2, 6, 2}},
		{"femto", []int{48, 96, 192, 384}, []int{2, 2, 6, 2}},
		{"pico", []int{64, 128, 256, 512}, []int{2, 2, 6, 2}},
		{"nano", []int{80, 160, 320, 640}, []int{2, 2, 8, 2}},
		{"tiny", []int{96, 192, 384, 768}, []int{3, 3, 9, 3}},
		{"small", []int{96, 192, 384, 768}, []int{3, 3, 27, 3}},
		{"base", []int{128, 256, 512, 1024}, []int{3, 3, 27, 3}},
		{"large", []int{192, 384, 768, 1536}, []int{3, 3, 27, 3}},
		{"huge", []int{352, 704, 1408, 2816}, []int{3, 3, 27, 3}},
	} {
		Presets["convnext_"+v.name] = convnext(1, v.dims, v.depths)
		Presets["convnextv2_"+v.name] = convnext(2, v.dims, v.depths)
	}

	vit := func(patch, dim, depth, heads int) EncoderSpec {
		return EncoderSpec{Arch: "vit", Patch: patch, Dim: dim, Depth: depth, Heads: heads, MLPRatio: 4}
	}
	for _, v := range []struct {
		size              string
		short             string
		dim, depth, heads int
		patches           []int
	}{
		{"tiny", "ti", 192, 12, 3, []int{16}},
		{"small", "s", 384, 12, 6, []int{16, 32}},
		{"base", "b", 768, 12, 12, []int{16, 32}},
		{"large", "l", 1024, 24, 16, []int{16, 32}},
		{"huge", "h", 1280, 32, 16, []int{14}},
	} {
		for _, p := range v.patches {
			spec := vit(p, v.dim, v.depth, v.heads)
			Presets[fmt.Sprintf("vit_%s_patch%d_224", v.size, p)] = spec
			Presets[fmt.Sprintf("vit_%s_%d", v.short, p)] = spec // torchvision's
			deit3 := spec
			deit3.LayerScale, deit3.NoEmbedClass = true, true
			Presets[fmt.Sprintf("deit3_%s_patch%d_224", v.size, p)] = deit3
			clip := spec
			clip.NormPre, clip.NoPatchBias, clip.LNEps, clip.Act = true, true, 1e-5, QuickGELU
			Presets[fmt.Sprintf("vit_%s_patch%d_clip_quickgelu_224", v.size, p)] = clip
			clip.Act = GELUErf
			Presets[fmt.Sprintf("vit_%s_patch%d_clip_224", v.size, p)] = clip
		}
	}
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Preset returns the named preset, or an error naming the closest ones.
func Preset(name string) (EncoderSpec, error) {
	if p, ok := Presets[name]; ok {
		p.Channels, p.Blocks = slices.Clone(p.Channels), slices.Clone(p.Blocks)
		return p, nil
	}
	return EncoderSpec{}, fmt.Errorf("preset %q is not known; the closest are %s (SPEC.md lists them all)", name, strings.Join(ClosestPresets(name, 6), ", "))
}

// ClosestPresets lists the n preset names closest to name: those of its
// family (the name up to its first '_' or digit) first, each group by edit
// distance.
func ClosestPresets(name string, n int) []string {
	family := name
	if i := strings.IndexAny(name, "_0123456789"); i > 0 {
		family = name[:i]
	}
	names := PresetNames()
	key := func(p string) (bool, int) {
		return !strings.HasPrefix(p, family), levenshtein.Distance(name, p, nil)
	}
	slices.SortStableFunc(names, func(a, b string) int {
		oa, da := key(a)
		ob, db := key(b)
		switch {
		case oa != ob && !oa:
			return -1
		case oa != ob:
			return 1
		}
		return da - db
	})
	return names[:min(n, len(names))]
}
