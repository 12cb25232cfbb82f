package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// param is one tensor of a model's state with its PyTorch-style name:
// trainable, or a buffer (batch-norm running statistics) that the
// optimiser leaves alone.
type param struct {
	name   string
	shape  []int
	init   []float32
	buffer bool
	node   *G.Node
}

// buildError carries a graph-construction error out of the builder's
// layer methods to build, which recovers it; it never escapes the package.
type buildError struct{ err error }

// builder constructs one forward graph. The first build of a model runs in
// declare mode: each layer creates its parameters (PyTorch's default
// initialisation, from the seed) in the order the forward pass meets them.
// Later builds take the declared parameters and current values.
type builder struct {
	g        *G.ExprGraph
	declare  bool
	rng      *rand.Rand
	declared map[string]*param
	values   map[string][]float32
	params   []*param
	train    bool
	// frozen: the graph only runs forward (features of a frozen encoder),
	// so layers may fold parameters into constants (see convBN).
	frozen bool
	// bn lists batch-norm layers in training mode, whose running
	// statistics the training loop updates from the batch statistics.
	bn []bnStats
	// out holds the input, logits and targets nodes; q the question input
	// of a relational model.
	out [3]*G.Node
	q   *G.Node
	// data is the model's data input node: no gradient is built for it.
	data *G.Node
	// emb is a retrieval model's embeddings (its prediction).
	emb *G.Node
	// lossOnly: the graph is a training step's, which needs the loss and
	// its gradients but no prediction, so a segmentation head ends in the
	// fused per-pixel cross-entropy (pixelCrossEntropy) on its class maps,
	// its targets one class a pixel; segLoss is that loss. Otherwise it
	// ends in the fused per-pixel softmax, segProbs.
	lossOnly          bool
	segLoss, segProbs *G.Node
}

// bnStats links a training-mode batch norm's batch statistics to its
// running buffers.
type bnStats struct {
	mean, variance    *G.Node
	runMean, runVar   string
	count             int // elements per channel in the batch
	momentum, epsilon float64
}

// try runs fn, turning a graph-construction failure inside it into an
// error.
func (b *builder) try(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			be, ok := r.(buildError)
			if !ok {
				panic(r)
			}
			err = be.err
		}
	}()
	fn()
	return nil
}

func (b *builder) must(n *G.Node, err error) *G.Node {
	if err != nil {
		panic(buildError{err})
	}
	return n
}

func (b *builder) fail(format string, args ...any) {
	panic(buildError{fmt.Errorf(format, args...)})
}

// tensorOf declares or looks up a parameter and returns its graph node.
func (b *builder) tensorOf(name string, shape []int, buffer bool, init func(n int) []float32) *G.Node {
	p, ok := b.declared[name]
	if !ok {
		if !b.declare {
			b.fail("parameter %s is not declared", name)
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		p = &param{name: name, shape: append([]int(nil), shape...), init: init(n), buffer: buffer}
		b.declared[name] = p
	} else if !slices.Equal(p.shape, shape) {
		b.fail("parameter %s has shape %v, the layer needs %v", name, p.shape, shape)
	}
	data := p.init
	if v, ok := b.values[name]; ok {
		data = v
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float32(nil), data...)))
	q := &param{name: name, shape: p.shape, init: p.init, buffer: buffer}
	if buffer {
		q.node = G.NewConstant(t, G.WithName(name), G.In(b.g))
	} else {
		// A learnable node (not a constant: the tape must read the
		// values the optimiser updates in place).
		q.node = G.NewTensor(b.g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(t))
	}
	b.params = append(b.params, q)
	return q.node
}

// paramValue returns a declared parameter's current values (given values
// or its initialisation), for frozen builds that fold parameters into
// constants.
func (b *builder) paramValue(name string, shape []int) []float32 {
	p, ok := b.declared[name]
	if !ok {
		b.fail("parameter %s is not declared", name)
	}
	if !slices.Equal(p.shape, shape) {
		b.fail("parameter %s has shape %v, the layer needs %v", name, p.shape, shape)
	}
	if v, ok := b.values[name]; ok {
		return v
	}
	return p.init
}

// convBN is a bias-free convolution followed by a batch norm (and a ReLU
// when relu is set), as the ResNets chain them. A frozen build folds the
// norm's running statistics into the convolution's weights and bias
// (w * gamma / sqrt(var + eps), beta - mean * gamma / sqrt(var + eps)) and
// the ReLU into its output pass: one op instead of three.
func (b *builder) convBN(x *G.Node, conv, bn string, in, out, k, stride, pad, groups int, relu bool) *G.Node {
	if !b.frozen || b.declare {
		y := b.groupConv(x, conv, in, out, k, stride, pad, groups, false)
		if relu {
			return b.batchNormReLU(y, bn, out)
		}
		return b.batchNorm(y, bn, out)
	}
	wShape := []int{out, in / groups, k, k}
	w := b.paramValue(conv+".weight", wShape)
	gamma, beta := b.paramValue(bn+".weight", []int{out}), b.paramValue(bn+".bias", []int{out})
	mean, variance := b.paramValue(bn+".running_mean", []int{out}), b.paramValue(bn+".running_var", []int{out})
	fw, fb := foldBN(w, gamma, beta, mean, variance, out)
	return b.conv2dReLU(x, b.fixed(conv+".weight", wShape, fw), b.fixed(conv+".bias", []int{out}, fb), k, stride, pad, groups, relu)
}

