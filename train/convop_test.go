package train

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestConvOpMatchesGorgonia compares the convolution op's forward pass
// with gorgonia's Conv2d for kernel sizes, strides and paddings the
// encoders use and a few they do not.
func TestConvOpMatchesGorgonia(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, c := range []struct{ cin, h, w, cout, k, stride, pad int }{
		{2, 7, 7, 3, 3, 1, 1}, {2, 8, 8, 3, 3, 2, 1}, {3, 8, 8, 4, 1, 2, 0}, {3, 8, 8, 5, 4, 4, 0}, {1, 9, 6, 2, 5, 1, 2}, {2, 5, 5, 2, 3, 3, 0}, {2, 3, 11, 2, 3, 1, 1}, {2, 4, 3, 2, 1, 1, 0},
	} {
		x := make([]float32, 2*c.cin*c.h*c.w)
		w := make([]float32, c.cout*c.cin*c.k*c.k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		run := func(ours bool) []float32 {
			g := G.NewGraph()
			xn := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, c.cin, c.h, c.w), G.WithValue(tensor.New(tensor.WithShape(2, c.cin, c.h, c.w), tensor.WithBacking(append([]float32(nil), x...)))))
			wn := G.NewTensor(g, tensor.Float32, 4, G.WithShape(c.cout, c.cin, c.k, c.k), G.WithValue(tensor.New(tensor.WithShape(c.cout, c.cin, c.k, c.k), tensor.WithBacking(append([]float32(nil), w...)))))
			var y *G.Node
			if ours {
				b := &builder{g: g}
				y = b.conv2d(xn, wn, nil, c.k, c.stride, c.pad, 1)
			} else {
				y = G.Must(G.Conv2d(xn, wn, tensor.Shape{c.k, c.k}, []int{c.pad, c.pad}, []int{c.stride, c.stride}, []int{1, 1}))
			}
			var v G.Value
			G.Read(y, &v)
			vm := G.NewTapeMachine(g)
			defer vm.Close()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			return append([]float32(nil), v.Data().([]float32)...)
		}
		got, want := run(true), run(false)
		if len(got) != len(want) {
			t.Fatalf("%+v: %d outputs, gorgonia %d", c, len(got), len(want))
		}
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 1e-4 {
				t.Fatalf("%+v: output %d = %v, gorgonia %v", c, i, got[i], want[i])
			}
		}
	}
}

func TestConvOpGradients(t *testing.T) {
	for _, c := range []struct{ k, stride, pad int }{{3, 1, 1}, {3, 2, 1}, {2, 2, 0}, {3, 3, 0}, {5, 1, 2}, {1, 1, 0}} {
		gradCase{shape: []int{2, 2, 5, 7}, seed: 21, layer: func(b *builder, x *G.Node) *G.Node {
			return b.conv(x, "c", 2, 3, c.k, c.stride, c.pad, true)
		}}.check(t)
	}
}

// TestCol2imIsIm2colsAdjoint checks <im2col(x), c> = <x, col2im(c)> for
// random x and c: col2im must add every entry back exactly where im2col
// took it from, padding taps and "same" spans included.
func TestCol2imIsIm2colsAdjoint(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, c := range []struct{ cin, h, w, k, stride, pad int }{
		{2, 5, 7, 3, 1, 1}, {1, 6, 4, 5, 1, 2}, {2, 2, 3, 7, 1, 3}, {1, 1, 1, 7, 1, 3}, {3, 4, 4, 1, 1, 0}, {2, 7, 5, 3, 2, 1}, {2, 6, 6, 2, 2, 0}, {1, 3, 8, 3, 1, 0},
	} {
		op := newConvOp(convForward, 1, c.cin, c.h, c.w, 1, c.k, c.stride, c.pad, 1)
		x := make([]float64, c.cin*c.h*c.w)
		cv := make([]float64, c.cin*c.k*c.k*op.outH*op.outW)
		for i := range x {
			x[i] = float64(float32(r.NormFloat64()))
		}
		for i := range cv {
			cv[i] = float64(float32(r.NormFloat64()))
		}
		col, img := make([]float32, len(cv)), make([]float32, len(x))
		x32, c32 := make([]float32, len(x)), make([]float32, len(cv))
		for i := range x {
			x32[i] = float32(x[i])
		}
		for i := range cv {
			c32[i] = float32(cv[i])
		}
		op.im2col(x32, col)
		for i := range img {
			img[i] = 7 // col2im overwrites what the last pass left
		}
		op.col2im(colLaidOut(op, c32), img)
		var lhs, rhs float64
		for i, v := range col {
			lhs += float64(v) * cv[i]
		}
		for i, v := range img {
			rhs += float64(v) * x[i]
		}
		if math.Abs(lhs-rhs) > 1e-4*(1+math.Abs(lhs)) {
			t.Errorf("%+v: <im2col(x), c> = %v, <x, col2im(c)> = %v", c, lhs, rhs)
		}
	}
}

