package train

import (
	"fmt"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// headsOp moves attention heads between the token-major layout of a
// projection's output and the head-major layout of the batched products.
// Split takes part p of x [B*T, parts*D] (q, k or v of a fused qkv
// projection) to [B*H, T, D/H]; merge takes [B*H, T, D/H] back to [B*T,
// D]. Each is the other's gradient (a split's gradient fills only its
// part; gorgonia sums the three). It replaces Slice + Reshape + Transpose,
// which in gorgonia v0.9.18 read the wrong values for some widths (the v
// part of a 128-wide qkv).
type headsOp struct {
	opBasics
	merge                     bool
	part, parts               int
	batch, tokens, heads, dim int
}

func newHeadsOp(merge bool, part, parts, batch, tokens, heads, dim int) *headsOp {
	kind := "split"
	if merge {
		kind = "merge"
	}
	return &headsOp{opBasics: opBasics{desc: fmt.Sprintf("heads-%s<%d/%d, %dx%d, %d heads of %d>", kind, part, parts, batch, tokens, heads, dim)},
		merge: merge, part: part, parts: parts, batch: batch, tokens: tokens, heads: heads, dim: dim}
}

// splitHeads returns part p of qkv [B*T, parts*D] as [B*H, T, D/H].
func (b *builder) splitHeads(x *G.Node, part, parts, batch, tokens, heads, dim int) *G.Node {
	return b.must(G.ApplyOp(newHeadsOp(false, part, parts, batch, tokens, heads, dim), x))
}

// mergeHeads lays [B*H, T, D/H] out as [B*T, D].
func (b *builder) mergeHeads(x *G.Node, batch, tokens, heads, dim int) *G.Node {
	return b.must(G.ApplyOp(newHeadsOp(true, 0, 1, batch, tokens, heads, dim), x))
}

func (op *headsOp) Arity() int { return 1 }

func (op *headsOp) Type() hm.Type {
	if op.merge {
		return hm.NewFnType(G.TensorType{Dims: 3, Of: hm.TypeVariable('a')}, G.TensorType{Dims: 2, Of: hm.TypeVariable('a')})
	}
	return hm.NewFnType(G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}, G.TensorType{Dims: 3, Of: hm.TypeVariable('a')})
}

func (op *headsOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.merge {
		return tensor.Shape{op.batch * op.tokens, op.parts * op.dim}, nil
	}
	return tensor.Shape{op.batch * op.heads, op.tokens, op.dim / op.heads}, nil
}

// SymDiff: a split's gradient is a merge into its part of a zero [B*T,
// parts*D], and a merge's a split.
func (op *headsOp) SymDiff(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	inv := newHeadsOp(!op.merge, op.part, op.parts, op.batch, op.tokens, op.heads, op.dim)
	dx, err := G.ApplyOp(inv, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

func (op *headsOp) Do(inputs ...G.Value) (G.Value, error) {
	x, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	shape, _ := op.InferShape()
	out := make([]float32, shape.TotalSize())
	dh, width := op.dim/op.heads, op.parts*op.dim
	for b := range op.batch {
		for h := range op.heads {
			for t := range op.tokens {
				row := (b*op.tokens+t)*width + op.part*op.dim + h*dh
				hm := ((b*op.heads+h)*op.tokens + t) * dh
				if op.merge {
					copy(out[row:row+dh], x[hm:hm+dh])
				} else {
					copy(out[hm:hm+dh], x[row:row+dh])
				}
			}
		}
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out)), nil
}