// fixed is a frozen build's folded parameter: a value node, not a
// constant (gorgonia names a constant after its printed values, which for
// a large tensor costs more than the convolution).
func (b *builder) fixed(name string, shape []int, data []float32) *G.Node {
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	return G.NewTensor(b.g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithName(name+" (folded)"), G.WithValue(t))
}

// uniform is PyTorch's default for linear and conv layers: U(±1/sqrt(fan_in)).
func (b *builder) uniform(fanIn int) func(n int) []float32 {
	return func(n int) []float32 {
		bound := 1 / math.Sqrt(float64(fanIn))
		v := make([]float32, n)
		for i := range v {
			v[i] = float32((b.rng.Float64()*2 - 1) * bound)
		}
		return v
	}
}

func filled(x float32) func(n int) []float32 {
	return func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = x
		}
		return v
	}
}

// truncNormal is timm's trunc_normal_(std) within ±2 std.
func (b *builder) truncNormal(std float64) func(n int) []float32 {
	return func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			x := b.rng.NormFloat64()
			for math.Abs(x) > 2 {
				x = b.rng.NormFloat64()
			}
			v[i] = float32(x * std)
		}
		return v
	}
}

func (b *builder) scalar(x float32) *G.Node { return G.NewConstant(x) }

// sum sums x over the given axes, listed in increasing order, one axis at
// a time from the last: gorgonia v0.9.18's multi-axis Sum gives wrong
// results on some 4-D inputs.
func (b *builder) sum(x *G.Node, axes ...int) *G.Node {
	for i := len(axes) - 1; i >= 0; i-- {
		x = b.must(G.Sum(x, axes[i]))
	}
	return x
}

// constant is a fixed tensor in the graph.
func (b *builder) constant(shape []int, data []float32) *G.Node {
	return G.NewConstant(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data)), G.In(b.g))
}

// linear is x W^T + bias for x [M, in]; W [out, in] (PyTorch's layout).
func (b *builder) linear(x *G.Node, name string, in, out int, bias bool) *G.Node {
	w := b.tensorOf(name+".weight", []int{out, in}, false, b.uniform(in))
	var bv *G.Node
	if bias {
		bv = b.tensorOf(name+".bias", []int{out}, false, b.uniform(in))
	}
	return b.linearNode(x, w, bv)
}

// conv is a 2-D convolution of x [B, in, H, W] with a square kernel.
func (b *builder) conv(x *G.Node, name string, in, out, k, stride, pad int, bias bool) *G.Node {
	return b.groupConv(x, name, in, out, k, stride, pad, 1, bias)
}

// groupConv is conv with the channels split into groups (PyTorch's
// groups; groups = in = out is depthwise).
func (b *builder) groupConv(x *G.Node, name string, in, out, k, stride, pad, groups int, bias bool) *G.Node {
	fanIn := in / max(groups, 1) * k * k
	w := b.tensorOf(name+".weight", []int{out, in / max(groups, 1), k, k}, false, b.uniform(fanIn))
	var bv *G.Node
	if bias {
		bv = b.tensorOf(name+".bias", []int{out}, false, b.uniform(fanIn))
	}
	return b.conv2d(x, w, bv, k, stride, pad, groups)
}

// batchNorm is BatchNorm2d over x [B, C, H, W]: batch statistics in
// training (the running ones updated after each step, momentum 0.1,
// unbiased variance as PyTorch keeps), running statistics otherwise.
func (b *builder) batchNorm(x *G.Node, name string, c int) *G.Node {
	return b.batchNormAct(x, name, c, false)
}

// batchNormReLU is relu(batchNorm(x)) with the ReLU in the norm's pass.
func (b *builder) batchNormReLU(x *G.Node, name string, c int) *G.Node {
	return b.batchNormAct(x, name, c, true)
}

