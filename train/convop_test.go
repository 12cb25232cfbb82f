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
		{2, 7, 7, 3, 3, 1, 1}, {2, 8, 8, 3, 3, 2, 1}, {3, 8, 8, 4, 1, 2, 0}, {3, 8, 8, 5, 4, 4, 0}, {1, 9, 6, 2, 5, 1, 2}, {2, 5, 5, 2, 3, 3, 0},
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
	for _, c := range []struct{ k, stride, pad int }{{3, 1, 1}, {3, 2, 1}, {2, 2, 0}, {3, 3, 0}} {
		gradCase{shape: []int{2, 2, 5, 5}, seed: 21, layer: func(b *builder, x *G.Node) *G.Node {
			return b.conv(x, "c", 2, 3, c.k, c.stride, c.pad, true)
		}}.check(t)
	}
}
