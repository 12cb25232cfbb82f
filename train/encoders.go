package train

import (
	"fmt"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// EncoderSpec describes a built-in encoder. Parameter names follow
// PyTorch conventions under the prefix "encoder." (SPEC.md lists them), so
// a state_dict exported to safetensors loads as is.
type EncoderSpec struct {
	// Arch is "mlp", "convnet", "resnet" or "vit".
	Arch string `json:"arch"`
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
	// Head sizes the adapter where it has sizes (the video head's
	// temporal transformer).
	Head HeadSpec `json:"head,omitempty"`
	// InputShape is the example shape the encoder's weights expect. When
	// it is set and the data's shape differs (a modality shift), a stem
	// maps the data to it (see stem).
	InputShape []int `json:"input_shape,omitempty"`
}

// Archs lists the built-in encoder architectures.
var Archs = []string{"mlp", "convnet", "resnet", "vit"}

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
			up := b.constant([]int{h * w, want[1] * want[2]}, bilinear(h, w, want[1], want[2]))
			y = b.must(G.Mul(b.must(G.Reshape(y, tensor.Shape{batch * want[0], h * w})), up))
			y = b.must(G.Reshape(y, append(tensor.Shape{batch}, want...)))
		}
		return y, want
	}
	flat := b.must(G.Reshape(x, tensor.Shape{batch, size(shape)}))
	y := b.linear(flat, "stem.proj", size(shape), size(want), true)
	return b.must(G.Reshape(y, append(tensor.Shape{batch}, want...))), want
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
		if len(e.Channels) == 0 || len(e.Blocks) != len(e.Channels) {
			return fmt.Errorf("resnet needs channels (stage widths) and blocks (blocks per stage) of the same length, got %v and %v", e.Channels, e.Blocks)
		}
	case "vit":
		if !img {
			return fmt.Errorf("vit needs image examples [C, H, W], not %v", shape)
		}
		if e.Patch <= 0 || shape[1]%e.Patch != 0 || shape[2]%e.Patch != 0 {
			return fmt.Errorf("vit: patch %d must divide the image size %dx%d", e.Patch, shape[1], shape[2])
		}
		if e.Dim <= 0 || e.Depth <= 0 || e.Heads <= 0 || e.Dim%e.Heads != 0 {
			return fmt.Errorf("vit: dim (%d) must be a positive multiple of heads (%d), and depth (%d) positive", e.Dim, e.Heads, e.Depth)
		}
	default:
		return fmt.Errorf("encoder arch %q is not built in (mlp, convnet, resnet, vit)", e.Arch)
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
		s := cur.Shape()
		feat = b.must(G.HadamardProd(b.sum(cur, 2, 3), b.scalar(float32(1)/float32(s[2]*s[3]))))
		f = c
	case "vit":
		tokens, t := e.vitTokens(b, x, shape)
		// The class token is row 0 of each example's tokens.
		feat, f = b.firstToken(tokens, batch, t), e.Dim
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
	case "vit":
		tokens, t := e.vitTokens(b, x, shape)
		gh, gw := shape[1]/e.Patch, shape[2]/e.Patch
		seq := b.must(G.Reshape(tokens, tensor.Shape{batch, t, e.Dim}))
		patches := b.must(G.Slice(seq, nil, G.S(1, t))) // drop the class token
		grid := b.must(G.Transpose(patches, 0, 2, 1))
		return b.must(G.Reshape(grid, tensor.Shape{batch, e.Dim, gh, gw})), e.Dim
	}
	b.fail("a %s encoder has no spatial features; dense heads need convnet, resnet or vit", e.Arch)
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

// resnetTrunk is a CIFAR-style ResNet with basic blocks (torchvision
// names): conv1 3x3 + bn1 + ReLU, then stages layer1..layerN of basic
// blocks (the first block of every stage after the first strides by 2,
// with a 1x1 conv + BN downsample when the shape changes). forward pools
// it globally.
func (e EncoderSpec) resnetTrunk(b *builder, x *G.Node, in int) (*G.Node, int) {
	c := e.Channels[0]
	cur := b.relu(b.batchNorm(b.conv(x, "encoder.conv1", in, c, 3, 1, 1, false), "encoder.bn1", c))
	for s, width := range e.Channels {
		for j := 0; j < e.Blocks[s]; j++ {
			stride := 1
			if s > 0 && j == 0 {
				stride = 2
			}
			p := fmt.Sprintf("encoder.layer%d.%d", s+1, j)
			out := b.relu(b.batchNorm(b.conv(cur, p+".conv1", c, width, 3, stride, 1, false), p+".bn1", width))
			out = b.batchNorm(b.conv(out, p+".conv2", width, width, 3, 1, 1, false), p+".bn2", width)
			short := cur
			if stride != 1 || c != width {
				short = b.batchNorm(b.conv(cur, p+".downsample.0", c, width, 1, stride, 0, false), p+".downsample.1", width)
			}
			cur = b.relu(b.must(G.Add(out, short)))
			c = width
		}
	}
	return cur, c
}

// vitTokens is a Vision Transformer with timm's names up to its final
// norm: patch_embed.proj (a patch x patch conv with stride patch),
// cls_token, pos_embed, pre-norm blocks (norm1, attn.qkv, attn.proj, norm2,
// mlp.fc1, mlp.fc2 with GELU) and norm. It returns the tokens [B*T, D]
// (each example's class token first, then its patches row by row) and T.
func (e EncoderSpec) vitTokens(b *builder, x *G.Node, shape []int) (*G.Node, int) {
	batch, d := x.Shape()[0], e.Dim
	ratio := e.MLPRatio
	if ratio <= 0 {
		ratio = 4
	}
	patches := (shape[1] / e.Patch) * (shape[2] / e.Patch)
	tokens := patches + 1
	emb := b.conv(x, "encoder.patch_embed.proj", shape[0], d, e.Patch, e.Patch, 0, true)
	emb = b.must(G.Transpose(b.must(G.Reshape(emb, tensor.Shape{batch, d, patches})), 0, 2, 1)) // [B, N, D]
	cls := b.tensorOf("encoder.cls_token", []int{1, 1, d}, false, b.truncNormal(0.02))
	ones := b.constant([]int{batch, 1, 1}, filled(1)(batch))
	clsB := b.must(G.BroadcastHadamardProd(ones, cls, []byte{2}, []byte{0}))
	seq := b.must(G.Concat(1, clsB, emb))
	pos := b.tensorOf("encoder.pos_embed", []int{1, tokens, d}, false, b.truncNormal(0.02))
	seq = b.must(G.BroadcastAdd(seq, pos, nil, []byte{0}))
	cur := b.must(G.Reshape(seq, tensor.Shape{batch * tokens, d}))
	for i := 0; i < e.Depth; i++ {
		p := fmt.Sprintf("encoder.blocks.%d", i)
		cur = b.must(G.Add(cur, b.attention(b.layerNorm(cur, p+".norm1", d), p+".attn", batch, tokens, d, e.Heads)))
		h := b.gelu(b.linear(b.layerNorm(cur, p+".norm2", d), p+".mlp.fc1", d, d*ratio, true))
		cur = b.must(G.Add(cur, b.linear(h, p+".mlp.fc2", d*ratio, d, true)))
	}
	return b.layerNorm(cur, "encoder.norm", d), tokens
}
