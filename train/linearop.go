package train

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/gatepipe/gatepipe/internal/vec"
	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// linearKind says which product a linearOp computes.
type linearKind int

const (
	linearForward     linearKind = iota // y = x w^T (+ b)
	linearGradInput                     // dx = dy w
	linearGradWeights                   // dw = dy^T x
	linearGradBias                      // db = column sums of dy
)

// linearOp is PyTorch's Linear on x [N, in] with w [out, in]: one matrix
// product straight from w's layout (gorgonia's Mul(x, Transpose(w))
// copies w into its transpose every pass, and again for the gradient),
// with the bias added as the product's rows are written.
type linearOp struct {
	opBasics
	kind        linearKind
	n, in, out  int
	bias        bool
	noInputGrad bool // x is the data input: no gradient for it
	buf         outBuf
}

// linearNode applies x w^T (+ bias) as one op.
func (b *builder) linearNode(x, w, bias *G.Node) *G.Node {
	s, ws := x.Shape(), w.Shape()
	if len(s) != 2 || len(ws) != 2 || s[1] != ws[1] {
		b.fail("linear layer: input %v does not fit weights %v", s, ws)
	}
	op := &linearOp{kind: linearForward, n: s[0], in: ws[1], out: ws[0], noInputGrad: x == b.data}
	op.desc = fmt.Sprintf("linear<%dx%d -> %d>", op.n, op.in, op.out)
	if bias == nil {
		return b.must(G.ApplyOp(op, x, w))
	}
	op.bias = true
	op.desc += " + bias"
	return b.must(G.ApplyOp(op, x, w, bias))
}

func (op *linearOp) Arity() int {
	switch {
	case op.kind == linearGradBias:
		return 1
	case op.kind == linearForward && op.bias:
		return 3
	}
	return 2
}

func (op *linearOp) Type() hm.Type {
	m := G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	v := G.TensorType{Dims: 1, Of: hm.TypeVariable('a')}
	switch {
	case op.kind == linearGradBias:
		return hm.NewFnType(m, v)
	case op.kind == linearForward && op.bias:
		return hm.NewFnType(m, m, v, m)
	}
	return hm.NewFnType(m, m, m)
}

func (op *linearOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	switch op.kind {
	case linearGradInput:
		return tensor.Shape{op.n, op.in}, nil
	case linearGradWeights:
		return tensor.Shape{op.out, op.in}, nil
	case linearGradBias:
		return tensor.Shape{op.out}, nil
	}
	return tensor.Shape{op.n, op.out}, nil
}

// DiffWRT leaves out the data input when nobody reads its gradient.
func (op *linearOp) DiffWRT(n int) []bool {
	d := op.opBasics.DiffWRT(n)
	if op.noInputGrad && n > 0 {
		d[0] = false
	}
	return d
}

// SymDiff returns dx = dy w, dw = dy^T x and db = the column sums of dy.
func (op *linearOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.kind != linearForward {
		return nil, fmt.Errorf("%s is not differentiable", op)
	}
	back := func(kind linearKind, args ...*G.Node) (*G.Node, error) {
		b := *op
		b.buf = outBuf{}
		b.kind, b.grad, b.noInputGrad = kind, true, false
		b.desc = fmt.Sprintf("grad%d %s", kind, op.desc)
		return G.ApplyOp(&b, args...)
	}
	x, w := inputs[0], inputs[1]
	grads := make(G.Nodes, len(inputs))
	var err error
	if !op.noInputGrad {
		if grads[0], err = back(linearGradInput, grad, w); err != nil {
			return nil, err
		}
	}
	if grads[1], err = back(linearGradWeights, grad, x); err != nil {
		return nil, err
	}
	if op.bias {
		if grads[2], err = back(linearGradBias, grad); err != nil {
			return nil, err
		}
	}
	return grads, nil
}

// Do computes the op's product with the BLAS gorgonia uses.
func (op *linearOp) Do(inputs ...G.Value) (G.Value, error) {
	args, err := f32s(inputs)
	if err != nil {
		return nil, err
	}
	shape, _ := op.InferShape()
	var res []float32
	if op.kind == linearGradBias { // summed into: starts at zero
		res = make([]float32, shape.TotalSize())
	} else { // every value written below (beta 0 or the bias copied in)
		res = op.buf.get(shape.TotalSize())
	}
	impl := G.WhichBLAS()
	n, in, out := op.n, op.in, op.out
	switch op.kind {
	case linearForward: // y [n, out] = x [n, in] w^T (+ b)
		x, w := args[0], args[1]
		if op.bias {
			for i := range n {
				copy(res[i*out:(i+1)*out], args[2])
			}
			impl.Sgemm(blas.NoTrans, blas.Trans, n, out, in, 1, x, in, w, in, 1, res, out)
		} else {
			impl.Sgemm(blas.NoTrans, blas.Trans, n, out, in, 1, x, in, w, in, 0, res, out)
		}
	case linearGradInput: // dx [n, in] = dy [n, out] w [out, in]
		impl.Sgemm(blas.NoTrans, blas.NoTrans, n, in, out, 1, args[0], out, args[1], in, 0, res, in)
	case linearGradWeights: // dw [out, in] = dy^T x
		impl.Sgemm(blas.Trans, blas.NoTrans, out, in, n, 1, args[0], out, args[1], in, 0, res, in)
	case linearGradBias:
		dy := args[0]
		for i := range n {
			vec.Add(res, dy[i*out:(i+1)*out])
		}
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(res)), nil
}
