package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// layerFn builds one layer (or a whole encoder) on x.
type layerFn func(b *builder, x *G.Node) *G.Node

// gradCase evaluates sum(layer(x) * r) and its gradients with respect to x
// and every parameter the layer declares.
type gradCase struct {
	shape []int
	layer layerFn
	train bool
	seed  uint64
	eps   float64
}

type gradEval struct {
	loss  float64
	grads map[string][]float32 // "x" and parameter names
}

func (c gradCase) declare(t *testing.T) []*param {
	t.Helper()
	b := &builder{declare: true, rng: rand.New(rand.NewPCG(c.seed, 1)), declared: map[string]*param{}, train: c.train}
	if err := c.build(b, make([]float32, prod(c.shape)), nil); err != nil {
		t.Fatal(err)
	}
	ps := make([]*param, len(b.params))
	for i, p := range b.params {
		ps[i] = b.declared[p.name]
	}
	return ps
}

// build adds x, the layer and the weighted-sum loss to b's graph; when
// out is non-nil it also differentiates and runs, filling it.
func (c gradCase) build(b *builder, x []float32, out *gradEval) error {
	var loss *G.Node
	if err := b.try(func() { loss = c.graph(b, x) }); err != nil {
		return err
	}
	return c.run(loss, b, out)
}

// graph adds x, the layer and the weighted-sum loss to b's graph.
func (c gradCase) graph(b *builder, x []float32) *G.Node {
	b.g = G.NewGraph()
	xn := G.NewTensor(b.g, tensor.Float32, len(c.shape), G.WithShape(c.shape...), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(c.shape...), tensor.WithBacking(append([]float32(nil), x...)))))
	y := c.layer(b, xn)
	rng := rand.New(rand.NewPCG(c.seed, 2))
	r := make([]float32, prod(y.Shape()))
	for i := range r {
		r[i] = float32(rng.NormFloat64())
	}
	loss := y // a scalar layer is its own loss
	if len(y.Shape()) > 0 {
		loss = b.must(G.Sum(b.must(G.HadamardProd(y, b.constant(y.Shape(), r)))))
	}
	return loss
}

// run differentiates loss with respect to x and the layer's parameters,
// runs the graph and fills out (nothing when out is nil).
func (c gradCase) run(loss *G.Node, b *builder, out *gradEval) error {
	if out == nil {
		return nil
	}
	xn := b.g.ByName("x")[0]
	wrt := G.Nodes{xn}
	for _, p := range b.params {
		if !p.buffer {
			wrt = append(wrt, p.node)
		}
	}
	if _, err := G.Grad(loss, wrt...); err != nil {
		return err
	}
	vm := G.NewTapeMachine(b.g, G.BindDualValues(wrt...))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return err
	}
	out.loss = float64(loss.Value().Data().(float32))
	out.grads = map[string][]float32{}
	for _, n := range wrt {
		g, err := n.Grad()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name(), err)
		}
		out.grads[n.Name()] = append([]float32(nil), g.Data().([]float32)...)
	}
	return nil
}