// colLaidOut copies a packed im2col-shaped matrix into the layout col2im
// reads (op.colLayout), zeros in the padding as in the ops' scratch
// buffers.
func colLaidOut(op *convOp, col []float32) []float32 {
	off, stride := op.colLayout()
	cols := op.outH * op.outW
	out := make([]float32, len(col)/cols*stride)
	for r := range len(col) / cols {
		copy(out[r*stride+off:], col[r*cols:(r+1)*cols])
	}
	return out
}

// naiveConv is the textbook grouped convolution of one batch, for tests.
func naiveConv(x, w []float32, batch, cin, h, wd, cout, k, stride, pad, groups int) []float32 {
	oh, ow := (h+2*pad-k)/stride+1, (wd+2*pad-k)/stride+1
	cg, og := cin/groups, cout/groups
	out := make([]float32, batch*cout*oh*ow)
	for n := range batch {
		for o := range cout {
			g := o / og
			for y := range oh {
				for xx := range ow {
					var s float64
					for c := range cg {
						for ki := range k {
							for kj := range k {
								iy, ix := y*stride-pad+ki, xx*stride-pad+kj
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								s += float64(x[((n*cin+g*cg+c)*h+iy)*wd+ix]) * float64(w[((o*cg+c)*k+ki)*k+kj])
							}
						}
					}
					out[((n*cout+o)*oh+y)*ow+xx] = float32(s)
				}
			}
		}
	}
	return out
}

// TestGroupedConvMatchesDirect checks grouped and depthwise convolutions
// (ResNeXt's 3x3, ConvNeXt's 7x7) against the textbook sum.
func TestGroupedConvMatchesDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct{ cin, h, w, cout, k, stride, pad, groups int }{
		{4, 6, 6, 4, 3, 1, 1, 2}, {6, 7, 5, 6, 7, 1, 3, 6}, {2, 2, 3, 2, 7, 1, 3, 2}, {2, 1, 1, 2, 7, 1, 3, 2}, {4, 8, 8, 8, 3, 2, 1, 4}, {8, 5, 5, 4, 1, 1, 0, 2}, {3, 9, 9, 3, 7, 2, 3, 3},
	} {
		x := make([]float32, 2*c.cin*c.h*c.w)
		w := make([]float32, c.cout*c.cin/c.groups*c.k*c.k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		g := G.NewGraph()
		xn := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, c.cin, c.h, c.w), G.WithValue(tensor.New(tensor.WithShape(2, c.cin, c.h, c.w), tensor.WithBacking(x))))
		wn := G.NewTensor(g, tensor.Float32, 4, G.WithShape(c.cout, c.cin/c.groups, c.k, c.k), G.WithValue(tensor.New(tensor.WithShape(c.cout, c.cin/c.groups, c.k, c.k), tensor.WithBacking(w))))
		b := &builder{g: g}
		var y *G.Node
		if err := b.try(func() { y = b.conv2d(xn, wn, nil, c.k, c.stride, c.pad, c.groups) }); err != nil {
			t.Fatal(err)
		}
		var v G.Value
		G.Read(y, &v)
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := v.Data().([]float32)
		want := naiveConv(x, w, 2, c.cin, c.h, c.w, c.cout, c.k, c.stride, c.pad, c.groups)
		vm.Close()
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-4 {
				t.Fatalf("%+v: output %d = %v, direct %v", c, i, got[i], want[i])
			}
		}
	}
}

func TestGroupedConvGradients(t *testing.T) {
	for _, c := range []struct{ in, out, k, stride, pad, groups int }{{4, 4, 3, 1, 1, 2}, {4, 4, 3, 1, 1, 4}, {4, 8, 3, 2, 1, 4}} {
		gradCase{shape: []int{2, c.in, 5, 5}, seed: 22, layer: func(b *builder, x *G.Node) *G.Node {
			return b.groupConv(x, "c", c.in, c.out, c.k, c.stride, c.pad, c.groups, true)
		}}.check(t)
	}
}

