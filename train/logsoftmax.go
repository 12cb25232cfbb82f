package train

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// logSoftmaxOp is a row-wise log-softmax of x [N, K], the heart of the
// cross-entropy losses. As one op it holds one [N, K] value and its
// gradient one more, where gorgonia's Max, BroadcastSub, Exp, Sum and
// Log held a dozen with theirs: for segmentation's N = B x H x W pixels
// that was most of a training step's memory (12 GB at batch 8 for
// ADE20K's 151 classes at 224 px). With grad set, its inputs are the
// forward's output logp and the gradient g, and it gives the gradient
// with respect to x: g - exp(logp) * sum(g) per row.
type logSoftmaxOp struct {
	opBasics
	rows, cols int
	out        outBuf
}

// logSoftmax is the row-wise log-softmax of x [N, K].
func (b *builder) logSoftmax(x *G.Node) *G.Node {
	s := x.Shape()
	if len(s) != 2 {
		b.fail("log-softmax of a %v tensor, not [N, K]", s)
	}
	op := &logSoftmaxOp{opBasics: opBasics{desc: fmt.Sprintf("logSoftmax%v", s)}, rows: s[0], cols: s[1]}
	return b.must(G.ApplyOp(op, x))
}

func (op *logSoftmaxOp) Arity() int {
	if op.grad {
		return 2
	}
	return 1
}

func (op *logSoftmaxOp) Type() hm.Type {
	t := G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	if op.grad {
		return hm.NewFnType(t, t, t)
	}
	return hm.NewFnType(t, t)
}

func (op *logSoftmaxOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.rows, op.cols}, nil
}

func (op *logSoftmaxOp) SymDiff(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%s is not differentiable", op)
	}
	back := &logSoftmaxOp{opBasics: opBasics{desc: "grad " + op.desc, grad: true}, rows: op.rows, cols: op.cols}
	dx, err := G.ApplyOp(back, output, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

func (op *logSoftmaxOp) Do(inputs ...G.Value) (G.Value, error) {
	args, err := f32s(inputs)
	if err != nil {
		return nil, err
	}
	k := op.cols
	out := op.out.get(op.rows * k) // every value written below
	if op.grad {
		logp, g := args[0], args[1]
		for r := range op.rows {
			lr, gr, or := logp[r*k:(r+1)*k], g[r*k:(r+1)*k], out[r*k:(r+1)*k]
			var s float64
			for _, v := range gr {
				s += float64(v)
			}
			for j := range or {
				or[j] = gr[j] - float32(math.Exp(float64(lr[j]))*s)
			}
		}
	} else {
		x := args[0]
		for r := range op.rows {
			xr, or := x[r*k:(r+1)*k], out[r*k:(r+1)*k]
			m := xr[0]
			for _, v := range xr {
				m = max(m, v)
			}
			var s float64
			for _, v := range xr {
				s += math.Exp(float64(v - m))
			}
			lse := m + float32(math.Log(s))
			for j, v := range xr {
				or[j] = v - lse
			}
		}
	}
	return tensor.New(tensor.WithShape(op.rows, k), tensor.WithBacking(out)), nil
}
