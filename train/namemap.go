package train

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// Weight-file naming conventions MatchWeights understands.
const (
	// FormatGatepipe: gatepipe's own names ("encoder." + timm's name for
	// the encoder, "head." for the classifier), as its checkpoints have.
	FormatGatepipe = "gatepipe"
	// FormatTimm: a timm model's state_dict (model.safetensors of a timm
	// hub repository).
	FormatTimm = "timm"
	// FormatTorchvision: a torchvision model's state_dict saved as
	// safetensors.
	FormatTorchvision = "torchvision"
)

// WeightFormats lists the accepted weights_format values ("" detects).
var WeightFormats = []string{FormatGatepipe, FormatTimm, FormatTorchvision}

// timmClassifier is the classifier's name prefix in timm's models.
var timmClassifier = map[string]string{"resnet": "fc.", "convnext": "head.fc.", "vit": "head."}

// timmToGatepipe maps a timm tensor name to gatepipe's.
func timmToGatepipe(arch, name string) string {
	if c, ok := timmClassifier[arch]; ok && strings.HasPrefix(name, c) {
		return "head." + strings.TrimPrefix(name, c)
	}
	return "encoder." + name
}

var (
	tvConvNeXtBlock = regexp.MustCompile(`^features\.(\d+)\.(\d+)\.(block\.(\d+)|layer_scale)(\.(weight|bias))?$`)
	tvConvNeXtDown  = regexp.MustCompile(`^features\.(\d+)\.([01])\.(weight|bias)$`)
	tvViTLayer      = regexp.MustCompile(`^encoder\.layers\.encoder_layer_(\d+)\.(.+)$`)
)

// tvConvNeXtBlockPart maps torchvision's CNBlock Sequential indices to
// timm's names.
var tvConvNeXtBlockPart = map[string]string{"0": "conv_dw", "2": "norm", "3": "mlp.fc1", "5": "mlp.fc2"}

// tvViTLayerPart maps torchvision's EncoderBlock names to timm's Block's.
var tvViTLayerPart = map[string]string{
	"ln_1.weight": "norm1.weight", "ln_1.bias": "norm1.bias", "ln_2.weight": "norm2.weight", "ln_2.bias": "norm2.bias",
	"self_attention.in_proj_weight": "attn.qkv.weight", "self_attention.in_proj_bias": "attn.qkv.bias",
	"self_attention.out_proj.weight": "attn.proj.weight", "self_attention.out_proj.bias": "attn.proj.bias",
	"mlp.0.weight": "mlp.fc1.weight", "mlp.0.bias": "mlp.fc1.bias", "mlp.3.weight": "mlp.fc2.weight", "mlp.3.bias": "mlp.fc2.bias",
	// torchvision before 0.13 named the MLP's layers linear_1 and linear_2.
	"mlp.linear_1.weight": "mlp.fc1.weight", "mlp.linear_1.bias": "mlp.fc1.bias",
	"mlp.linear_2.weight": "mlp.fc2.weight", "mlp.linear_2.bias": "mlp.fc2.bias",
}

var tvViTTop = map[string]string{
	"conv_proj.weight": "patch_embed.proj.weight", "conv_proj.bias": "patch_embed.proj.bias",
	"class_token": "cls_token", "encoder.pos_embedding": "pos_embed", "encoder.ln.weight": "norm.weight",
	"encoder.ln.bias": "norm.bias", "heads.head.weight": "head.weight", "heads.head.bias": "head.bias",
}

// torchvisionToTimm maps a torchvision tensor name to timm's ("" when
// the tensor has no counterpart). ResNets share their names.
func torchvisionToTimm(arch, name string) string {
	switch arch {
	case "convnext":
		return tvConvNeXtToTimm(name)
	case "vit":
		if t, ok := tvViTTop[name]; ok {
			return t
		}
		if m := tvViTLayer.FindStringSubmatch(name); m != nil {
			if part, ok := tvViTLayerPart[m[2]]; ok {
				return "blocks." + m[1] + "." + part
			}
		}
		return ""
	}
	return name
}

// tvConvNeXtToTimm: torchvision's features.0 is the stem, features.2s-1
// stage s's blocks and features.2s its downsample; classifier.0 the head
// norm and classifier.2 the classifier.
func tvConvNeXtToTimm(name string) string {
	switch {
	case strings.HasPrefix(name, "features.0.0."):
		return "stem.0." + strings.TrimPrefix(name, "features.0.0.")
	case strings.HasPrefix(name, "features.0.1."):
		return "stem.1." + strings.TrimPrefix(name, "features.0.1.")
	case strings.HasPrefix(name, "classifier.0."):
		return "head.norm." + strings.TrimPrefix(name, "classifier.0.")
	case strings.HasPrefix(name, "classifier.2."):
		return "head.fc." + strings.TrimPrefix(name, "classifier.2.")
	}
	if m := tvConvNeXtBlock.FindStringSubmatch(name); m != nil {
		k, _ := strconv.Atoi(m[1])
		if k%2 == 1 {
			stage := fmt.Sprintf("stages.%d.blocks.%s.", (k-1)/2, m[2])
			if m[3] == "layer_scale" {
				return stage + "gamma"
			}
			if part, ok := tvConvNeXtBlockPart[m[4]]; ok && m[6] != "" {
				return stage + part + "." + m[6]
			}
			return ""
		}
	}
	if m := tvConvNeXtDown.FindStringSubmatch(name); m != nil {
		k, _ := strconv.Atoi(m[1])
		if k%2 == 0 && k > 0 {
			return fmt.Sprintf("stages.%d.downsample.%s.%s", k/2, m[2], m[3])
		}
	}
	return ""
}

// renamed is a weights file's tensors under gatepipe's names, with the
// name each had in the file.
type renamed struct {
	format  string
	tensors map[string]*safetensors.Tensor
	from    map[string]string
}

// rename maps f's tensors to gatepipe's names in the given format.
func rename(arch, format string, f *safetensors.File) renamed {
	r := renamed{format: format, tensors: map[string]*safetensors.Tensor{}, from: map[string]string{}}
	names := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		g := n
		switch format {
		case FormatTimm:
			g = timmToGatepipe(arch, n)
		case FormatTorchvision:
			t := torchvisionToTimm(arch, n)
			if t == "" {
				continue
			}
			g = timmToGatepipe(arch, t)
		}
		r.tensors[g], r.from[g] = f.Tensors[n], n
	}
	return r
}

// pickFormat renames f in format, or when format is "" in the convention
// under which the most of ps's tensors are found with their shapes.
func pickFormat(enc EncoderSpec, ps []*param, f *safetensors.File) (renamed, error) {
	if enc.WeightsFormat != "" {
		if !slices.Contains(WeightFormats, enc.WeightsFormat) {
			return renamed{}, fmt.Errorf("weights_format %q is not one of %v", enc.WeightsFormat, WeightFormats)
		}
		return rename(enc.Arch, enc.WeightsFormat, f), nil
	}
	// The format that names the most parameters wins; then the one whose
	// tensors fit the most. Names come first, so that weights of another
	// size are reported as misfits, not as missing.
	var best renamed
	bestNames, bestFits := -1, -1
	for _, format := range WeightFormats {
		r := rename(enc.Arch, format, f)
		names, fits := 0, 0
		for _, p := range ps {
			if t, ok := r.tensors[p.name]; ok {
				names++
				if t.NumElements() == prod(p.shape) {
					fits++
				}
			}
		}
		if names > bestNames || names == bestNames && fits > bestFits {
			best, bestNames, bestFits = r, names, fits
		}
	}
	return best, nil
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}
