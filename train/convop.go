package train

import (
	"fmt"
	"hash"
	"hash/fnv"
	"runtime"
	"sync"

	"github.com/chewxy/hm"
	"github.com/gatepipe/gatepipe/internal/vec"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// convKind says which of the three products a convOp computes.
type convKind int

const (
	convForward     convKind = iota // y = conv(x, w)
	convGradInput                   // dx from dy and w
	convGradWeights                 // dw from x and dy
)

// convOp is a 2-D convolution (square kernel, stride, zero padding,
// channel groups as PyTorch's groups) on float32 NCHW tensors, done per image as one matrix product with the
// image's im2col matrix, so the result is laid out NCHW without the
// transpose gorgonia's Conv2d pays, and its backward products (for the
// input and for the weights) are ops of their own.
type convOp struct {
	opBasics
	kind            convKind
	k, stride, pad  int
	cin, cout, h, w int // input channels and size; output channels
	// groups splits the channels as PyTorch's groups: output channel
	// block g sees only input channel block g (groups = cin = cout is a
	// depthwise convolution). The weight is [cout, cin/groups, k, k].
	groups            int
	outH, outW, batch int
	inShape, wShape   tensor.Shape
	outShape          tensor.Shape
	// bias: the forward op takes a third input, a bias per output
	// channel, added as each image's product is written.
	bias bool
	// noInputGrad: x is the model's data input, whose gradient nobody
	// reads, so the backward product for it is not built.
	noInputGrad bool
	// keepCols: a forward op keeps every image's im2col matrix in cols
	// for its weight-gradient op (fwd), which then needs no im2col of
	// its own. The tape runs the forward op first in every pass.
	keepCols bool
	cols     []float32
	fwd      *convOp
	// scratch holds one im2col buffer per worker, reused across passes.
	scratch [][]float32
	// out is the forward op's output, or the input-gradient op's, reused
	// across passes.
	out outBuf
	// relu clamps the forward output at zero as it is written (frozen
	// inference only: such an op is not differentiated).
	relu bool
}

// keptColsBudget bounds the im2col matrices a forward op keeps for its
// backward pass (bytes; the reference convnet's second layer keeps 29 MB
// at batch 128); larger layers recompute them, which bounds what a deep
// network adds to a training node's memory.
const keptColsBudget = 32 << 20

func newConvOp(kind convKind, batch, cin, h, w, cout, k, stride, pad, groups int) *convOp {
	op := &convOp{opBasics: opBasics{grad: kind != convForward}, kind: kind, k: k, stride: stride, pad: pad, cin: cin, cout: cout, h: h, w: w, batch: batch, groups: groups}
	op.outH, op.outW = (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
	op.inShape = tensor.Shape{batch, cin, h, w}
	op.wShape = tensor.Shape{cout, cin / groups, k, k}
	op.outShape = tensor.Shape{batch, cout, op.outH, op.outW}
	op.desc = fmt.Sprintf("conv%d<%dx%d/%d pad %d, %dx%dx%dx%d -> %d>", kind, k, k, stride, pad, batch, cin, h, w, cout)
	if groups != 1 {
		op.desc = fmt.Sprintf("%s groups %d", op.desc, groups)
	}
	return op
}

// opBasics holds what the ops of this file share: they return fresh
// values, call no external code, overwrite no input, and hash by their
// description; backward ops (grad) are not differentiated again.
type opBasics struct {
	desc string
	grad bool
}

func (o opBasics) ReturnsPtr() bool      { return false }
func (o opBasics) CallsExtern() bool     { return false }
func (o opBasics) OverwritesInput() int  { return -1 }
func (o opBasics) String() string        { return o.desc }
func (o opBasics) WriteHash(h hash.Hash) { fmt.Fprint(h, o.desc) }

func (o opBasics) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

func (o opBasics) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = !o.grad
	}
	return d
}

// conv2d applies the convolution op to x [B, Cin, H, W] and w [Cout,
// Cin/groups, k, k], adding bias [Cout] when it is not nil.
func (b *builder) conv2d(x, w, bias *G.Node, k, stride, pad, groups int) *G.Node {
	return b.conv2dReLU(x, w, bias, k, stride, pad, groups, false)
}

