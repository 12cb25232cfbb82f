package train

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// pixelCrossEntropyOp is segmentation's training loss in one op: the
// class maps z [B, K, h, w] upsampled bilinearly to the image's H x W
// (the same weights as upsample's, half-pixel centres, edges clamped),
// a softmax over the K classes at every pixel, and the cross-entropy
// against the pixel's class in y [B, H*W] (class indices as float32),
// averaged over the B*H*W pixels. Its gradient with respect to z is
// computed from z again, one output row at a time, and scattered back to
// the maps' size.
//
// The graph it replaces (upsample, two transposes, log-softmax,
// exponential, one-hot targets and the product) held a dozen [B*H*W, K]
// values with their gradients: for ADE20K's 151 classes at 224 px and
// batch 8, 242 MB each and 8-9 GB a step. This holds the gradient at the
// maps' size and one output row of class scores.
type pixelCrossEntropyOp struct {
	opBasics
	pixelMaps
	out outBuf
}

// pixelMaps are B class maps of K classes at h x w, upsampled bilinearly
// to height x width one output row at a time.
type pixelMaps struct {
	batch, classes, h, w, height, width int
	rows, cols                          []tap // per output row and column
}

// newPixelMaps describes maps of shape s [B, K, h, w] upsampled to
// height x width.
func newPixelMaps(s tensor.Shape, height, width int) pixelMaps {
	return pixelMaps{batch: s[0], classes: s[1], h: s[2], w: s[3], height: height, width: width,
		rows: bilinearTaps(s[2], height), cols: bilinearTaps(s[3], width)}
}

// tap is one output coordinate's two source coordinates along an axis
// and their weights (the rows of bilinearAxis's matrix).
type tap struct {
	i0, i1 int
	w0, w1 float32
}

// bilinearTaps are bilinearAxis's weights as two taps per output.
func bilinearTaps(in, out int) []tap {
	m := bilinearAxis(in, out)
	taps := make([]tap, out)
	for o := range out {
		t := tap{i0: -1, i1: -1}
		for i := range in {
			if v := m[i*out+o]; v != 0 {
				if t.i0 < 0 {
					t.i0, t.w0 = i, v
				} else {
					t.i1, t.w1 = i, v
				}
			}
		}
		if t.i0 < 0 { // cannot happen: every output has a source
			t.i0 = 0
		}
		if t.i1 < 0 {
			t.i1 = t.i0
		}
		taps[o] = t
	}
	return taps
}

// pixelCrossEntropy is the mean per-pixel cross-entropy of class maps z
// [B, K, h, w], upsampled to height x width, against y [B, height*width].
func (b *builder) pixelCrossEntropy(z, y *G.Node, height, width int) *G.Node {
	s := z.Shape()
	if len(s) != 4 {
		b.fail("per-pixel cross-entropy of %v class maps, not [B, K, h, w]", s)
	}
	op := &pixelCrossEntropyOp{opBasics: opBasics{desc: fmt.Sprintf("pixelCrossEntropy%v->%dx%d", s, height, width)},
		pixelMaps: newPixelMaps(s, height, width)}
	return b.must(G.ApplyOp(op, z, y))
}

func (op *pixelCrossEntropyOp) Arity() int {
	if op.grad {
		return 3 // z, y and the loss's gradient
	}
	return 2
}

func (op *pixelCrossEntropyOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	z, y := G.TensorType{Dims: 4, Of: a}, G.TensorType{Dims: 2, Of: a}
	if op.grad {
		return hm.NewFnType(z, y, a, z)
	}
	return hm.NewFnType(z, y, a)
}

func (op *pixelCrossEntropyOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.grad {
		return tensor.Shape{op.batch, op.classes, op.h, op.w}, nil
	}
	return tensor.ScalarShape(), nil
}

// DiffWRT: the maps are differentiated, the targets not.
func (op *pixelCrossEntropyOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	d[0] = !op.grad
	return d
}

