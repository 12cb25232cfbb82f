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
				y = b.conv2d(xn, wn, nil, c.k, c.stride, c.pad)
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
		{2, 5, 7, 3, 1, 1}, {1, 6, 4, 5, 1, 2}, {3, 4, 4, 1, 1, 0}, {2, 7, 5, 3, 2, 1}, {2, 6, 6, 2, 2, 0}, {1, 3, 8, 3, 1, 0},
	} {
		op := newConvOp(convForward, 1, c.cin, c.h, c.w, 1, c.k, c.stride, c.pad)
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
		op.col2im(c32, img)
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
