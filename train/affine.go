package train

import (
	"fmt"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// affineOp is y = x * scale[c] + shift[c] over x [B, C, H, W] (optionally
// followed by a ReLU), in one pass: an evaluation-mode batch norm, whose
// four broadcast ops through gorgonia cost more than the convolution
// before it. Its backward ops give dx, dscale and dshift.
type affineOp struct {
	opBasics
	shape tensor.Shape
	relu  bool
	// grad: 0 forward (x, scale, shift); 1 dx (x, scale, shift, dy);
	// 2 dscale and 3 dshift (x, scale, shift, dy).
	which int
	out   outBuf
}

// channelAffine applies x * scale + shift per channel, then a ReLU when
// asked.
func (b *builder) channelAffine(x, scale, shift *G.Node, relu bool) *G.Node {
	s := x.Shape()
	op := &affineOp{opBasics: opBasics{desc: fmt.Sprintf("affine%v relu=%v", s, relu)}, shape: s.Clone(), relu: relu}
	return b.must(G.ApplyOp(op, x, scale, shift))
}

func (op *affineOp) Arity() int {
	if op.which == 0 {
		return 3
	}
	return 4
}

func (op *affineOp) Type() hm.Type {
	t4 := G.TensorType{Dims: 4, Of: hm.TypeVariable('a')}
	t1 := G.TensorType{Dims: 1, Of: hm.TypeVariable('a')}
	switch op.which {
	case 0:
		return hm.NewFnType(t4, t1, t1, t4)
	case 1:
		return hm.NewFnType(t4, t1, t1, t4, t4)
	}
	return hm.NewFnType(t4, t1, t1, t4, t1)
}

func (op *affineOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.which >= 2 {
		return tensor.Shape{op.shape[1]}, nil
	}
	return op.shape.Clone(), nil
}

func (op *affineOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.which != 0 {
		return nil, fmt.Errorf("%s is not differentiable", op)
	}
	out := make(G.Nodes, 3)
	for i := range out {
		back := &affineOp{opBasics: opBasics{desc: fmt.Sprintf("grad%d %s", i+1, op.desc), grad: true}, shape: op.shape, relu: op.relu, which: i + 1}
		n, err := G.ApplyOp(back, inputs[0], inputs[1], inputs[2], grad)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (op *affineOp) Do(inputs ...G.Value) (G.Value, error) {
	args, err := f32s(inputs)
	if err != nil {
		return nil, err
	}
	x, scale, shift := args[0], args[1], args[2]
	batch, c := op.shape[0], op.shape[1]
	plane := op.shape[2] * op.shape[3]
	shape, _ := op.InferShape()
	var out []float32
	if op.which == 0 { // every value written below
		out = op.out.get(shape.TotalSize())
	} else {
		out = make([]float32, shape.TotalSize())
	}
	if op.which >= 2 {
		dy := args[3]
		for i := range batch {
			for ch := range c {
				base := (i*c + ch) * plane
				var s float32
				for j := base; j < base+plane; j++ {
					if op.relu && x[j]*scale[ch]+shift[ch] <= 0 {
						continue
					}
					if op.which == 2 {
						s += dy[j] * x[j]
					} else {
						s += dy[j]
					}
				}
				out[ch] += s
			}
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out)), nil
	}
	var dy []float32
	if op.which == 1 {
		dy = args[3]
	}
	// One pass per channel plane; plane q is channel q % c of image q / c.
	inParts(batch*c, plane, func(lo, hi int) {
		for q := lo; q < hi; q++ {
			s, t := scale[q%c], shift[q%c]
			dst, src := out[q*plane:(q+1)*plane], x[q*plane:(q+1)*plane]
			switch {
			case op.which == 1:
				g := dy[q*plane : (q+1)*plane]
				for j, v := range src {
					if op.relu && v*s+t <= 0 {
						continue
					}
					dst[j] = g[j] * s
				}
			case op.relu:
				for j, v := range src {
					if y := v*s + t; y > 0 {
						dst[j] = y
					} else {
						dst[j] = 0
					}
				}
			default:
				for j, v := range src {
					dst[j] = v*s + t
				}
			}
		}
	})
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out)), nil
}
