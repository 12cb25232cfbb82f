package train

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// EncoderSpec describes a built-in encoder. Parameter names follow
// PyTorch conventions under the prefix "encoder." (SPEC.md lists them), so
// a state_dict exported to safetensors loads as is.
type EncoderSpec struct {
	// Arch is "mlp", "convnet", "resnet", "convnext" or "vit".
	Arch string `json:"arch"`
	// Args are a researcher's own encoder's keyword arguments (JSON) and
	// Code the SHA-256 of its file and inputs (arch "python:...").
	Args json.RawMessage `json:"args,omitempty"`
	Code string          `json:"code,omitempty"`
	// Channels are the convnet's conv widths (each 3x3, ReLU, 2x2 max
	// pool) or the resnet's stage widths; Hidden the dense layers after
	// the convnet (or the MLP's layers).
	Channels []int `json:"channels"`
	Hidden   []int `json:"hidden"`
	// Blocks is the number of basic blocks per resnet stage.
	Blocks []int `json:"blocks,omitempty"`
	// ViT sizes: patch side, embedding width, depth, heads and MLP ratio.
	Patch    int `json:"patch,omitempty"`
	Dim      int `json:"dim,omitempty"`
	Depth    int `json:"depth,omitempty"`
	Heads    int `json:"heads,omitempty"`
	MLPRatio int `json:"mlp_ratio,omitempty"`
	// ResNet: Stem is "cifar" (3x3 conv, the default) or "imagenet"
	// (torchvision's 7x7 stride-2 conv, BN, ReLU and 3x3 stride-2 max
	// pool); Block "basic" (default) or "bottleneck" (1x1, 3x3, 1x1 with
	// expansion 4); Groups and WidthPerGroup the bottleneck's grouped 3x3
	// (ResNeXt: 32 and 4; 1 and 64 by default).
	Stem          string `json:"stem,omitempty"`
	Block         string `json:"block,omitempty"`
	Groups        int    `json:"groups,omitempty"`
	WidthPerGroup int    `json:"width_per_group,omitempty"`
	// ConvNeXt (Channels the stage widths, Blocks the depths): Version 2
	// adds GRN and drops layer scale.
	Version int `json:"version,omitempty"`
	// ViT: Act the MLP's activation ("gelu", exact, by default;
	// "gelu_tanh"; "quick_gelu"); LNEps the LayerNorm epsilon (1e-6 by
	// default; CLIP uses 1e-5); NormPre a LayerNorm before the blocks
	// (CLIP); NoPatchBias drops the patch projection's bias (CLIP);
	// LayerScale per-channel residual scales (DeiT3); NoEmbedClass: the
	// position embedding covers the patches only (DeiT3, FlexiViT);
	// NoClassToken: no class token (pooling must be "avg"); Pool "token"
	// (default) or "avg" (mean of the patch tokens, then fc_norm).
	Act          string  `json:"act,omitempty"`
	LNEps        float64 `json:"ln_eps,omitempty"`
	NormPre      bool    `json:"norm_pre,omitempty"`
	NoPatchBias  bool    `json:"no_patch_bias,omitempty"`
	LayerScale   bool    `json:"layer_scale,omitempty"`
	NoEmbedClass bool    `json:"no_embed_class,omitempty"`
	NoClassToken bool    `json:"no_class_token,omitempty"`
	Pool         string  `json:"pool,omitempty"`
	// WeightsFormat names the weights file's naming convention: "timm",
	// "torchvision" or "gatepipe"; "" detects it from the names.
	WeightsFormat string `json:"weights_format,omitempty"`
	// Head sizes the adapter where it has sizes (the video head's
	// temporal transformer).
	Head HeadSpec `json:"head,omitempty"`
	// InputShape is the example shape the encoder's weights expect. When
	// it is set and the data's shape differs (a modality shift), a stem
	// maps the data to it (see stem).
	InputShape []int `json:"input_shape,omitempty"`
}

// Archs lists the built-in encoder architectures.
var Archs = []string{"mlp", "convnet", "resnet", "convnext", "vit"}

// stem adapts x (examples of shape) to the encoder's InputShape when they
// differ: images through a ViT-style patchify and linear projection
// ("stem.proj", a conv with kernel = stride = the size ratio) and, where
// the sizes still differ, bilinear resizing; vectors through a linear
// projection reshaped to the input shape; images to vectors by flattening
// and projecting.
func (e EncoderSpec) stem(b *builder, x *G.Node, shape []int) (*G.Node, []int) {
	want := e.InputShape
	if len(want) == 0 || slices.Equal(want, shape) {
		return x, shape
	}
	batch := x.Shape()[0]
	size := func(s []int) int {
		n := 1
		for _, d := range s {
			n *= d
		}
		return n
	}
	if len(shape) == 3 && len(want) == 3 {
		p := max(1, min(shape[1]/want[1], shape[2]/want[2]))
		y := b.conv(x, "stem.proj", shape[0], want[0], p, p, 0, true)
		h, w := y.Shape()[2], y.Shape()[3]
		if h != want[1] || w != want[2] {
			y = b.upsample(y, batch*want[0], want[1], want[2])
			y = b.must(G.Reshape(y, append(tensor.Shape{batch}, want...)))
		}
		return y, want
	}
	flat := b.must(G.Reshape(x, tensor.Shape{batch, size(shape)}))
	y := b.linear(flat, "stem.proj", size(shape), size(want), true)
	return b.must(G.Reshape(y, append(tensor.Shape{batch}, want...))), want
}