func (op *pixelCrossEntropyOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%s is not differentiable", op)
	}
	back := *op
	back.opBasics = opBasics{desc: "grad " + op.desc, grad: true}
	back.out = outBuf{}
	dz, err := G.ApplyOp(&back, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dz, nil}, nil
}

func (op *pixelCrossEntropyOp) Do(inputs ...G.Value) (G.Value, error) {
	args, err := f32s(inputs[:2])
	if err != nil {
		return nil, err
	}
	z, y := args[0], args[1]
	k, hw, HW := op.classes, op.h*op.w, op.height*op.width
	if len(z) != op.batch*k*hw || len(y) != op.batch*HW {
		return nil, fmt.Errorf("%s: %d map values and %d targets", op, len(z), len(y))
	}
	var scale float32
	var dz []float32
	if op.grad {
		g, err := scalarOf(inputs[2])
		if err != nil {
			return nil, err
		}
		scale = g / float32(op.batch*HW)
		dz = op.out.get(len(z))
		clear(dz)
	}
	row := make([]float32, k*op.width) // one output row's class scores, class-major
	var loss float64
	for n := range op.batch {
		zn, yn := z[n*k*hw:(n+1)*k*hw], y[n*HW:(n+1)*HW]
		for Y, ty := range op.rows {
			op.upsampleRow(row, zn, ty)
			for X := range op.width {
				c := int(yn[Y*op.width+X])
				if c < 0 || c >= k || float32(c) != yn[Y*op.width+X] {
					return nil, fmt.Errorf("segmentation target %v at pixel (%d, %d) of batch example %d: not a class of 0..%d", yn[Y*op.width+X], Y, X, n, k-1)
				}
				lse := logSumExp(row, X, op.width, k)
				if !op.grad {
					loss += lse - float64(row[c*op.width+X])
					continue
				}
				// d loss / d score = (softmax - one-hot) * g / pixels,
				// written over the scores.
				for j := range k {
					p := float32(math.Exp(float64(row[j*op.width+X]) - lse))
					if j == c {
						p--
					}
					row[j*op.width+X] = p * scale
				}
			}
			if op.grad {
				op.scatterRow(dz[n*k*hw:(n+1)*k*hw], row, ty)
			}
		}
	}
	if op.grad {
		return tensor.New(tensor.WithShape(op.batch, k, op.h, op.w), tensor.WithBacking(dz)), nil
	}
	return G.NewF32(float32(loss / float64(op.batch*HW))), nil
}

// logSumExp is log(sum(exp)) of output column X's k class scores in row
// [k, width], stably (less their largest).
func logSumExp(row []float32, X, width, k int) float64 {
	m := row[X]
	for j := 1; j < k; j++ {
		m = max(m, row[j*width+X])
	}
	var s float64
	for j := range k {
		s += math.Exp(float64(row[j*width+X] - m))
	}
	return float64(m) + math.Log(s)
}

// upsampleRow writes output row ty's class scores into row [K, width]
// from one example's maps zn [K, h, w]: along the width first, then the
// height, as upsample multiplies.
func (op *pixelMaps) upsampleRow(row, zn []float32, ty tap) {
	hw := op.h * op.w
	for j := range op.classes {
		r0 := zn[j*hw+ty.i0*op.w : j*hw+(ty.i0+1)*op.w]
		r1 := zn[j*hw+ty.i1*op.w : j*hw+(ty.i1+1)*op.w]
		out := row[j*op.width : (j+1)*op.width]
		for X, tx := range op.cols {
			a := tx.w0*r0[tx.i0] + tx.w1*r0[tx.i1]
			b := tx.w0*r1[tx.i0] + tx.w1*r1[tx.i1]
			out[X] = ty.w0*a + ty.w1*b
		}
	}
}

