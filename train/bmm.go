package train

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/gatepipe/gatepipe/train/cblas"
	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// bmmOp is a batched matrix product of float32 [B, M, K] and [B, K, N]
// tensors (either transposed in its last two axes), one BLAS product per
// batch entry. gorgonia v0.9.18's BatchedMatMul gives wrong products for
// some sizes (attention with a width of 128 or more), so the encoders use
// this instead.
type bmmOp struct {
	opBasics
	transA, transB bool
	batch, m, n, k int
	out            outBuf
}

// bmm multiplies a and b per batch entry: op(a) [B, M, K] x op(b) [B, K,
// N], op transposing the last two axes when asked.
func (b *builder) bmm(x, y *G.Node, transA, transB bool) *G.Node {
	xs, ys := x.Shape(), y.Shape()
	if len(xs) != 3 || len(ys) != 3 || xs[0] != ys[0] {
		b.fail("batched product of %v and %v", xs, ys)
	}
	m, k := xs[1], xs[2]
	if transA {
		m, k = k, m
	}
	k2, n := ys[1], ys[2]
	if transB {
		k2, n = n, k2
	}
	if k != k2 {
		b.fail("batched product of %v and %v (transposed %v, %v): inner sizes %d and %d", xs, ys, transA, transB, k, k2)
	}
	return b.must(G.ApplyOp(newBMMOp(xs[0], m, n, k, transA, transB), x, y))
}

func newBMMOp(batch, m, n, k int, transA, transB bool) *bmmOp {
	return &bmmOp{opBasics: opBasics{desc: fmt.Sprintf("bmm<%d: %dx%d x %dx%d, %v %v>", batch, m, k, k, n, transA, transB)},
		transA: transA, transB: transB, batch: batch, m: m, n: n, k: k}
}

func (op *bmmOp) Arity() int { return 2 }

func (op *bmmOp) Type() hm.Type {
	t := G.TensorType{Dims: 3, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}

func (op *bmmOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.batch, op.m, op.n}, nil
}

// SymDiff: for C = op(A) op(B), dop(A) = dC op(B)^T and dop(B) = op(A)^T dC,
// written back in A's and B's own layouts.
func (op *bmmOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	a, bn := inputs[0], inputs[1]
	apply := func(x, y *G.Node, ta, tb bool, m, n, k int) (*G.Node, error) {
		return G.ApplyOp(newBMMOp(op.batch, m, n, k, ta, tb), x, y)
	}
	var da, db *G.Node
	var err error
	if op.transA { // A is [K, M]: dA = op(B) dC^T
		da, err = apply(bn, grad, op.transB, true, op.k, op.m, op.n)
	} else { // dA = dC op(B)^T
		da, err = apply(grad, bn, false, !op.transB, op.m, op.k, op.n)
	}
	if err != nil {
		return nil, err
	}
	if op.transB { // B is [N, K]: dB = dC^T op(A)
		db, err = apply(grad, a, true, op.transA, op.n, op.k, op.m)
	} else { // dB = op(A)^T dC
		db, err = apply(a, grad, !op.transA, false, op.k, op.n, op.m)
	}
	if err != nil {
		return nil, err
	}
	return G.Nodes{da, db}, nil
}

func (op *bmmOp) Do(inputs ...G.Value) (G.Value, error) {
	args, err := f32s(inputs)
	if err != nil {
		return nil, err
	}
	a, bv := args[0], args[1]
	out := op.out.get(op.batch * op.m * op.n) // beta 0: all overwritten
	ta, tb := blas.NoTrans, blas.NoTrans
	lda, ldb := op.k, op.n
	if op.transA {
		ta, lda = blas.Trans, op.m
	}
	if op.transB {
		tb, ldb = blas.Trans, op.k
	}
	impl := cblas.Serial()
	sa, sb, sc := op.m*op.k, op.k*op.n, op.m*op.n
	inParts(op.batch, sa*op.n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			impl.Sgemm(ta, tb, op.m, op.n, op.k, 1, a[i*sa:(i+1)*sa], lda, bv[i*sb:(i+1)*sb], ldb, 0, out[i*sc:(i+1)*sc], op.n)
		}
	})
	return tensor.New(tensor.WithShape(op.batch, op.m, op.n), tensor.WithBacking(out)), nil
}