// batchNormAct is batchNorm, then a ReLU when relu is set, the
// normalisation and the ReLU one per-channel affine pass (channelAffine):
// in training x - mean times gamma / std plus beta, in evaluation x times
// gamma / sqrt(running var + eps) plus beta - running mean times that.
func (b *builder) batchNormAct(x *G.Node, name string, c int, relu bool) *G.Node {
	const eps = 1e-5
	gamma := b.tensorOf(name+".weight", []int{c}, false, filled(1))
	beta := b.tensorOf(name+".bias", []int{c}, false, filled(0))
	rm := b.tensorOf(name+".running_mean", []int{c}, true, filled(0))
	rv := b.tensorOf(name+".running_var", []int{c}, true, filled(1))
	scaleOf := func(variance *G.Node) *G.Node { // gamma / sqrt(variance + eps)
		return b.must(G.HadamardDiv(gamma, b.must(G.Sqrt(b.must(G.Add(variance, b.scalar(eps)))))))
	}
	if !b.train {
		scale := scaleOf(rv)
		shift := b.must(G.Sub(beta, b.must(G.HadamardProd(rm, scale))))
		return b.channelAffine(x, scale, shift, relu)
	}
	s := x.Shape()
	count := s[0] * s[2] * s[3]
	inv := b.scalar(float32(1) / float32(count))
	mean := b.must(G.HadamardProd(b.sum(x, 0, 2, 3), inv))
	centred := b.must(G.BroadcastSub(x, b.must(G.Reshape(mean, tensor.Shape{1, c, 1, 1})), nil, []byte{0, 2, 3}))
	variance := b.must(G.HadamardProd(b.sum(b.must(G.Square(centred)), 0, 2, 3), inv))
	b.bn = append(b.bn, bnStats{mean: mean, variance: variance, runMean: name + ".running_mean", runVar: name + ".running_var",
		count: count, momentum: 0.1, epsilon: eps})
	return b.channelAffine(centred, scaleOf(variance), beta, relu)
}

// layerNorm normalises x [M, D] over its last axis (eps 1e-6, as timm's
// ViTs use).
func (b *builder) layerNorm(x *G.Node, name string, d int) *G.Node {
	return b.layerNormEps(x, name, d, 1e-6)
}

// layerNormEps is layerNorm with the given epsilon, one op (layerNormOp).
func (b *builder) layerNormEps(x *G.Node, name string, d int, eps float64) *G.Node {
	gamma := b.tensorOf(name+".weight", []int{d}, false, filled(1))
	beta := b.tensorOf(name+".bias", []int{d}, false, filled(0))
	s := x.Shape()
	if len(s) != 2 || s[1] != d {
		b.fail("layer norm %s of width %d on %v", name, d, s)
	}
	return b.must(G.ApplyOp(newLayerNormOp(0, s[0], d, eps), x, gamma, beta))
}

// gelu is GELU with the tanh approximation (PyTorch's
// nn.GELU(approximate="tanh")): gorgonia has no erf.
func (b *builder) gelu(x *G.Node) *G.Node {
	inner := b.must(G.HadamardProd(b.must(G.Add(x, b.must(G.HadamardProd(b.must(G.Cube(x)), b.scalar(0.044715))))),
		b.scalar(float32(math.Sqrt(2/math.Pi)))))
	t := b.must(G.Add(b.must(G.Tanh(inner)), b.scalar(1)))
	return b.must(G.HadamardProd(b.must(G.HadamardProd(x, t)), b.scalar(0.5)))
}

func (b *builder) relu(x *G.Node) *G.Node {
	return b.must(G.ApplyOp(&reluOp{xdyBasics: newXdy(fmt.Sprintf("relu%v", x.Shape()), x.Dims())}, x))
}

// attention is timm's multi-head self-attention over x [B*N, D] with a
// fused qkv projection ([3D, D], q rows first) and an output projection.
func (b *builder) attention(x *G.Node, name string, batch, tokens, dim, heads int) *G.Node {
	dh := dim / heads
	w := b.tensorOf(name+".qkv.weight", []int{3 * dim, dim}, false, b.uniform(dim))
	bias := b.tensorOf(name+".qkv.bias", []int{3 * dim}, false, b.uniform(dim))
	qkv := b.linearNode(x, w, bias) // [B*T, 3D]
	q := b.splitHeads(qkv, 0, 3, batch, tokens, heads, dim)
	k := b.splitHeads(qkv, 1, 3, batch, tokens, heads, dim)
	v := b.splitHeads(qkv, 2, 3, batch, tokens, heads, dim)
	att := b.scaledSoftmax(b.bmm(q, k, false, true), float32(1/math.Sqrt(float64(dh))))
	o := b.mergeHeads(b.bmm(att, v, false, false), batch, tokens, heads, dim)
	return b.linear(o, name+".proj", dim, dim, true)
}

// firstToken returns row 0 of every example's block of t rows in x
// [batch*t, D], as [batch, D]. (A product with a constant 0/1 selection
// matrix would do the same, but gorgonia v0.9.18 then fails to
// differentiate graphs holding two such products of different sizes.)
func (b *builder) firstToken(x *G.Node, batch, t int) *G.Node {
	d := x.Shape()[1]
	first := b.must(G.Slice(b.must(G.Reshape(x, tensor.Shape{batch, t, d})), nil, G.S(0, 1)))
	return b.must(G.Reshape(first, tensor.Shape{batch, d}))
}