// scatterRow adds output row ty's score gradients row [K, width] into the
// maps' gradient dzn [K, h, w] through the same weights.
func (op *pixelMaps) scatterRow(dzn, row []float32, ty tap) {
	hw := op.h * op.w
	for j := range op.classes {
		d0 := dzn[j*hw+ty.i0*op.w : j*hw+(ty.i0+1)*op.w]
		d1 := dzn[j*hw+ty.i1*op.w : j*hw+(ty.i1+1)*op.w]
		for X, tx := range op.cols {
			g := row[j*op.width+X]
			a, b := ty.w0*g, ty.w1*g
			d0[tx.i0] += tx.w0 * a
			d0[tx.i1] += tx.w1 * a
			d1[tx.i0] += tx.w0 * b
			d1[tx.i1] += tx.w1 * b
		}
	}
}

// pixelSoftmaxOp is segmentation's prediction in one op: the class maps
// z [B, K, h, w] upsampled as pixelCrossEntropyOp upsamples them and a
// softmax at every pixel, as probabilities [B*H*W, K] (pixel-major, the
// layout evaluation reads), written into one buffer that the next run
// reuses. The graph it replaces (upsample, transposes, log-softmax and
// exponential) allocated some eight values of that size on every
// evaluation batch.
type pixelSoftmaxOp struct {
	opBasics
	pixelMaps
	out outBuf
}

// pixelSoftmax is the per-pixel class probabilities [B*H*W, K] of class
// maps z [B, K, h, w] upsampled to height x width.
func (b *builder) pixelSoftmax(z *G.Node, height, width int) *G.Node {
	s := z.Shape()
	if len(s) != 4 {
		b.fail("per-pixel softmax of %v class maps, not [B, K, h, w]", s)
	}
	op := &pixelSoftmaxOp{opBasics: opBasics{desc: fmt.Sprintf("pixelSoftmax%v->%dx%d", s, height, width), grad: true},
		pixelMaps: newPixelMaps(s, height, width)}
	return b.must(G.ApplyOp(op, z))
}

func (op *pixelSoftmaxOp) Arity() int { return 1 }

func (op *pixelSoftmaxOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(G.TensorType{Dims: 4, Of: a}, G.TensorType{Dims: 2, Of: a})
}

func (op *pixelSoftmaxOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.batch * op.height * op.width, op.classes}, nil
}

// SymDiff: evaluation only (opBasics.grad marks it not differentiable).
func (op *pixelSoftmaxOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("%s is not differentiable", op)
}

func (op *pixelSoftmaxOp) Do(inputs ...G.Value) (G.Value, error) {
	z, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	k, hw, HW := op.classes, op.h*op.w, op.height*op.width
	if len(z) != op.batch*k*hw {
		return nil, fmt.Errorf("%s: %d map values", op, len(z))
	}
	out := op.out.get(op.batch * HW * k) // every value written below
	row := make([]float32, k*op.width)
	for n := range op.batch {
		zn := z[n*k*hw : (n+1)*k*hw]
		for Y, ty := range op.rows {
			op.upsampleRow(row, zn, ty)
			for X := range op.width {
				lse := logSumExp(row, X, op.width, k)
				o := out[((n*op.height+Y)*op.width+X)*k:][:k]
				for j := range o {
					o[j] = float32(math.Exp(float64(row[j*op.width+X]) - lse))
				}
			}
		}
	}
	return tensor.New(tensor.WithShape(op.batch*HW, k), tensor.WithBacking(out)), nil
}

// scalarOf is a scalar value's float32.
func scalarOf(v G.Value) (float32, error) {
	switch s := v.(type) {
	case *G.F32:
		return float32(*s), nil
	case *tensor.Dense:
		if d, ok := s.Data().(float32); ok {
			return d, nil
		}
		if d, ok := s.Data().([]float32); ok && len(d) == 1 {
			return d[0], nil
		}
	}
	return 0, fmt.Errorf("training op: want a float32 scalar, got %T", v)
}
