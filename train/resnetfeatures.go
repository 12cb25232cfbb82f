package train

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gatepipe/gatepipe/internal/vec"
	"github.com/gatepipe/gatepipe/train/cblas"
	"gonum.org/v1/gonum/blas"
)

// resnetForward is a frozen ResNet's (or ResNeXt's) feature pass written
// directly over the matrix product, without a graph: the layers of
// resnetTrunk with each batch norm folded into its convolution as the
// frozen graph folds it (foldBN), the ReLUs in the convolutions' output
// pass and the residual add. Each worker takes its own few images
// (resnetBatch) through the whole network with one-thread products, so
// workers never wait on each other at a layer boundary as the graph's
// per-layer image split does, and it keeps those images' activations, not
// a chunk's tape. A worker's images are laid out channel-major ([C, B,
// H*W]), so every convolution is one product over all of them: its
// weights are streamed once per few images, not once per image, and the
// late layers' products (7x7 = 49 columns an image) are wide enough to
// run at speed.
type resnetForward struct {
	c, size int // input channels and side
	layers  []resnetStep
	// act is the largest activation of one image, col the largest im2col
	// matrix of one product (imagesPerProduct images), in values.
	act, col int
	outDim   int
	gemm     cblas.Sgemmer
	work     sync.Pool
}

// resnetStep is one step on an image's activations: a convolution (with
// its folded weight and bias) from buffer in to buffer out, a max pool,
// a copy, or the residual add and ReLU of branch and in into out. Buffers
// are numbered 0-4 in a worker's resnetWork.
type resnetStep struct {
	op      *convOp // a convolution's geometry (batch 1)
	w, b    []float32
	relu    bool
	pool    bool // max pool k, stride, pad of op's geometry
	residue bool // out = max(branch + in, 0)
	branch  int
	in, out int
}

type resnetWork struct {
	bufs [5][]float32
	col  []float32
}

// resnetBatch is how many images a worker takes through the network at
// once (fewer when the batch has fewer). On the 2-core machine (ResNet-50,
// 224 px, BenchmarkFrozenFeatures) 4 and 8 images ran alike, within the
// machine's noise, and both faster than 1 at two threads; 4 holds a third
// less memory.
const resnetBatch = 4

// resnetColumns is about how many output columns one product of a
// convolution covers (see conv).
const resnetColumns = 784

// canRunResNetDirect reports whether the direct pass computes enc's
// features for images of shape: a ResNet without a stem or dense layers.
func canRunResNetDirect(enc EncoderSpec, shape []int) bool {
	return enc.Arch == "resnet" && len(shape) == 3 && len(enc.Hidden) == 0 &&
		(len(enc.InputShape) == 0 || slices.Equal(enc.InputShape, shape))
}

// newResNetForward reads the ResNet's parameters (w where it names one,
// else the initialisation of ps) for images of shape [C, H, W] (square
// or not) and plans its steps.
func newResNetForward(enc EncoderSpec, ps []*param, w Weights, shape []int) (*resnetForward, error) {
	b := &resnetBuilder{
		f:  &resnetForward{c: shape[0], size: shape[1] * shape[2], gemm: cblas.Serial()},
		pv: paramValues{arch: "resnet", byName: map[string]*param{}, w: w}, h: shape[1], wd: shape[2],
	}
	for _, p := range ps {
		b.pv.byName[p.name] = p
	}
	f := b.f
	f.act = shape[0] * b.h * b.wd
	b.stem(enc, shape[0])
	c := enc.Channels[0]
	for s, planes := range enc.Channels {
		for j := 0; j < enc.Blocks[s] && b.pv.err == nil; j++ {
			stride := 1
			if s > 0 && j == 0 {
				stride = 2
			}
			c = b.block(enc, fmt.Sprintf("encoder.layer%d.%d", s+1, j), c, planes, stride)
		}
	}
	if b.pv.err != nil {
		return nil, b.pv.err
	}
	f.outDim = c
	f.work.New = func() any {
		wk := &resnetWork{col: make([]float32, f.col)}
		for i := range wk.bufs {
			wk.bufs[i] = make([]float32, f.act*resnetBatch)
		}
		return wk
	}
	return f, nil
}

// resnetBuilder plans a resnetForward's steps layer by layer from the
// parameters in pv: h and wd are the current activation's height and
// width.
type resnetBuilder struct {
	f     *resnetForward
	pv    paramValues
	h, wd int
}

// conv adds a convolution with its batch norm folded in, from buffer
// from to buffer to, on the current h x wd, and moves h x wd to its
// output.
func (b *resnetBuilder) conv(conv, bn string, in, out, k, stride, pad, groups int, relu bool, from, to int) {
	op := newConvOp(convForward, 1, in, b.h, b.wd, out, k, stride, pad, groups)
	wt := b.pv.value(conv+".weight", out*(in/groups)*k*k)
	g, bt := b.pv.value(bn+".weight", out), b.pv.value(bn+".bias", out)
	mean, variance := b.pv.value(bn+".running_mean", out), b.pv.value(bn+".running_var", out)
	if b.pv.err != nil {
		return
	}
	fw, fb := foldBN(wt, g, bt, mean, variance, out)
	f := b.f
	f.layers = append(f.layers, resnetStep{op: op, w: fw, b: fb, relu: relu, in: from, out: to})
	f.act = max(f.act, out*op.outH*op.outW)
	if !op.pointwise() {
		cols := op.outH * op.outW
		f.col = max(f.col, in*k*k*cols*imagesPerProduct(resnetBatch, cols))
	}
	b.h, b.wd = op.outH, op.outW
}

