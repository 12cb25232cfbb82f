package train

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// convnextEps is the epsilon of every ConvNeXt LayerNorm (timm and
// torchvision alike).
const convnextEps = 1e-6

func (e EncoderSpec) checkConvNeXt(shape []int) error {
	if len(e.Channels) == 0 || len(e.Blocks) != len(e.Channels) {
		return fmt.Errorf("convnext needs channels (stage widths) and blocks (depths) of the same length, got %v and %v", e.Channels, e.Blocks)
	}
	if e.Version != 0 && e.Version != 1 && e.Version != 2 {
		return fmt.Errorf("convnext version %d is not 1 or 2", e.Version)
	}
	// The stem divides by 4, every later stage by 2.
	div := 4 << (len(e.Channels) - 1)
	if shape[1] < div || shape[2] < div {
		return fmt.Errorf("convnext: %d stages shrink %dx%d images by %d, to nothing", len(e.Channels), shape[1], shape[2], div)
	}
	return nil
}

// convnextTrunk is ConvNeXt with timm's names: the stem (stem.0, a 4x4
// stride-4 conv, and stem.1, a LayerNorm over channels), then stages
// whose downsample (from the second stage: a channel LayerNorm and a 2x2
// stride-2 conv) precedes blocks of a depthwise 7x7 conv (conv_dw), a
// channels-last LayerNorm (norm), mlp.fc1 (4x), exact GELU, with version 2
// a global response norm (mlp.grn), mlp.fc2, and with version 1 a layer
// scale (gamma) before the residual add. torchvision's names map onto
// these (see TorchvisionNames).
func (e EncoderSpec) convnextTrunk(b *builder, x *G.Node, in int) (*G.Node, int) {
	c := e.Channels[0]
	cur := b.conv(x, "encoder.stem.0", in, c, 4, 4, 0, true)
	cur = b.channelNorm(cur, "encoder.stem.1", c, convnextEps)
	for s, width := range e.Channels {
		p := fmt.Sprintf("encoder.stages.%d", s)
		if s > 0 {
			cur = b.channelNorm(cur, p+".downsample.0", c, convnextEps)
			cur = b.conv(cur, p+".downsample.1", c, width, 2, 2, 0, true)
			c = width
		}
		for j := 0; j < e.Blocks[s]; j++ {
			cur = e.convnextBlock(b, cur, fmt.Sprintf("%s.blocks.%d", p, j), c)
		}
	}
	return cur, c
}

func (e EncoderSpec) convnextBlock(b *builder, x *G.Node, p string, c int) *G.Node {
	s := x.Shape()
	batch, h, w := s[0], s[2], s[3]
	y := b.groupConv(x, p+".conv_dw", c, c, 7, 1, 3, c, true)
	rows := b.toRows(y) // [B*H*W, C]
	rows = b.layerNormEps(rows, p+".norm", c, convnextEps)
	rows = b.activation(b.linear(rows, p+".mlp.fc1", c, 4*c, true), GELUErf)
	if e.Version == 2 {
		rows = b.grn(rows, p+".mlp.grn", batch, h*w, 4*c)
	}
	rows = b.linear(rows, p+".mlp.fc2", 4*c, c, true)
	if e.Version != 2 {
		gamma := b.tensorOf(p+".gamma", []int{c}, false, filled(1e-6))
		rows = b.must(G.BroadcastHadamardProd(rows, gamma, nil, []byte{0}))
	}
	return b.must(G.Add(x, b.fromRows(rows, batch, c, h, w)))
}

// toRows lays x [B, C, H, W] out channels-last as [B*H*W, C].
func (b *builder) toRows(x *G.Node) *G.Node {
	s := x.Shape()
	t := b.must(G.Transpose(x, 0, 2, 3, 1))
	return b.must(G.Reshape(t, tensor.Shape{s[0] * s[2] * s[3], s[1]}))
}

// fromRows is toRows' inverse.
func (b *builder) fromRows(rows *G.Node, batch, c, h, w int) *G.Node {
	t := b.must(G.Reshape(rows, tensor.Shape{batch, h, w, c}))
	return b.must(G.Transpose(t, 0, 3, 1, 2))
}

// channelNorm is a LayerNorm over the channels of every pixel of x [B, C,
// H, W] (timm's LayerNorm2d, torchvision's LayerNorm2d).
func (b *builder) channelNorm(x *G.Node, name string, c int, eps float64) *G.Node {
	s := x.Shape()
	return b.fromRows(b.layerNormEps(b.toRows(x), name, c, eps), s[0], c, s[2], s[3])
}

// grn is ConvNeXt-V2's global response norm on rows [B*N, D] (N pixels per
// image): with G the L2 norm of each channel over an image's pixels and
// Nx = G / (mean over channels of G + 1e-6), y = x + bias + weight * x * Nx.
func (b *builder) grn(rows *G.Node, name string, batch, n, d int) *G.Node {
	weight := b.tensorOf(name+".weight", []int{d}, false, filled(0))
	bias := b.tensorOf(name+".bias", []int{d}, false, filled(0))
	x := b.must(G.Reshape(rows, tensor.Shape{batch, n, d}))
	gx := b.must(G.Sqrt(b.must(G.Sum(b.must(G.Square(x)), 1)))) // [B, D]
	mean := b.must(G.Reshape(b.must(G.Mean(gx, 1)), tensor.Shape{batch, 1}))
	nx := b.must(G.BroadcastHadamardDiv(gx, b.must(G.Add(mean, b.scalar(1e-6))), nil, []byte{1}))
	nx = b.must(G.Reshape(nx, tensor.Shape{batch, 1, d}))
	scaled := b.must(G.BroadcastHadamardProd(x, nx, nil, []byte{1}))
	scaled = b.must(G.BroadcastHadamardProd(scaled, b.must(G.Reshape(weight, tensor.Shape{1, 1, d})), nil, []byte{0, 1}))
	y := b.must(G.Add(x, scaled))
	y = b.must(G.BroadcastAdd(y, b.must(G.Reshape(bias, tensor.Shape{1, 1, d})), nil, []byte{0, 1}))
	return b.must(G.Reshape(y, tensor.Shape{batch * n, d}))
}

// globalAvgPool averages x [B, C, H, W] over its pixels: [B, C].
func (b *builder) globalAvgPool(x *G.Node) *G.Node {
	s := x.Shape()
	return b.must(G.HadamardProd(b.sum(x, 2, 3), b.scalar(float32(1)/float32(s[2]*s[3]))))
}