// LibraryPrefixes mark an encoder that PyTorch builds on the torch
// runtime: a model of timm's or torchvision's by name ("timm:resnet50",
// "torchvision:convnext_tiny"), GATE's patch root on a Hugging Face
// encoder ("patchroot:google-bert/bert-base-uncased", PatchRootPrefix),
// or a researcher's own module ("python:mymodel.py:MyNet",
// UserArchPrefix).
var LibraryPrefixes = []string{"timm:", "torchvision:", PatchRootPrefix, UserArchPrefix}

// PatchRootPrefix marks GATE's patch root (its VisionRootReplacedBackbone)
// on one of the Hugging Face text and audio encoders of the paper: a
// randomly initialised patch embedding, class token and positions feeding
// the model's encoder layers, which the torch worker builds in plain
// PyTorch (nodes/torchrt/py/gatepipe_worker/patchroot.py).
const PatchRootPrefix = "patchroot:"

// PatchRootModels are the Hub models the patch root is built for (the
// NAME of arch = "patchroot:NAME"; weights = "hf:NAME" loads the Hub's
// model.safetensors).
var PatchRootModels = []string{"google-bert/bert-base-uncased", "facebook/bart-base", "sentence-transformers/all-mpnet-base-v2", "openai/whisper-base"}

// IsPatchRoot reports whether arch is GATE's patch root on a Hub model
// (any NAME: PatchRootModels lists those that exist).
func IsPatchRoot(arch string) bool {
	return strings.HasPrefix(arch, PatchRootPrefix) && len(arch) > len(PatchRootPrefix)
}

// UserArchPrefix marks a researcher's own encoder: "python:PATH:CALLABLE",
// a callable in a Python file that returns a torch.nn.Module.
const UserArchPrefix = "python:"

// SplitUserArch splits "python:PATH:CALLABLE" into the file and the
// callable; ok is false when arch is not of that form (CALLABLE must be a
// Python identifier).
func SplitUserArch(arch string) (path, callable string, ok bool) {
	rest, found := strings.CutPrefix(arch, UserArchPrefix)
	i := strings.LastIndexByte(rest, ':')
	if !found || i <= 0 {
		return "", "", false
	}
	path, callable = rest[:i], rest[i+1:]
	for j, r := range callable {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || j > 0 && r >= '0' && r <= '9') {
			return "", "", false
		}
	}
	return path, callable, callable != ""
}

// IsLibrary reports whether arch names a timm or torchvision model: the
// torch runtime builds it with the library (gatepipe's Go runtime has no
// such model) and its tensors keep the library's names under encoder.
// (DrawnSpec says who draws its starting weights.)
func IsLibrary(arch string) bool {
	for _, p := range LibraryPrefixes {
		if strings.HasPrefix(arch, p) && len(arch) > len(p) {
			return true
		}
	}
	return false
}

// LibraryTwin is the built-in preset that computes the same function as a
// library encoder under the same tensor names, where there is one:
// torchvision's ResNets (ResNeXts, wide ResNets) are gatepipe's resnet
// presets of the same name, whose names are torchvision's under
// encoder.. gatepipe draws such an encoder's starting weights itself, as
// for its own architectures, so the torch runtime trains it exactly as it
// trains the preset. ok is false for every other library model (torch
// initialises those).
func LibraryTwin(arch string) (twin EncoderSpec, ok bool) {
	name, found := strings.CutPrefix(arch, "torchvision:")
	if !found {
		return EncoderSpec{}, false
	}
	p, ok := Presets[name]
	if !ok || p.Arch != "resnet" {
		return EncoderSpec{}, false
	}
	return p, true
}

// DrawnSpec is the architecture whose starting weights gatepipe draws for
// enc: enc itself, or a library encoder's twin (LibraryTwin) when it has
// no weights of its own to load (ownWeights); ok is false where torch
// initialises the model.
func DrawnSpec(enc EncoderSpec, ownWeights bool) (EncoderSpec, bool) {
	if !IsLibrary(enc.Arch) {
		return enc, true
	}
	twin, ok := LibraryTwin(enc.Arch)
	if !ok || ownWeights {
		return EncoderSpec{}, false
	}
	twin.Hidden, twin.Head = enc.Hidden, enc.Head
	return twin, true
}