// stem adds the first convolution (7x7 stride 2 and a max pool for the
// ImageNet stem, else 3x3 and a copy), leaving its output in buffer 0.
// Buffer 0 holds each block's input (and output), 1-3 the branch, 4 the
// downsampled shortcut.
func (b *resnetBuilder) stem(enc EncoderSpec, channels int) {
	c := enc.Channels[0]
	if enc.Stem != "imagenet" {
		b.conv("encoder.conv1", "encoder.bn1", channels, c, 3, 1, 1, 1, true, 0, 1)
		b.f.layers = append(b.f.layers, resnetStep{op: nil, in: 1, out: 0}) // a copy
		return
	}
	b.conv("encoder.conv1", "encoder.bn1", channels, c, 7, 2, 3, 1, true, 0, 1)
	if b.pv.err != nil {
		return
	}
	pool := newConvOp(convForward, 1, c, b.h, b.wd, c, 3, 2, 1, 1)
	b.f.layers = append(b.f.layers, resnetStep{op: pool, pool: true, in: 1, out: 0})
	b.h, b.wd = pool.outH, pool.outW
}

// block adds residual block p (basic or bottleneck) from c channels,
// with its shortcut, and returns its output's channels.
func (b *resnetBuilder) block(enc EncoderSpec, p string, c, planes, stride int) int {
	inH, inW := b.h, b.wd
	var width int
	if enc.Block == "bottleneck" {
		mid := enc.bottleneckWidth(planes)
		width = planes * bottleneckExpansion
		b.conv(p+".conv1", p+".bn1", c, mid, 1, 1, 0, 1, true, 0, 1)
		b.conv(p+".conv2", p+".bn2", mid, mid, 3, stride, 1, max(enc.Groups, 1), true, 1, 2)
		b.conv(p+".conv3", p+".bn3", mid, width, 1, 1, 0, 1, false, 2, 3)
	} else {
		width = planes
		b.conv(p+".conv1", p+".bn1", c, width, 3, stride, 1, 1, true, 0, 1)
		b.conv(p+".conv2", p+".bn2", width, width, 3, 1, 1, 1, false, 1, 3)
	}
	short := 0
	if stride != 1 || c != width {
		oh, ow := b.h, b.wd
		b.h, b.wd = inH, inW
		b.conv(p+".downsample.0", p+".downsample.1", c, width, 1, stride, 0, 1, false, 0, 4)
		b.h, b.wd = oh, ow
		short = 4
	}
	// The block's output goes straight to buffer 0, the next block's
	// input: nothing reads this block's input any more.
	b.f.layers = append(b.f.layers, resnetStep{residue: true, branch: 3, in: short, out: 0})
	return width
}

// foldBN folds an evaluation-mode batch norm into the convolution before
// it: weights scaled by gamma/sqrt(var + eps), bias beta - mean · that.
// The frozen graph (convBN) folds with it too.
func foldBN(w, gamma, beta, mean, variance []float32, out int) (fw, fb []float32) {
	const eps = 1e-5
	fw, fb = make([]float32, len(w)), make([]float32, out)
	per := len(w) / out
	for o := range out {
		s := float64(gamma[o]) / math.Sqrt(float64(variance[o])+eps)
		for j := o * per; j < (o+1)*per; j++ {
			fw[j] = float32(float64(w[j]) * s)
		}
		fb[o] = float32(float64(beta[o]) - float64(mean[o])*s)
	}
	return fw, fb
}

// run computes the features of n images x into out (n*outDim values),
// resnetBatch images per worker at a time on GOMAXPROCS workers (fewer
// images a worker when there are too few to keep every worker busy).
func (f *resnetForward) run(x []float32, n int, out []float32) {
	size := f.c * f.size
	per := max(1, min(resnetBatch, n/max(1, runtime.GOMAXPROCS(0))))
	chunks := (n + per - 1) / per
	eachItem(chunks, func() (func(i int), func()) {
		wk := f.work.Get().(*resnetWork)
		return func(i int) {
				lo, hi := i*per, min(n, (i+1)*per)
				f.images(wk, x[lo*size:hi*size], hi-lo, out[lo*f.outDim:hi*f.outDim])
			},
			func() { f.work.Put(wk) }
	})
}

// eachItem calls, on GOMAXPROCS workers (fewer with fewer items), each
// worker's own item function for every item i < n, handing out items in
// order as workers come free; worker returns a worker's item function
// and what to call when it is done (returning its buffers).
func eachItem(n int, worker func() (item func(i int), done func())) {
	workers := max(1, min(runtime.GOMAXPROCS(0), n))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			item, done := worker()
			defer done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				item(i)
			}
		})
	}
	wg.Wait()
}

