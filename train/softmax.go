package train

import (
	"fmt"
	"math"
	"runtime"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// softmaxOp is softmax(scale * x) over the last axis of a 3-D tensor
// (attention scores), numerically stable, one pass per row; through
// gorgonia it was five ops, each keeping a full-size value on the tape.
// Its backward op takes (x, dy), recomputes y and returns
// scale * y * (dy - sum(dy * y)).
type softmaxOp struct {
	opBasics
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
	op := &softmaxOp{opBasics: opBasics{desc: fmt.Sprintf("softmax%v x%g", s, scale)}, shape: s.Clone(), scale: scale}
	return b.must(G.ApplyOp(op, x))
}

func (op *softmaxOp) Arity() int {
	if op.grad {
		return 2
	}
	return 1
}

func (op *softmaxOp) Type() hm.Type {
	t := G.TensorType{Dims: 3, Of: hm.TypeVariable('a')}
	if op.grad {
		return hm.NewFnType(t, t, t)
	}
	return hm.NewFnType(t, t)
}

func (op *softmaxOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }

func (op *softmaxOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%s is not differentiable", op)
	}
	back := &softmaxOp{opBasics: opBasics{desc: "grad " + op.desc, grad: true}, shape: op.shape, scale: op.scale}
	dx, err := G.ApplyOp(back, inputs[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
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
	workers := max(1, min(runtime.GOMAXPROCS(0), rows, len(x)/(1<<14)))
	forImages(workers, workers, func(_, p int) {
		y := make([]float32, n)
		for r := p * rows / workers; r < (p+1)*rows/workers; r++ {
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
