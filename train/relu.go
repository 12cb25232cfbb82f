package train

import (
	"fmt"
	"github.com/gatepipe/gatepipe/internal/vec"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// reluOp is max(x, 0) elementwise in one pass (gorgonia's Rectify builds
// x * (x >= 0) with a copy of x, three passes and two allocations). The
// backward op takes (x, dy) and returns dy where x > 0.
type reluOp struct {
	xdyBasics
	out outBuf
}

func (op *reluOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(op, in) }

func (op *reluOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	return op.backward(&reluOp{xdyBasics: op.gradBasics()}, inputs[0], grad)
}

func (op *reluOp) Do(inputs ...G.Value) (G.Value, error) {
	x, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	shape := inputs[0].Shape().Clone()
	if op.grad {
		dy, err := f32(inputs[1])
		if err != nil {
			return nil, err
		}
		out := make([]float32, len(x))
		for i, v := range x {
			if v > 0 {
				out[i] = dy[i]
			}
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out)), nil
	}
	out := op.out.get(len(x))
	inParts(len(x), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if v := x[i]; v > 0 { // not max(v, 0): Go's float max handles NaN and -0 in branches
				out[i] = v
			} else {
				out[i] = 0
			}
		}
	})
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out)), nil
}

// addReLUOp is max(a + b, 0) in one pass: a ResNet block's residual
// join in a frozen build (not differentiated).
type addReLUOp struct {
	opBasics
	dims int
	out  outBuf
}

// addReLU is relu(a + b): one op in a frozen build.
func (b *builder) addReLU(x, y *G.Node) *G.Node {
	if !b.frozen || b.declare {
		return b.relu(b.must(G.Add(x, y)))
	}
	if !x.Shape().Eq(y.Shape()) {
		b.fail("residual join of %v and %v", x.Shape(), y.Shape())
	}
	op := &addReLUOp{opBasics: opBasics{desc: fmt.Sprintf("add+relu%v", x.Shape())}, dims: x.Dims()}
	return b.must(G.ApplyOp(op, x, y))
}

func (op *addReLUOp) Arity() int { return 2 }

func (op *addReLUOp) Type() hm.Type {
	t := G.TensorType{Dims: op.dims, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}

func (op *addReLUOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(op, in) }

func (op *addReLUOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("%s is for frozen builds: not differentiable", op)
}

func (op *addReLUOp) Do(inputs ...G.Value) (G.Value, error) {
	a, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	c, err := f32(inputs[1])
	if err != nil {
		return nil, err
	}
	out := op.out.get(len(a))
	c = c[:len(a)]
	inParts(len(a), 1, func(lo, hi int) { vec.AddReLU(out[lo:hi], a[lo:hi], c[lo:hi]) })
	return tensor.New(tensor.WithShape(inputs[0].Shape().Clone()...), tensor.WithBacking(out)), nil
}