func TestGroupedConvRefusesChannelsGroupsDoNotDivide(t *testing.T) {
	g := G.NewGraph()
	xn := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, 3, 4, 4), G.WithInit(G.Zeroes()))
	b := &builder{g: g, declare: true, declared: map[string]*param{}, rng: rand.New(rand.NewPCG(1, 1))}
	err := b.try(func() { b.groupConv(xn, "c", 3, 4, 3, 1, 1, 2, false) })
	if err == nil {
		t.Fatal("3 channels in 2 groups built")
	}
}

func TestMaxPoolGradients(t *testing.T) {
	for _, c := range []struct{ k, stride, pad int }{{3, 2, 1}, {2, 2, 0}, {3, 1, 1}} {
		gradCase{shape: []int{2, 2, 7, 6}, seed: 23, layer: func(b *builder, x *G.Node) *G.Node {
			// Pooling x itself: perturbing a weight before the pool
			// would move every argmax at once.
			return b.maxPool(x, c.k, c.stride, c.pad)
		}}.check(t)
	}
}

func TestGELUGradients(t *testing.T) {
	for _, act := range Activations {
		gradCase{shape: []int{3, 5}, seed: 24, layer: func(b *builder, x *G.Node) *G.Node {
			return b.activation(b.linear(x, "l", 5, 4, true), act)
		}}.check(t)
	}
}

func TestExactGELU(t *testing.T) {
	g := G.NewGraph()
	in := []float32{-3, -1, -0.5, 0, 0.5, 1, 3}
	x := G.NewTensor(g, tensor.Float32, 1, G.WithShape(len(in)), G.WithValue(tensor.New(tensor.WithShape(len(in)), tensor.WithBacking(in))))
	b := &builder{g: g}
	y := b.activation(x, GELUErf)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	// torch.nn.functional.gelu(torch.tensor([-3, -1, -0.5, 0, 0.5, 1, 3.]))
	want := []float32{-0.0040496, -0.15865526, -0.15426877, 0, 0.34573123, 0.8413447, 2.9959502}
	for i, v := range y.Value().Data().([]float32) {
		if math.Abs(float64(v-want[i])) > 1e-6 {
			t.Errorf("gelu(%v) = %v, want %v", in[i], v, want[i])
		}
	}
}

// TestPretrainedFamilyGradients checks the layers the pretrained families
// add (channel LayerNorm, GRN, a ConvNeXt block, layer scale) are
// trainable: analytic gradients match finite differences.
func TestPretrainedFamilyGradients(t *testing.T) {
	cases := map[string]gradCase{
		"channel norm": {shape: []int{2, 3, 3, 2}, seed: 31, layer: func(b *builder, x *G.Node) *G.Node {
			return b.channelNorm(x, "n", 3, 1e-6)
		}},
		"grn": {shape: []int{8, 3}, seed: 32, layer: func(b *builder, x *G.Node) *G.Node {
			y := b.grn(x, "g", 2, 4, 3)
			return y
		}},
		"convnext v2 block": {shape: []int{2, 3, 3, 3}, seed: 33, eps: 1e-3, layer: func(b *builder, x *G.Node) *G.Node {
			return EncoderSpec{Version: 2}.convnextBlock(b, x, "blk", 3)
		}},
		"convnext v1 block": {shape: []int{2, 3, 3, 3}, seed: 34, layer: func(b *builder, x *G.Node) *G.Node {
			return EncoderSpec{}.convnextBlock(b, x, "blk", 3)
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { c.check(t) })
	}
}

// TestBatchedProductGradients checks bmm in its four transpositions and
// the attention that uses it with the head split and merge.
func TestBatchedProductGradients(t *testing.T) {
	for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		gradCase{shape: []int{2, 3, 4}, seed: 41, layer: func(b *builder, x *G.Node) *G.Node {
			y := b.tensorOf("y", []int{2, 4, 3}, false, b.uniform(3))
			if tr[0] {
				x = b.must(G.Reshape(x, tensor.Shape{2, 4, 3}))
			}
			if tr[1] {
				y = b.must(G.Reshape(y, tensor.Shape{2, 3, 4}))
			}
			return b.bmm(x, y, tr[0], tr[1])
		}}.check(t)
	}
	gradCase{shape: []int{6, 8}, seed: 42, layer: func(b *builder, x *G.Node) *G.Node {
		return b.attention(x, "att", 2, 3, 8, 2)
	}}.check(t)
}
