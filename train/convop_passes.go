package train

import (
	"github.com/gatepipe/gatepipe/internal/vec"
	"github.com/gatepipe/gatepipe/train/cblas"
	"gonum.org/v1/gonum/blas"
)

// convDims are the sizes one Do works with: each image's im2col matrix
// (rows x cols), input and output, the input gradient's column layout, a
// group's weight rows (og) and im2col rows (rg), and the workers sharing
// the images.
type convDims struct {
	rows, cols, inSize, outSize int
	off, stride                 int
	og, rg                      int
	workers                     int
}

func (op *convOp) dims() convDims {
	d := convDims{rows: op.cin * op.k * op.k, cols: op.outH * op.outW}
	d.inSize, d.outSize = op.cin*op.h*op.w, op.cout*d.cols
	d.off, d.stride = op.colLayout() // of the input-gradient's im2col matrices
	scratch := d.rows * d.cols
	if op.kind == convGradInput {
		scratch = d.rows * d.stride
	}
	d.workers = op.workers(scratch)
	d.og, d.rg = op.cout/op.groups, d.rows/op.groups
	return d
}

// forward: y_i [Cout, HoWo] = w [Cout, rows] x col_i (+ bias), per group.
func (op *convOp) forward(d convDims, a, w, bias, res []float32) {
	impl := cblas.Serial()
	rows, cols, og, rg := d.rows, d.cols, d.og, d.rg
	if op.keepCols && len(op.cols) != op.batch*rows*cols {
		op.cols = make([]float32, op.batch*rows*cols)
	}
	forImages(op.batch, d.workers, func(wk, i int) {
		col := op.scratch[wk]
		img := a[i*d.inSize : (i+1)*d.inSize]
		switch {
		case op.keepCols:
			col = op.cols[i*rows*cols:][:rows*cols]
			op.im2col(img, col)
		case op.pointwise():
			col = img // the image is its own im2col matrix
		default:
			op.im2col(img, col)
		}
		y := res[i*d.outSize : (i+1)*d.outSize]
		for g := range op.groups {
			impl.Sgemm(blas.NoTrans, blas.NoTrans, og, cols, rg, 1, w[g*og*rg:], rg, col[g*rg*cols:], cols, 0, y[g*og*cols:], cols)
		}
		switch {
		case op.relu && bias != nil:
			for c, bc := range bias {
				vec.AddConstReLU(y[c*cols:(c+1)*cols], bc)
			}
		case op.relu:
			vec.AddConstReLU(y, 0)
		default:
			for c, bc := range bias {
				vec.AddConst(y[c*cols:(c+1)*cols], bc)
			}
		}
	})
}

// gradInput: dcol_i = w^T [rows, Cout] x dy_i, then col2im.
func (op *convOp) gradInput(d convDims, dys, w, res []float32) {
	impl := cblas.Serial()
	cols, og, rg := d.cols, d.og, d.rg
	forImages(op.batch, d.workers, func(wk, i int) {
		col, dy := op.scratch[wk], dys[i*d.outSize:(i+1)*d.outSize]
		for g := range op.groups {
			impl.Sgemm(blas.Trans, blas.NoTrans, rg, cols, og, 1, w[g*og*rg:], rg, dy[g*og*cols:], cols, 0, col[g*rg*d.stride+d.off:], d.stride)
		}
		op.col2im(col, res[i*d.inSize:(i+1)*d.inSize]) // overwrites last pass's values
	})
}

// gradWeights: dw [Cout, rows] += dy_i x col_i^T, from the forward pass's
// kept im2col matrices when it kept them. Each worker sums its images
// into its own buffer (worker 0 into the result), added up at the end.
func (op *convOp) gradWeights(d convDims, a, dys, res []float32) {
	impl := cblas.Serial()
	rows, cols, og, rg := d.rows, d.cols, d.og, d.rg
	kept := op.fwd != nil && len(op.fwd.cols) == op.batch*rows*cols
	partial := make([][]float32, d.workers)
	partial[0] = res
	for wk := 1; wk < d.workers; wk++ {
		partial[wk] = make([]float32, len(res))
	}
	forImages(op.batch, d.workers, func(wk, i int) {
		var col []float32
		if kept {
			col = op.fwd.cols[i*rows*cols:][:rows*cols]
		} else {
			col = op.scratch[wk]
			op.im2col(a[i*d.inSize:(i+1)*d.inSize], col)
		}
		dy := dys[i*d.outSize : (i+1)*d.outSize]
		for g := range op.groups {
			impl.Sgemm(blas.NoTrans, blas.Trans, og, rg, cols, 1, dy[g*og*cols:], cols, col[g*rg*cols:], cols, 1, partial[wk][g*og*rg:], rg)
		}
	})
	for _, p := range partial[1:] {
		for j, v := range p {
			res[j] += v
		}
	}
}