// Check validates the sizes against one example's shape (after the stem
// when InputShape is set).
func (e EncoderSpec) Check(shape []int) error {
	if len(e.InputShape) > 0 {
		if len(e.InputShape) != 1 && len(e.InputShape) != 3 {
			return fmt.Errorf("input_shape %v must be [C, H, W] or [F]", e.InputShape)
		}
		for _, d := range e.InputShape {
			if d <= 0 {
				return fmt.Errorf("input_shape %v must be positive", e.InputShape)
			}
		}
		shape = e.InputShape
	}
	img := len(shape) == 3
	switch {
	case IsLibrary(e.Arch):
		if !img {
			return fmt.Errorf("%s needs image examples [C, H, W], not %v", e.Arch, shape)
		}
		if IsPatchRoot(e.Arch) && shape[0] != 1 && shape[0] != 3 {
			return fmt.Errorf("%s takes RGB or grey images, not %d channels", e.Arch, shape[0])
		}
		return nil
	}
	switch e.Arch {
	case "mlp":
		return nil
	case "convnet":
		if !img {
			return fmt.Errorf("convnet needs image examples [C, H, W], not %v", shape)
		}
		h, w := shape[1], shape[2]
		for range e.Channels {
			h, w = h/2, w/2
		}
		if h == 0 || w == 0 {
			return fmt.Errorf("convnet: %d conv+pool stages shrink %v to nothing", len(e.Channels), shape)
		}
	case "resnet":
		if !img {
			return fmt.Errorf("resnet needs image examples [C, H, W], not %v", shape)
		}
		return e.checkResNet()
	case "convnext":
		if !img {
			return fmt.Errorf("convnext needs image examples [C, H, W], not %v", shape)
		}
		return e.checkConvNeXt(shape)
	case "vit":
		if !img {
			return fmt.Errorf("vit needs image examples [C, H, W], not %v", shape)
		}
		return e.checkViT(shape)
	default:
		return fmt.Errorf("encoder arch %q is not built in (%s)", e.Arch, strings.Join(Archs, ", "))
	}
	return nil
}

// forward builds the encoder on x [B, shape...] and returns its features
// [B, F] and F.
func (e EncoderSpec) forward(b *builder, x *G.Node, shape []int) (*G.Node, int) {
	x, shape = e.stem(b, x, shape)
	batch := x.Shape()[0]
	flatten := func(n *G.Node) (*G.Node, int) {
		f := 1
		for _, d := range n.Shape()[1:] {
			f *= d
		}
		return b.must(G.Reshape(n, tensor.Shape{batch, f})), f
	}
	var feat *G.Node
	var f int
	switch e.Arch {
	case "mlp":
		feat, f = flatten(x)
	case "convnet":
		cur, _ := e.convTrunk(b, x, shape[0])
		feat, f = flatten(cur)
	case "resnet":
		cur, c := e.resnetTrunk(b, x, shape[0])
		feat, f = b.globalAvgPool(cur), c
	case "convnext":
		cur, c := e.convnextTrunk(b, x, shape[0])
		feat, f = b.layerNormEps(b.globalAvgPool(cur), "encoder.head.norm", c, 1e-6), c
	case "vit":
		feat, f = e.vitFeatures(b, x, shape), e.Dim
	}
	// The dense layers after the trunk (the MLP's whole body).
	for i, out := range e.Hidden {
		feat = b.relu(b.linear(feat, fmt.Sprintf("encoder.fcs.%d", i), f, out, true))
		f = out
	}
	return feat, f
}

// spatial builds the encoder's trunk and returns its feature map
// [B, C, h, w] and C, for dense (per-pixel) heads: the convnet's and the
// ResNet's last maps, the ViT's patch tokens laid out on the patch grid.
func (e EncoderSpec) spatial(b *builder, x *G.Node, shape []int) (*G.Node, int) {
	x, shape = e.stem(b, x, shape)
	batch := x.Shape()[0]
	switch e.Arch {
	case "convnet":
		return e.convTrunk(b, x, shape[0])
	case "resnet":
		return e.resnetTrunk(b, x, shape[0])
	case "convnext":
		return e.convnextTrunk(b, x, shape[0])
	case "vit":
		tokens, t := e.vitTokens(b, x, shape)
		gh, gw := shape[1]/e.Patch, shape[2]/e.Patch
		seq := b.must(G.Reshape(tokens, tensor.Shape{batch, t, e.Dim}))
		patches := b.must(G.Slice(seq, nil, G.S(e.prefixTokens(), t))) // drop the class token
		grid := b.must(G.Transpose(patches, 0, 2, 1))
		return b.must(G.Reshape(grid, tensor.Shape{batch, e.Dim, gh, gw})), e.Dim
	}
	b.fail("a %s encoder has no spatial features; dense heads need convnet, resnet, convnext or vit", e.Arch)
	return nil, 0
}

// convTrunk is the convnet's conv + ReLU + max-pool stages.
func (e EncoderSpec) convTrunk(b *builder, x *G.Node, in int) (*G.Node, int) {
	cur := x
	for i, out := range e.Channels {
		// The ReLU is fused into the pooling: max and ReLU commute, so
		// relu(pool(x)) is PyTorch's pool(relu(x)) in one pass.
		cur = b.conv(cur, fmt.Sprintf("encoder.convs.%d", i), in, out, 3, 1, 1, true)
		cur = b.maxPool2ReLU(cur)
		in = out
	}
	return cur, in
}
