package train

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// maxPoolOp is PyTorch's MaxPool2d(k, stride, padding) on x [B, C, H, W]:
// padding counts as -inf, windows may overlap (the ImageNet ResNet stem's
// 3x3 stride 2 pad 1). Like maxPool2Op, the forward op records each
// output's argmax (the first maximum) and the backward op (inputs x and
// dy) adds dy there: overlapping windows may share an argmax.
type maxPoolOp struct {
	xdyBasics
	shape          tensor.Shape // x's
	k, stride, pad int
	at             []int32
	fwd            *maxPoolOp
	out            outBuf
}

func newMaxPoolOp(shape tensor.Shape, k, stride, pad int) *maxPoolOp {
	return &maxPoolOp{xdyBasics: newXdy(fmt.Sprintf("maxpool%d/%d pad %d %v", k, stride, pad, shape), 4), shape: shape.Clone(), k: k, stride: stride, pad: pad}
}

// maxPool is MaxPool2d(k, stride, pad) on x [B, C, H, W].
func (b *builder) maxPool(x *G.Node, k, stride, pad int) *G.Node {
	s := x.Shape()
	if pad*2 > k || (s[2]+2*pad-k) < 0 || (s[3]+2*pad-k) < 0 {
		b.fail("max pool %dx%d pad %d does not fit a %dx%d map", k, k, pad, s[2], s[3])
	}
	return b.must(G.ApplyOp(newMaxPoolOp(s, k, stride, pad), x))
}

func (op *maxPoolOp) outShape() tensor.Shape {
	s := op.shape
	return tensor.Shape{s[0], s[1], (s[2]+2*op.pad-op.k)/op.stride + 1, (s[3]+2*op.pad-op.k)/op.stride + 1}
}

func (op *maxPoolOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.grad {
		return op.shape.Clone(), nil
	}
	return op.outShape(), nil
}

// SymDiff: dx = the backward op on (x, dy), reading this op's record.
func (op *maxPoolOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	back := &maxPoolOp{xdyBasics: op.gradBasics(), shape: op.shape, k: op.k, stride: op.stride, pad: op.pad, fwd: op}
	return op.backward(back, inputs[0], grad)
}

func (op *maxPoolOp) Do(inputs ...G.Value) (G.Value, error) {
	x, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	if op.grad {
		dy, err := f32(inputs[1])
		if err != nil {
			return nil, err
		}
		at := op.fwd.at
		if len(at) != len(dy) {
			return nil, fmt.Errorf("%s: the forward pass has not run", op)
		}
		out := make([]float32, len(x))
		for i, g := range dy {
			out[at[i]] += g
		}
		return tensor.New(tensor.WithShape(op.shape...), tensor.WithBacking(out)), nil
	}
	s, os := op.shape, op.outShape()
	h, w, oh, ow := s[2], s[3], os[2], os[3]
	out := op.out.get(s[0] * s[1] * oh * ow)
	if len(op.at) != len(out) {
		op.at = make([]int32, len(out))
	}
	inParts(s[0]*s[1], h*w, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			op.poolPlane(x, out, p, oh, ow)
		}
	})
	return tensor.New(tensor.WithShape(os...), tensor.WithBacking(out)), nil
}

// poolPlane pools plane p of x into out, recording each output's argmax.
func (op *maxPoolOp) poolPlane(x, out []float32, p, oh, ow int) {
	h, w := op.shape[2], op.shape[3]
	plane := x[p*h*w : (p+1)*h*w]
	for oy := range oh {
		y0, y1 := max(oy*op.stride-op.pad, 0), min(oy*op.stride-op.pad+op.k, h)
		for ox := range ow {
			x0, x1 := max(ox*op.stride-op.pad, 0), min(ox*op.stride-op.pad+op.k, w)
			best, arg := float32(math.Inf(-1)), y0*w+x0
			for y := y0; y < y1; y++ {
				for xx := x0; xx < x1; xx++ {
					if v := plane[y*w+xx]; v > best {
						best, arg = v, y*w+xx
					}
				}
			}
			o := (p*oh+oy)*ow + ox
			out[o], op.at[o] = best, int32(p*h*w+arg)
		}
	}
}