func (c gradCase) eval(t *testing.T, ps []*param, x []float32, values map[string][]float32) gradEval {
	t.Helper()
	b := &builder{declared: map[string]*param{}, values: values, train: c.train}
	for _, p := range ps {
		b.declared[p.name] = p
	}
	var out gradEval
	if err := c.build(b, x, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// check compares analytic gradients with central finite differences on up
// to 12 coordinates of x and of every parameter.
func (c gradCase) check(t *testing.T) {
	t.Helper()
	ps := c.declare(t)
	rng := rand.New(rand.NewPCG(c.seed, 3))
	x := make([]float32, prod(c.shape))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	values := map[string][]float32{}
	for _, p := range ps {
		values[p.name] = append([]float32(nil), p.init...)
		if !p.buffer {
			// Move away from the initialisation's symmetries (LayerNorm
			// and BatchNorm start at gamma=1, beta=0).
			for i := range values[p.name] {
				values[p.name][i] += float32(0.1 * rng.NormFloat64())
			}
		}
	}
	base := c.eval(t, ps, x, values)
	eps := c.eps
	if eps == 0 {
		eps = 1e-2
	}
	checked := 0
	for name, g := range base.grads {
		vec := x
		if name != "x" {
			vec = values[name]
		}
		idx := rng.Perm(len(vec))
		if len(idx) > 12 {
			idx = idx[:12]
		}
		for _, i := range idx {
			orig := vec[i]
			vec[i] = orig + float32(eps)
			plus := c.eval(t, ps, x, values).loss
			vec[i] = orig - float32(eps)
			minus := c.eval(t, ps, x, values).loss
			vec[i] = orig
			num := (plus - minus) / (2 * eps)
			ana := float64(g[i])
			if math.Abs(num-ana) > 2e-2*math.Max(1, math.Max(math.Abs(num), math.Abs(ana))) {
				t.Errorf("d loss / d %s[%d]: analytic %.5f, finite difference %.5f", name, i, ana, num)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

func TestGradients(t *testing.T) {
	cases := map[string]gradCase{
		"linear": {shape: []int{3, 5}, layer: func(b *builder, x *G.Node) *G.Node { return b.linear(x, "fc", 5, 4, true) }},
		"conv 3x3": {shape: []int{2, 2, 5, 5}, layer: func(b *builder, x *G.Node) *G.Node {
			return b.conv(x, "conv", 2, 3, 3, 1, 1, true)
		}},
		"conv stride 2": {shape: []int{2, 2, 6, 6}, layer: func(b *builder, x *G.Node) *G.Node {
			return b.conv(x, "conv", 2, 3, 3, 2, 1, false)
		}},
		"relu + max pool": {shape: []int{2, 2, 5, 4}, layer: func(b *builder, x *G.Node) *G.Node {
			return b.maxPool2(b.relu(x))
		}},
		"max pool + fused relu": {shape: []int{2, 3, 6, 20}, layer: func(b *builder, x *G.Node) *G.Node {
			return b.maxPool2ReLU(x)
		}},
		"batch norm (training)": {shape: []int{3, 2, 3, 3}, train: true, layer: func(b *builder, x *G.Node) *G.Node {
			return b.batchNorm(x, "bn", 2)
		}},
		"batch norm (eval)": {shape: []int{3, 2, 3, 3}, layer: func(b *builder, x *G.Node) *G.Node {
			return b.batchNorm(x, "bn", 2)
		}},
		"layer norm":     {shape: []int{4, 6}, layer: func(b *builder, x *G.Node) *G.Node { return b.layerNorm(x, "ln", 6) }},
		"gelu":           {shape: []int{4, 6}, layer: func(b *builder, x *G.Node) *G.Node { return b.gelu(x) }},
		"scaled softmax": {shape: []int{2, 3, 4}, layer: func(b *builder, x *G.Node) *G.Node { return b.scaledSoftmax(x, 0.7) }},
		"attention": {shape: []int{2 * 3, 8}, layer: func(b *builder, x *G.Node) *G.Node {
			return b.attention(x, "attn", 2, 3, 8, 2)
		}},
		"resnet encoder": {shape: []int{2, 2, 6, 6}, train: true, eps: 1e-3, layer: func(b *builder, x *G.Node) *G.Node {
			f, _ := EncoderSpec{Arch: "resnet", Channels: []int{3, 4}, Blocks: []int{1, 1}}.forward(b, x, []int{2, 6, 6})
			return f
		}},
		"vit encoder": {shape: []int{2, 2, 4, 4}, layer: func(b *builder, x *G.Node) *G.Node {
			f, _ := EncoderSpec{Arch: "vit", Patch: 2, Dim: 8, Depth: 1, Heads: 2, MLPRatio: 2}.forward(b, x, []int{2, 4, 4})
			return f
		}},
		"segmentation maps + per-pixel cross-entropy": {shape: []int{2, 3, 3, 2}, layer: func(b *builder, x *G.Node) *G.Node {
			z := b.conv(x, "head", 3, 4, 1, 1, 0, true) // [2, 4, 3, 2] class maps
			y := make([]float32, 2*5*4)
			for i := range y {
				y[i] = float32((i * 7) % 4)
			}
			return b.pixelCrossEntropy(z, b.constant([]int{2, 20}, y), 5, 4)
		}},
		"classification head + cross-entropy": {shape: []int{3, 4}, layer: func(b *builder, x *G.Node) *G.Node {
			logits := b.linear(x, "head", 4, 5, true)
			y := make([]float32, 15)
			for i, c := range []int{0, 3, 4} {
				y[i*5+c] = 1
			}
			_, loss := crossEntropyOn(b, logits, b.constant([]int{3, 5}, y), 3)
			return loss
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			c.seed = 11
			c.check(t)
		})
	}
}

// TestLaterPassesMatchAFreshGraph runs the reference convnet's layers
// (both "same" convolutions, fused ReLU and pooling, linear layers) twice
// on one tape, clearing the parameters' gradients between passes as the
// optimiser does, and checks the second pass's loss and gradients equal a
// fresh graph's on the second input: the buffers ops keep from one pass to
// the next (outBuf, scratch) must carry nothing over.
func TestLaterPassesMatchAFreshGraph(t *testing.T) {
	c := gradCase{shape: []int{3, 1, 8, 8}, seed: 31, layer: func(b *builder, x *G.Node) *G.Node {
		h := b.maxPool2ReLU(b.conv(x, "c1", 1, 4, 3, 1, 1, true))
		h = b.maxPool2ReLU(b.conv(h, "c2", 4, 6, 3, 1, 1, true))
		h = b.must(G.Reshape(h, tensor.Shape{3, 6 * 2 * 2}))
		return b.linear(b.relu(b.linear(h, "fc1", 24, 5, true)), "fc2", 5, 3, true)
	}}
	ps := c.declare(t)
	values := map[string][]float32{}
	for _, p := range ps {
		values[p.name] = p.init
	}
	rng := rand.New(rand.NewPCG(7, 7))
	x1, x2 := make([]float32, prod(c.shape)), make([]float32, prod(c.shape))
	for i := range x1 {
		x1[i], x2[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	want := c.eval(t, ps, x2, values)

	b := &builder{declared: map[string]*param{}, values: values}
	for _, p := range ps {
		b.declared[p.name] = p
	}
	var loss *G.Node
	if err := b.try(func() { loss = c.graph(b, x1) }); err != nil {
		t.Fatal(err)
	}
	wrt := G.Nodes{b.g.ByName("x")[0]}
	for _, p := range b.params {
		wrt = append(wrt, p.node)
	}
	if _, err := G.Grad(loss, wrt...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(b.g, G.BindDualValues(wrt...))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	for _, n := range wrt { // gorgonia adds into them: as adamW.step leaves them
		g, err := n.Grad()
		if err != nil {
			t.Fatal(err)
		}
		clear(g.Data().([]float32))
	}
	vm.Reset()
	if err := G.Let(wrt[0], tensor.New(tensor.WithShape(c.shape...), tensor.WithBacking(x2))); err != nil {
		t.Fatal(err)
	}
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got := float64(loss.Value().Data().(float32)); math.Abs(got-want.loss) > 1e-5*(1+math.Abs(want.loss)) {
		t.Errorf("second pass loss %v, fresh graph %v", got, want.loss)
	}
	for _, n := range wrt {
		g, err := n.Grad()
		if err != nil {
			t.Fatal(err)
		}
		got, w := g.Data().([]float32), want.grads[n.Name()]
		for i := range w {
			if math.Abs(float64(got[i]-w[i])) > 1e-5*(1+math.Abs(float64(w[i]))) {
				t.Errorf("d loss / d %s[%d]: second pass %v, fresh graph %v", n.Name(), i, got[i], w[i])
				break
			}
		}
	}
}
