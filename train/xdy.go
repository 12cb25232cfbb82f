package train

import (
	"fmt"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// xdyBasics is what the ops share whose backward op takes (x, dy) and
// returns dx (ReLU, GELU, softmax, max pooling): one input forward, two
// backward, all of rank dims; a backward op is not differentiated again.
type xdyBasics struct {
	opBasics
	dims int
}

func newXdy(desc string, dims int) xdyBasics { return xdyBasics{opBasics{desc: desc}, dims} }

func (o xdyBasics) Arity() int {
	if o.grad {
		return 2
	}
	return 1
}

func (o xdyBasics) Type() hm.Type {
	t := G.TensorType{Dims: o.dims, Of: hm.TypeVariable('a')}
	if o.grad {
		return hm.NewFnType(t, t, t)
	}
	return hm.NewFnType(t, t)
}

// gradBasics are the basics of the forward op's backward op.
func (o xdyBasics) gradBasics() xdyBasics {
	return xdyBasics{opBasics{desc: "grad " + o.desc, grad: true}, o.dims}
}

// backward applies back to (x, dy) as the forward op's SymDiff.
func (o xdyBasics) backward(back G.Op, x, dy *G.Node) (G.Nodes, error) {
	if o.grad {
		return nil, fmt.Errorf("%s is not differentiable", o)
	}
	dx, err := G.ApplyOp(back, x, dy)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

// sameShape is an elementwise op's InferShape: its input's shape.
func sameShape(op fmt.Stringer, in []G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("%s: input shape %v", op, in[0])
	}
	return s.Clone(), nil
}