// conv2dReLU is conv2d, then a ReLU when relu is set (frozen builds).
func (b *builder) conv2dReLU(x, w, bias *G.Node, k, stride, pad, groups int, relu bool) *G.Node {
	s, ws := x.Shape(), w.Shape()
	if groups < 1 || s[1]%groups != 0 || ws[0]%groups != 0 || ws[1]*groups != s[1] {
		b.fail("convolution: %d groups do not divide %d input and %d output channels (weight %v)", groups, s[1], ws[0], ws)
	}
	op := newConvOp(convForward, s[0], s[1], s[2], s[3], ws[0], k, stride, pad, groups)
	op.noInputGrad = x == b.data
	if relu {
		op.relu = true
		op.desc += " + relu"
	}
	if bias == nil {
		return b.must(G.ApplyOp(op, x, w))
	}
	op.bias = true
	op.desc += " + bias"
	return b.must(G.ApplyOp(op, x, w, bias))
}

// DiffWRT leaves out the data input when nobody reads its gradient.
func (op *convOp) DiffWRT(n int) []bool {
	d := op.opBasics.DiffWRT(n)
	if op.noInputGrad && n > 0 {
		d[0] = false
	}
	return d
}

func (op *convOp) Arity() int {
	if op.bias {
		return 3
	}
	return 2
}

func (op *convOp) Type() hm.Type {
	t := G.TensorType{Dims: 4, Of: hm.TypeVariable('a')}
	if op.bias {
		return hm.NewFnType(t, t, G.TensorType{Dims: 1, Of: hm.TypeVariable('a')}, t)
	}
	return hm.NewFnType(t, t, t)
}

func (op *convOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	switch op.kind {
	case convGradInput:
		return op.inShape.Clone(), nil
	case convGradWeights:
		return op.wShape.Clone(), nil
	}
	return op.outShape.Clone(), nil
}

// SymDiff returns dx = convGradInput(dy, w) and dw = convGradWeights(x, dy).
func (op *convOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.kind != convForward || op.relu {
		return nil, fmt.Errorf("%s is not differentiable", op)
	}
	x, w := inputs[0], inputs[1]
	dxOp, dwOp := *op, *op
	dxOp.noInputGrad, dwOp.noInputGrad = false, false
	dxOp.scratch, dwOp.scratch = nil, nil
	dxOp.out, dwOp.out = outBuf{}, outBuf{}
	op.keepCols = 4*op.batch*op.cin*op.k*op.k*op.outH*op.outW <= keptColsBudget
	dwOp.fwd = op
	dxOp.kind, dwOp.kind = convGradInput, convGradWeights
	dxOp.grad, dwOp.grad = true, true
	dxOp.bias, dwOp.bias = false, false
	dxOp.desc = fmt.Sprintf("conv%d<%s>", convGradInput, op.desc)
	dwOp.desc = fmt.Sprintf("conv%d<%s>", convGradWeights, op.desc)
	var dx *G.Node // stays nil for the data input: gorgonia skips it
	var err error
	if !op.noInputGrad {
		if dx, err = G.ApplyOp(&dxOp, grad, w); err != nil {
			return nil, err
		}
	}
	dw, err := G.ApplyOp(&dwOp, x, grad)
	if err != nil {
		return nil, err
	}
	if !op.bias {
		return G.Nodes{dx, dw}, nil
	}
	db, err := G.ApplyOp(newChannelSumOp(op.outShape), grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dw, db}, nil
}

// f32 returns a value's float32 data in row-major order, for the ops of
// this package (convolution, pooling, linear).
func f32(v G.Value) ([]float32, error) {
	t, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("training op: want a dense tensor, got %T", v)
	}
	if t.IsMaterializable() { // a view: lay it out as its shape says
		if t, ok = t.Materialize().(*tensor.Dense); !ok {
			return nil, fmt.Errorf("training op: cannot lay out a %v view", v.Shape())
		}
	}
	data, ok := t.Data().([]float32)
	if !ok {
		return nil, fmt.Errorf("training op: want float32 data, got %T", t.Data())
	}
	return data, nil
}

