package train

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// layerNormOp normalises the rows of x [M, D]: (x - mean) / sqrt(var +
// eps) * gamma + beta, in one pass per row (through gorgonia it was eight
// broadcast ops, each keeping a full-size value on the tape). Its
// backward ops recompute each row's statistics from x:
//
//	dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma
//	dgamma = sum over rows of dy * xhat, dbeta = sum over rows of dy
type layerNormOp struct {
	opBasics
	m, d  int
	eps   float64
	which int // 0 forward (x, gamma, beta); 1 dx, 2 dgamma, 3 dbeta (x, gamma, dy)
	out   outBuf
}

func newLayerNormOp(which, m, d int, eps float64) *layerNormOp {
	desc := fmt.Sprintf("layernorm<%dx%d eps %g>", m, d, eps)
	if which > 0 {
		desc = fmt.Sprintf("grad%d %s", which, desc)
	}
	return &layerNormOp{opBasics: opBasics{desc: desc, grad: which > 0}, m: m, d: d, eps: eps, which: which}
}

func (op *layerNormOp) Arity() int { return 3 }

func (op *layerNormOp) Type() hm.Type {
	t2 := G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	t1 := G.TensorType{Dims: 1, Of: hm.TypeVariable('a')}
	switch op.which {
	case 0:
		return hm.NewFnType(t2, t1, t1, t2)
	case 1:
		return hm.NewFnType(t2, t1, t2, t2)
	}
	return hm.NewFnType(t2, t1, t2, t1)
}

func (op *layerNormOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.which >= 2 {
		return tensor.Shape{op.d}, nil
	}
	return tensor.Shape{op.m, op.d}, nil
}

func (op *layerNormOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.which != 0 {
		return nil, fmt.Errorf("%s is not differentiable", op)
	}
	out := make(G.Nodes, 3)
	for i := range out {
		n, err := G.ApplyOp(newLayerNormOp(i+1, op.m, op.d, op.eps), inputs[0], inputs[1], grad)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// rowStats returns a row's mean and 1/sqrt(var + eps) (biased variance,
// as PyTorch's LayerNorm).
func (op *layerNormOp) rowStats(row []float32) (mean, rstd float64) {
	for _, v := range row {
		mean += float64(v)
	}
	mean /= float64(len(row))
	var v2 float64
	for _, v := range row {
		c := float64(v) - mean
		v2 += c * c
	}
	return mean, 1 / math.Sqrt(v2/float64(len(row))+op.eps)
}

func (op *layerNormOp) Do(inputs ...G.Value) (G.Value, error) {
	args, err := f32s(inputs)
	if err != nil {
		return nil, err
	}
	x, gamma, third := args[0], args[1], args[2]
	shape, _ := op.InferShape()
	var out []float32
	if op.which == 0 {
		out = op.out.get(shape.TotalSize()) // every value written
	} else {
		out = make([]float32, shape.TotalSize())
	}
	d := op.d
	if op.which >= 2 { // parameter gradients: sums over rows
		for r := range op.m {
			row, dy := x[r*d:(r+1)*d], third[r*d:(r+1)*d]
			mean, rstd := op.rowStats(row)
			for j := range d {
				if op.which == 2 {
					out[j] += dy[j] * float32((float64(row[j])-mean)*rstd)
				} else {
					out[j] += dy[j]
				}
			}
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out)), nil
	}
	inParts(op.m, d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row, dst := x[r*d:(r+1)*d], out[r*d:(r+1)*d]
			mean, rstd := op.rowStats(row)
			if op.which == 0 {
				beta := third
				for j, v := range row {
					dst[j] = float32((float64(v)-mean)*rstd)*gamma[j] + beta[j]
				}
				continue
			}
			dy := third[r*d : (r+1)*d]
			var mg, mgx float64
			for j, v := range row {
				g := float64(dy[j] * gamma[j])
				mg += g
				mgx += g * (float64(v) - mean) * rstd
			}
			mg /= float64(d)
			mgx /= float64(d)
			for j, v := range row {
				g := float64(dy[j] * gamma[j])
				xhat := (float64(v) - mean) * rstd
				dst[j] = float32(rstd * (g - mg - xhat*mgx))
			}
		}
	})
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out)), nil
}