// images runs the steps on nb images (at most resnetBatch) and
// average-pools each one's last map. Activations are channel-major, [C,
// nb, H*W], so that image b's channel c is plane c*nb+b.
func (f *resnetForward) images(wk *resnetWork, imgs []float32, nb int, out []float32) {
	plane := f.size
	for b := range nb {
		for c := range f.c {
			copy(wk.bufs[0][(c*nb+b)*plane:][:plane], imgs[(b*f.c+c)*plane:][:plane])
		}
	}
	last := len(imgs)
	for _, st := range f.layers {
		in, dst := wk.bufs[st.in], wk.bufs[st.out]
		switch {
		case st.residue:
			vec.AddReLU(dst[:last], wk.bufs[st.branch][:last], in[:last])
		case st.op == nil: // a copy (the small stem's output to the first block's input)
			copy(dst[:last], in[:last])
		case st.pool:
			last = maxPoolPlanes(st.op, st.op.cin*nb, in, dst)
		default:
			last = f.conv(wk, st, nb, in, dst)
		}
	}
	cols := last / (f.outDim * nb)
	for b := range nb {
		for c := range f.outDim {
			out[b*f.outDim+c] = vec.Sum(wk.bufs[0][(c*nb+b)*cols:][:cols]) / float32(cols)
		}
	}
}

// conv is one folded convolution on nb channel-major images, as convOp's
// forward pass computes it; it returns the output's size. Images go
// through the product a few at a time, enough for about resnetColumns
// output columns: early layers (3,136 columns an image) one by one, so
// that the im2col matrix stays in cache, late ones (49) all together, so
// that their weights are streamed once for all of them.
func (f *resnetForward) conv(wk *resnetWork, st resnetStep, nb int, in, dst []float32) int {
	op := st.op
	rows, cols := op.cin*op.k*op.k, op.outH*op.outW
	plane := op.h * op.w
	wide := nb * cols
	og, rg := op.cout/op.groups, rows/op.groups
	y := dst[:op.cout*wide]
	// The bias goes in first and the products add to it (OpenBLAS would
	// otherwise clear y for beta 0, and the bias take a pass of its own).
	if len(st.b) != op.cout {
		clear(y)
	}
	for c, bc := range st.b {
		row := y[c*wide : (c+1)*wide]
		row[0] = bc
		for n := 1; n < len(row); n *= 2 {
			copy(row[n:], row[:n])
		}
	}
	per := imagesPerProduct(nb, cols)
	for b0 := 0; b0 < nb; b0 += per {
		k := min(per, nb-b0)
		col, ldc := in[b0*plane:], nb*plane // a 1x1 convolution's matrix is its input
		if !op.pointwise() {
			col, ldc = wk.col[:rows*k*cols], k*cols
			for b := range k {
				op.im2colStrided(in[(b0+b)*plane:], nb*plane, col[b*cols:], k*cols)
			}
		}
		for g := range op.groups {
			f.gemm.Sgemm(blas.NoTrans, blas.NoTrans, og, k*cols, rg, 1, st.w[g*og*rg:], rg, col[g*rg*ldc:], ldc, 1, y[g*og*wide+b0*cols:], wide)
		}
	}
	if st.relu {
		vec.AddConstReLU(y, 0)
	}
	return len(y)
}

// imagesPerProduct is how many of nb images one product of a convolution
// with cols output columns an image covers: enough for about
// resnetColumns columns.
func imagesPerProduct(nb, cols int) int {
	return max(1, min(nb, (resnetColumns+cols-1)/cols))
}

// maxPoolPlanes is MaxPool2d with op's kernel, stride and padding on
// planes maps of op's size laid end to end; it returns the output's size.
// Each output row takes the maximum of its window's input rows first (a
// vector pass), then of each window's columns in that row.
func maxPoolPlanes(op *convOp, planes int, in, out []float32) int {
	rowMax := make([]float32, op.w)
	for c := range planes {
		plane := in[c*op.h*op.w : (c+1)*op.h*op.w]
		o := out[c*op.outH*op.outW:][:op.outH*op.outW]
		for oy := range op.outH {
			y0, y1 := max(oy*op.stride-op.pad, 0), min(oy*op.stride-op.pad+op.k, op.h)
			dst := o[oy*op.outW:][:op.outW]
			if y0 >= y1 { // a window wholly in the padding
				for ox := range dst {
					dst[ox] = float32(math.Inf(-1))
				}
				continue
			}
			copy(rowMax, plane[y0*op.w:(y0+1)*op.w])
			for y := y0 + 1; y < y1; y++ {
				vec.MaxInto(rowMax, plane[y*op.w:(y+1)*op.w])
			}
			for ox := range dst {
				x0, x1 := max(ox*op.stride-op.pad, 0), min(ox*op.stride-op.pad+op.k, op.w)
				best := float32(math.Inf(-1))
				for _, v := range rowMax[x0:max(x0, x1)] {
					best = max(best, v)
				}
				dst[ox] = best
			}
		}
	}
	return planes * op.outH * op.outW
}