// f32s is f32 of every input.
func f32s(inputs []G.Value) ([][]float32, error) {
	out := make([][]float32, len(inputs))
	for i, v := range inputs {
		var err error
		if out[i], err = f32(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Do computes the op's product for every image, the images split
// between GOMAXPROCS workers (each BLAS call then runs on one thread).
func (op *convOp) Do(inputs ...G.Value) (G.Value, error) {
	a, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	bv, err := f32(inputs[1])
	if err != nil {
		return nil, err
	}
	var bias []float32
	if op.bias {
		if bias, err = f32(inputs[2]); err != nil {
			return nil, err
		}
	}
	shape, _ := op.InferShape()
	var out *tensor.Dense
	if op.kind == convGradWeights { // summed into: starts at zero
		out = tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float32))
	} else { // every value written below (the input gradient's image by image)
		out = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(op.out.get(shape.TotalSize())))
	}
	res := out.Data().([]float32)
	d := op.dims()
	switch op.kind {
	case convForward:
		op.forward(d, a, bv, bias, res)
	case convGradInput:
		op.gradInput(d, a, bv, res)
	case convGradWeights:
		op.gradWeights(d, a, bv, res)
	}
	return out, nil
}

// workers returns how many goroutines share the op's images, making sure
// each has an im2col scratch buffer of n values (zeroed when made: the
// padding of col2im's layout stays zero).
func (op *convOp) workers(n int) int {
	w := max(1, min(runtime.GOMAXPROCS(0), op.batch))
	for len(op.scratch) < w {
		op.scratch = append(op.scratch, make([]float32, n))
	}
	return w
}

// colLayout returns the layout of the matrix col2im reads: each row of
// outH*outW values starts off values into a row of stride values. For a
// "same" convolution the row has off zeros either side, at least the
// largest tap shift, so col2im can gather every tap's contribution to a
// whole input plane with one aligned span add; otherwise rows are packed.
func (op *convOp) colLayout() (off, stride int) {
	cols := op.outH * op.outW
	if !op.same() {
		return 0, cols
	}
	off = op.pad*(op.w+1) + 7 // the largest |tap shift|, rounded up to 8 values
	off -= off % 8
	return off, cols + 2*off
}

// inParts splits n items of size values each into one contiguous range
// [lo, hi) of items per GOMAXPROCS worker, fewer when the work (2^15
// values a part at least) would not repay the hand-off, and calls fn on
// each; it returns when all are done.
func inParts(n, size int, fn func(lo, hi int)) {
	parts := max(1, min(runtime.GOMAXPROCS(0), n, n*size/(1<<15)))
	forImages(parts, parts, func(_, p int) { fn(p*n/parts, (p+1)*n/parts) })
}

// forImages calls fn(worker, i) for every image i < n, worker w taking the
// w-th contiguous share; it returns when all are done.
func forImages(n, workers int, fn func(worker, i int)) {
	if workers == 1 {
		for i := range n {
			fn(0, i)
		}
		return
	}
	var wg sync.WaitGroup
	for wk := range workers {
		wg.Go(func() {
			for i := wk * n / workers; i < (wk+1)*n/workers; i++ {
				fn(wk, i)
			}
		})
	}
	wg.Wait()
}

// same reports a stride-1 convolution whose output is the input's size
// (padding (k-1)/2). Its im2col rows are whole input planes shifted by the
// tap's offset, with the taps that fall in the padding zeroed, so they are
// copied (and added back in col2im) as one span per row.
func (op *convOp) same() bool { return op.stride == 1 && op.outH == op.h && op.outW == op.w }

// tapShift returns tap (ki, kj)'s offset in rows and columns, and its
// offset in a flat plane.
func (op *convOp) tapShift(ki, kj int) (dy, dx, flat int) {
	dy, dx = ki-op.pad, kj-op.pad
	return dy, dx, dy*op.w + dx
}

// zeroPadding clears the entries of a "same" im2col row whose tap (dy,
// dx) falls outside the image: whole output rows at the top or bottom,
// and columns at the left or right edge.
func (op *convOp) zeroPadding(row []float32, dy, dx int) {
	h, w := op.h, op.w
	if dy < 0 {
		clear(row[:min(-dy, h)*w])
	} else if dy > 0 {
		clear(row[max(h-dy, 0)*w:])
	}
	op.zeroColumns(row, dx)
}

