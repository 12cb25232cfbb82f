package train

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// softmaxOp is softmax(scale * x) over the last axis of a 3-D tensor
// (attention scores), numerically stable, one pass per row; through
// gorgonia it was five ops, each keeping a full-size value on the tape.
// Its backward op takes (x, dy), recomputes y and returns
// scale * y * (dy - sum(dy * y)).
type softmaxOp struct {
	xdyBasics
	shape tensor.Shape
	scale float32
	out   outBuf
}

// scaledSoftmax is softmax(scale * x) over x's last axis.
func (b *builder) scaledSoftmax(x *G.Node, scale float32) *G.Node {
	s := x.Shape()
	if len(s) != 3 {
		b.fail("softmax over the last axis of %v: want 3 axes", s)
	}
	op := &softmaxOp{xdyBasics: newXdy(fmt.Sprintf("softmax%v x%g", s, scale), 3), shape: s.Clone(), scale: scale}
	return b.must(G.ApplyOp(op, x))
}

func (op *softmaxOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }

func (op *softmaxOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	return op.backward(&softmaxOp{xdyBasics: op.gradBasics(), shape: op.shape, scale: op.scale}, inputs[0], grad)
}

// row writes softmax(scale * x) of one row into y.
func (op *softmaxOp) row(x, y []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		if v*op.scale > mx {
			mx = v * op.scale
		}
	}
	var sum float64
	for j, v := range x {
		e := math.Exp(float64(v*op.scale - mx))
		y[j] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for j := range y {
		y[j] *= inv
	}
}

func (op *softmaxOp) Do(inputs ...G.Value) (G.Value, error) {
	x, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	n := op.shape[2]
	rows := len(x) / n
	var out, dy []float32
	if op.grad {
		if dy, err = f32(inputs[1]); err != nil {
			return nil, err
		}
		out = make([]float32, len(x))
	} else {
		out = op.out.get(len(x))
	}
	inParts(rows, n, func(lo, hi int) {
		y := make([]float32, n)
		for r := lo; r < hi; r++ {
			xr, dst := x[r*n:(r+1)*n], out[r*n:(r+1)*n]
			if !op.grad {
				op.row(xr, dst)
				continue
			}
			op.row(xr, y)
			g := dy[r*n : (r+1)*n]
			var dot float32
			for j := range y {
				dot += g[j] * y[j]
			}
			for j := range y {
				dst[j] = op.scale * y[j] * (g[j] - dot)
			}
		}
	})
	return tensor.New(tensor.WithShape(op.shape...), tensor.WithBacking(out)), nil
}
