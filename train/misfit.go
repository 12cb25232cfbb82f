package train

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// modelSize is what tells models of one architecture apart: a ViT's
// width, depth and patch; a ResNet's or ConvNeXt's stage widths and depths.
type modelSize struct {
	arch           string
	width, depth   int
	patch          int
	widths, depths []int
	groups         int // a ResNeXt's grouped 3x3 (1 otherwise)
}

func (s modelSize) String() string {
	switch s.arch {
	case "vit":
		return fmt.Sprintf("%d wide with %d blocks and %d-pixel patches", s.width, s.depth, s.patch)
	case "resnet", "convnext":
		g := ""
		if s.groups > 1 {
			g = fmt.Sprintf(", its 3x3 convolutions in %d groups", s.groups)
		}
		return fmt.Sprintf("%v wide in its stages, %v blocks deep%s", s.widths, s.depths, g)
	}
	return ""
}

func (s modelSize) known() bool {
	switch s.arch {
	case "vit":
		return s.width > 0 && s.depth > 0
	case "resnet", "convnext":
		return len(s.widths) > 0
	}
	return false
}

func (s modelSize) equal(o modelSize) bool {
	return s.arch == o.arch && s.width == o.width && s.depth == o.depth && s.patch == o.patch && s.groups == o.groups &&
		slices.Equal(s.widths, o.widths) && slices.Equal(s.depths, o.depths)
}

var (
	vitBlock     = regexp.MustCompile(`^encoder\.blocks\.(\d+)\.`)
	resnetBlock  = regexp.MustCompile(`^encoder\.layer(\d+)\.(\d+)\.conv1\.weight$`)
	convnextNorm = regexp.MustCompile(`^encoder\.stages\.(\d+)\.blocks\.(\d+)\.norm\.weight$`)
)

// sizeOfShapes reads a model's size from its tensors' shapes, by
// gatepipe's names.
func sizeOfShapes(arch string, shapes map[string][]int) modelSize {
	s := modelSize{arch: arch}
	if c := shapes["encoder.layer1.0.conv2.weight"]; arch == "resnet" && len(c) == 4 && c[1] > 0 {
		s.groups = c[0] / c[1]
	}
	switch arch {
	case "vit":
		if p := shapes["encoder.patch_embed.proj.weight"]; len(p) == 4 {
			s.width, s.patch = p[0], p[2]
		}
		for name := range shapes {
			if m := vitBlock.FindStringSubmatch(name); m != nil {
				n, _ := strconv.Atoi(m[1])
				s.depth = max(s.depth, n+1)
			}
		}
	case "resnet", "convnext":
		re := resnetBlock
		if arch == "convnext" {
			re = convnextNorm
		}
		for name, shape := range shapes {
			m := re.FindStringSubmatch(name)
			if m == nil || len(shape) == 0 {
				continue
			}
			stage, _ := strconv.Atoi(m[1])
			if arch == "resnet" {
				stage-- // layer1 is the first stage
			}
			block, _ := strconv.Atoi(m[2])
			if stage < 0 || stage > 16 {
				continue
			}
			for len(s.widths) <= stage {
				s.widths, s.depths = append(s.widths, 0), append(s.depths, 0)
			}
			s.depths[stage] = max(s.depths[stage], block+1)
			if block == 0 {
				s.widths[stage] = shape[0]
			}
		}
	}
	return s
}

// sizeOfSpec is sizeOfShapes for a model that enc would build.
func sizeOfSpec(enc EncoderSpec) modelSize {
	s := modelSize{arch: enc.Arch}
	switch enc.Arch {
	case "vit":
		s.width, s.depth, s.patch = enc.Dim, enc.Depth, enc.Patch
	case "resnet":
		s.groups = 1
		if enc.Block == "bottleneck" {
			s.groups = max(enc.Groups, 1)
		}
		for _, c := range enc.Channels {
			if enc.Block == "bottleneck" {
				c = enc.bottleneckWidth(c)
			}
			s.widths = append(s.widths, c)
		}
		s.depths = slices.Clone(enc.Blocks)
	case "convnext":
		s.widths, s.depths = slices.Clone(enc.Channels), slices.Clone(enc.Blocks)
	}
	return s
}

// misfit explains weights whose tensors have the encoder's names but not
// its sizes: both sizes, and the presets that have the weights' size.
func misfit(enc EncoderSpec, r renamed) string {
	shapes := map[string][]int{}
	for name, t := range r.tensors {
		shapes[name] = t.Shape
	}
	file, want := sizeOfShapes(enc.Arch, shapes), sizeOfSpec(enc)
	if !file.known() || !want.known() || file.equal(want) {
		return ""
	}
	msg := fmt.Sprintf("the weights are a %s %s; the encoder is %s", enc.Arch, file, want)
	var fit []string
	for _, name := range PresetNames() {
		if p := Presets[name]; p.Arch == enc.Arch && sizeOfSpec(p).equal(file) {
			fit = append(fit, name)
		}
	}
	if len(fit) > 0 {
		return msg + fmt.Sprintf(" (presets of the weights' size: %s)", strings.Join(first(fit, 8), ", "))
	}
	return msg + " (no preset has the weights' size: set arch and its sizes)"
}