// zeroColumns clears the entries of a "same" im2col row whose tap's
// column offset dx falls outside the image: columns at the left or right
// edge of every output row.
func (op *convOp) zeroColumns(row []float32, dx int) {
	h, w := op.h, op.w
	if dx == 0 {
		return
	}
	x0, x1 := 0, min(-dx, w) // the columns to clear
	if dx > 0 {
		x0, x1 = max(w-dx, 0), w
	}
	if x1-x0 == 1 { // a 3x3 kernel's edge taps: one value a row
		for y := range h {
			row[y*w+x0] = 0
		}
		return
	}
	for y := range h {
		clear(row[y*w+x0 : y*w+x1])
	}
}

// eachTap calls fn for every input channel c and kernel tap (ki, kj) with
// the channel's plane of img and the tap's row of the im2col matrix col.
func (op *convOp) eachTap(img, col []float32, fn func(plane, row []float32, ki, kj int)) {
	op.eachTapStrided(img, op.h*op.w, col, op.outH*op.outW, fn)
}

// eachTapStrided is eachTap over an image whose channel planes are
// chanStride values apart and an im2col matrix whose rows are rowStride
// values apart (an image among others of a channel-major batch).
func (op *convOp) eachTapStrided(img []float32, chanStride int, col []float32, rowStride int, fn func(plane, row []float32, ki, kj int)) {
	n, cols := op.h*op.w, op.outH*op.outW
	for c := range op.cin {
		plane := img[c*chanStride:][:n]
		for ki := range op.k {
			for kj := range op.k {
				fn(plane, col[((c*op.k+ki)*op.k+kj)*rowStride:][:cols], ki, kj)
			}
		}
	}
}

// im2col lays one image [Cin, H, W] out as [Cin*k*k, outH*outW]: row
// (c, ki, kj), column (oy, ox) holds the input under that kernel tap.
// pointwise reports a 1x1 convolution with stride 1 and no padding,
// whose im2col matrix is the image itself ([Cin, H*W]).
func (op *convOp) pointwise() bool { return op.k == 1 && op.stride == 1 && op.pad == 0 }

func (op *convOp) im2col(img, col []float32) {
	op.im2colStrided(img, op.h*op.w, col, op.outH*op.outW)
}

// im2colStrided is im2col with the strides of eachTapStrided.
func (op *convOp) im2colStrided(img []float32, chanStride int, col []float32, rowStride int) {
	if op.same() {
		op.eachTapStrided(img, chanStride, col, rowStride, func(plane, row []float32, ki, kj int) {
			dy, dx, s := op.tapShift(ki, kj)
			lo, hi := max(0, -s), min(len(row), len(row)-s)
			if lo >= hi { // a tap past the whole image (a kernel wider than it)
				clear(row)
				return
			}
			clear(row[:lo])
			copy(row[lo:hi], plane[lo+s:hi+s])
			clear(row[hi:])
			op.zeroPadding(row, dy, dx)
		})
		return
	}
	op.eachTapStrided(img, chanStride, col, rowStride, func(plane, row []float32, ki, kj int) {
		lo, hi := op.validX(kj)
		for oy := range op.outH {
			y := oy*op.stride - op.pad + ki
			dst := row[oy*op.outW : (oy+1)*op.outW]
			if y < 0 || y >= op.h || lo >= hi {
				clear(dst)
				continue
			}
			src := plane[y*op.w : (y+1)*op.w]
			clear(dst[:lo])
			clear(dst[hi:])
			if op.stride == 1 {
				copy(dst[lo:hi], src[lo-op.pad+kj:])
				continue
			}
			gatherStrided(dst[lo:hi], src[lo*op.stride-op.pad+kj:], op.stride)
		}
	})
}

// gatherStrided sets dst[i] = src[i*stride].
func gatherStrided(dst, src []float32, stride int) {
	if len(dst) == 0 {
		return
	}
	src = src[:(len(dst)-1)*stride+1]
	if stride == 2 {
		for i := range dst {
			dst[i] = src[2*i]
		}
		return
	}
	for i := range dst {
		dst[i] = src[i*stride]
	}
}

// validX returns the output columns [lo, hi) whose tap kj falls inside the
// image (outside it is zero padding).
func (op *convOp) validX(kj int) (lo, hi int) {
	// x = ox*stride - pad + kj must satisfy 0 <= x < w.
	lo = max(0, (op.pad-kj+op.stride-1)/op.stride)
	hi = min(op.outW, (op.w-1+op.pad-kj)/op.stride+1)
	if op.w-1+op.pad-kj < 0 {
		hi = 0
	}
	return lo, hi
}

// col2im sets img to the sum of an im2col-shaped gradient's entries over
// where im2col took each from. col is laid out as colLayout says; col2im
// overwrites its padding taps.
func (op *convOp) col2im(col, img []float32) {
	if op.same() {
		op.col2imSame(col, img)
		return
	}
	clear(img)
	op.eachTap(img, col, func(plane, row []float32, ki, kj int) {
		lo, hi := op.validX(kj)
		for oy := range op.outH {
			y := oy*op.stride - op.pad + ki
			if y < 0 || y >= op.h || lo >= hi {
				continue
			}
			dst := plane[y*op.w : (y+1)*op.w]
			src := row[oy*op.outW : (oy+1)*op.outW]
			if op.stride == 1 {
				vec.Add(dst[lo-op.pad+kj:][:hi-lo], src[lo:hi])
				continue
			}
			for ox := lo; ox < hi; ox++ {
				dst[ox*op.stride-op.pad+kj] += src[ox]
			}
		}
	})
}

// col2imSame is col2im of a "same" convolution. Every input position q
// of a plane gathers tap t's entry q - shift_t: the padding either side of
// each row of col reads as zero where that falls outside the plane, and
// the entries whose tap wraps around a row edge are zeroed first (those
// past the top or bottom map outside the plane and are never read). So a
// plane is one sum of k*k whole spans (vec.SumOf), each block stored
// once (adding shifted spans into the plane one tap at a time instead
// stalls loads on the misaligned stores before them).
func (op *convOp) col2imSame(col, img []float32) {
	off, stride := op.colLayout()
	n, kk := op.h*op.w, op.k*op.k
	srcs := make([][]float32, kk)
	for c := range op.cin {
		for t := range srcs {
			row := col[(c*kk+t)*stride:][:stride]
			_, dx, s := op.tapShift(t/op.k, t%op.k)
			op.zeroColumns(row[off:off+n], dx)
			srcs[t] = row[off-s:][:n]
		}
		vec.SumOf(img[c*n:(c+1)*n], srcs)
	}
}

// channelSumOp sums dy [B, C, H, W] over everything but channels: the
// gradient of a per-channel bias (the convolution's, added in its
// forward pass).
type channelSumOp struct {
	opBasics
	shape tensor.Shape
}

func newChannelSumOp(shape tensor.Shape) *channelSumOp {
	return &channelSumOp{opBasics: opBasics{desc: fmt.Sprintf("channelSum%v", shape), grad: true}, shape: shape.Clone()}
}

func (op *channelSumOp) Arity() int { return 1 }

func (op *channelSumOp) Type() hm.Type {
	return hm.NewFnType(G.TensorType{Dims: 4, Of: hm.TypeVariable('a')}, G.TensorType{Dims: 1, Of: hm.TypeVariable('a')})
}

func (op *channelSumOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.shape[1]}, nil
}

// SymDiff: the sum is not differentiated again.
func (op *channelSumOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("%s is not differentiable", op)
}

func (op *channelSumOp) Do(inputs ...G.Value) (G.Value, error) {
	x, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	b, c := op.shape[0], op.shape[1]
	plane := op.shape[2] * op.shape[3]
	out := make([]float32, c)
	for i := 0; i < b; i++ {
		for ch := 0; ch < c; ch++ {
			out[ch] += vec.Sum(x[(i*c+ch)*plane : (i*c+ch+1)*plane])
		}
	}
	return tensor.New(tensor.WithShape(c), tensor.WithBacking(out)), nil
}
