package train

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/gatepipe/gatepipe/internal/vec"
	"github.com/gatepipe/gatepipe/train/cblas"
	"gonum.org/v1/gonum/blas"
)

// vitForward is a frozen ViT's feature pass written directly over the
// matrix product, without a graph: the same layers, names and numerics
// as vitTokens and vitFeatures (which training uses and which parity
// tests hold to PyTorch's), for frozen features only. A graph's tape
// keeps every intermediate value of a chunk of images (gigabytes for a
// ViT-B); this keeps a few images' activations per worker, and each
// worker runs its own images with one-thread products, so the workers
// never wait on each other.
type vitForward struct {
	e                    EncoderSpec
	c, size, patch, grid int // input channels, image side, patch side, patches per side
	n, t, d, heads, mlp  int // patches, tokens, width, heads, MLP width
	pre                  int // tokens before the patches
	eps                  float64
	gemm                 cblas.Sgemmer
	outDim               int
	patchW, posW, clsW   []float32
	blocks               []vitLayer
	normW, normB         []float32 // final norm (token pooling) or fc_norm (avg)
	preW, preB           []float32 // norm_pre, when NormPre
	hidden               []denseLayer
	patchBias            []float32
	widest               int       // the widest of D and the hidden layers
	work                 sync.Pool // *vitWork
	activation           func([]float32)
}

type vitLayer struct {
	n1w, n1b, qkvW, qkvB, projW, projB, ls1 []float32
	n2w, n2b, fc1W, fc1B, fc2W, fc2B, ls2   []float32
}

type denseLayer struct {
	w, b    []float32
	in, out int
}

// vitWork is one worker's buffers for a group of up to images images.
type vitWork struct {
	images                                        int
	patches, x, h, qkv, s, o, m, tmp, cls, pooled []float32
	rstd                                          []float32 // a layer norm's per-row statistics
}

// canRunViTDirect reports whether the direct pass computes enc's features
// for images of shape: a ViT without a stem.
func canRunViTDirect(enc EncoderSpec, shape []int) bool {
	return enc.Arch == "vit" && len(shape) == 3 && shape[1] == shape[2] &&
		(len(enc.InputShape) == 0 || slices.Equal(enc.InputShape, shape)) && enc.checkViT(shape) == nil
}

// newViTForward reads the ViT's parameters (w where it names one, else
// the initialisation of ps) for images of shape [C, S, S].
func newViTForward(enc EncoderSpec, ps []*param, w Weights, shape []int) (*vitForward, error) {
	pv := &paramValues{arch: "vit", byName: map[string]*param{}, w: w}
	for _, p := range ps {
		pv.byName[p.name] = p
	}
	val := pv.value
	ratio := enc.MLPRatio
	if ratio <= 0 {
		ratio = 4
	}
	f := &vitForward{e: enc, c: shape[0], size: shape[1], patch: enc.Patch, d: enc.Dim, heads: enc.Heads,
		eps: enc.lnEps(), pre: enc.prefixTokens(), gemm: cblas.Serial()}
	f.grid = f.size / f.patch
	f.n = f.grid * f.grid
	f.t = f.n + f.pre
	f.mlp = f.d * ratio
	d, k := f.d, f.c*f.patch*f.patch
	f.patchW = val("encoder.patch_embed.proj.weight", d*k)
	if !enc.NoPatchBias {
		f.patchBias = val("encoder.patch_embed.proj.bias", d)
	}
	f.posW = val("encoder.pos_embed", enc.posEmbedTokens(shape)*d)
	if !enc.NoClassToken {
		f.clsW = val("encoder.cls_token", d)
	}
	if enc.NormPre {
		f.preW, f.preB = val("encoder.norm_pre.weight", d), val("encoder.norm_pre.bias", d)
	}
	for i := range enc.Depth {
		f.blocks = append(f.blocks, pv.vitBlock(enc, fmt.Sprintf("encoder.blocks.%d", i), d, f.mlp))
	}
	norm := "encoder.norm"
	if enc.Pool == "avg" {
		norm = "encoder.fc_norm"
	}
	f.normW, f.normB = val(norm+".weight", d), val(norm+".bias", d)
	f.outDim = d
	f.widest = d
	for i, out := range enc.Hidden {
		f.widest = max(f.widest, out)
		name := fmt.Sprintf("encoder.fcs.%d", i)
		f.hidden = append(f.hidden, denseLayer{w: val(name+".weight", out*f.outDim), b: val(name+".bias", out), in: f.outDim, out: out})
		f.outDim = out
	}
	var err error
	if f.activation, err = vitActivation(enc.Act); err != nil {
		return nil, err
	}
	if pv.err != nil {
		return nil, pv.err
	}
	return f, nil
}

// paramValues looks up a network's parameters by name: w's values where
// it names one, else the initialisation. err is the first that is not
// declared or has the wrong size.
type paramValues struct {
	arch   string
	byName map[string]*param
	w      Weights
	err    error
}

// value is parameter name's values, which must be n long (zeros, and an
// error kept, where it is not declared).
func (pv *paramValues) value(name string, n int) []float32 {
	p, ok := pv.byName[name]
	if !ok {
		if pv.err == nil {
			pv.err = fmt.Errorf("%s: parameter %s is not declared", pv.arch, name)
		}
		return make([]float32, n)
	}
	v := p.init
	if wv, ok := pv.w[name]; ok {
		v = wv
	}
	if len(v) != n && pv.err == nil {
		pv.err = fmt.Errorf("%s: parameter %s has %d values, the layer needs %d", pv.arch, name, len(v), n)
	}
	return v
}

// vitBlock reads transformer block p's parameters (width d, MLP width
// mlp; layer scales where enc has them).
func (pv *paramValues) vitBlock(enc EncoderSpec, p string, d, mlp int) vitLayer {
	val := pv.value
	ls := func(name string) []float32 {
		if !enc.LayerScale {
			return nil
		}
		return val(name, d)
	}
	return vitLayer{
		n1w: val(p+".norm1.weight", d), n1b: val(p+".norm1.bias", d),
		qkvW: val(p+".attn.qkv.weight", 3*d*d), qkvB: val(p+".attn.qkv.bias", 3*d),
		projW: val(p+".attn.proj.weight", d*d), projB: val(p+".attn.proj.bias", d), ls1: ls(p + ".ls1.gamma"),
		n2w: val(p+".norm2.weight", d), n2b: val(p+".norm2.bias", d),
		fc1W: val(p+".mlp.fc1.weight", mlp*d), fc1B: val(p+".mlp.fc1.bias", mlp),
		fc2W: val(p+".mlp.fc2.weight", d*mlp), fc2B: val(p+".mlp.fc2.bias", d), ls2: ls(p + ".ls2.gamma"),
	}
}

// vitActivation is the MLP's activation, applied in place.
func vitActivation(act string) (func([]float32), error) {
	switch act {
	case GELUErf, "":
		return vec.GELUInPlace, nil
	case GELUTanh:
		return geluTanhInPlace, nil
	case QuickGELU:
		return quickGELUInPlace, nil
	}
	return nil, fmt.Errorf("vit: activation %q is not one of %v", act, Activations)
}

// vitGroup is the most images a worker takes through each layer
// together: the products then have up to vitGroup*T rows (T is 197 for a
// ViT-B at 224 px). OpenBLAS packs a product's weights once per call, and
// a ViT-B's 28 MB of weights a block come from memory, not cache, so the
// fewer groups the fewer times they are packed: with 16 images a group
// instead of 4 the pass ran 4-15% faster at one thread, in every one of
// six alternating rounds. A worker's buffers grow with its group (about
// 107 MB at 16 images), so smaller batches and more workers use smaller
// groups and buffers.
const vitGroup = 16

// newWork allocates a worker's buffers for groups of up to images images.
func (f *vitForward) newWork(images int) *vitWork {
	d, k, rows := f.d, f.c*f.patch*f.patch, images*f.t
	return &vitWork{images: images, patches: make([]float32, f.n*k), x: make([]float32, rows*d), h: make([]float32, rows*d),
		qkv: make([]float32, rows*3*d), s: make([]float32, f.t*f.t), o: make([]float32, rows*d),
		m: make([]float32, rows*f.mlp), tmp: make([]float32, max(rows*d, f.widest)), cls: make([]float32, images*d),
		pooled: make([]float32, max(d, f.widest)), rstd: make([]float32, rows)}
}

// run computes the features of n images x (each C*S*S values) into out
// (n*outDim values): groups of vitGroup images, one group per worker at a
// time on GOMAXPROCS workers.
func (f *vitForward) run(x []float32, n int, out []float32) {
	size := f.c * f.size * f.size
	// Smaller groups when there are too few images to keep every worker
	// busy with full ones.
	per := max(1, min(vitGroup, (n+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
	eachItem((n+per-1)/per, func() (func(g int), func()) {
		wk, _ := f.work.Get().(*vitWork)
		if wk == nil || wk.images < per {
			wk = f.newWork(per)
		}
		return func(g int) {
				lo, hi := g*per, min(n, (g+1)*per)
				f.group(wk, x[lo*size:hi*size], hi-lo, out[lo*f.outDim:hi*f.outDim])
			},
			func() { f.work.Put(wk) }
	})
}

// linear computes dst[rows, out] = src[rows, in] W^T + b (W [out, in]).
func (f *vitForward) linear(dst, src []float32, rows, in, out int, w, b []float32) {
	for r := range rows {
		copy(dst[r*out:(r+1)*out], b)
	}
	f.gemm.Sgemm(blas.NoTrans, blas.Trans, rows, out, in, 1, src, in, w, in, 1, dst, out)
}

// embed writes one image's tokens into x [T, D]: patch embeddings, the
// class token, position embeddings and norm_pre.
func (f *vitForward) embed(wk *vitWork, img, x []float32) {
	d, t := f.d, f.t
	p, g, k := f.patch, f.grid, f.c*f.patch*f.patch
	// Patches as rows in the convolution weight's (c, y, x) order.
	for gy := range g {
		for gx := range g {
			row := wk.patches[(gy*g+gx)*k:]
			for c := range f.c {
				for y := range p {
					src := img[c*f.size*f.size+(gy*p+y)*f.size+gx*p:]
					copy(row[(c*p+y)*p:(c*p+y+1)*p], src[:p])
				}
			}
		}
	}
	emb := x[f.pre*d:]
	if f.patchBias != nil {
		f.linear(emb, wk.patches, f.n, k, d, f.patchW, f.patchBias)
	} else {
		clear(emb[:f.n*d])
		f.gemm.Sgemm(blas.NoTrans, blas.Trans, f.n, d, k, 1, wk.patches, k, f.patchW, k, 0, emb, d)
	}
	if f.e.NoEmbedClass {
		addInto(emb[:f.n*d], f.posW[:f.n*d])
	}
	if f.pre > 0 {
		copy(x[:d], f.clsW)
	}
	if !f.e.NoEmbedClass {
		addInto(x[:t*d], f.posW[:t*d])
	}
	if f.preW != nil {
		layerNormRows(wk, x, x, t, d, f.preW, f.preB, f.eps)
	}
}

// group computes the features of m images into out.
func (f *vitForward) group(wk *vitWork, imgs []float32, m int, out []float32) {
	d, t := f.d, f.t
	size := f.c * f.size * f.size
	for i := range m {
		f.embed(wk, imgs[i*size:(i+1)*size], wk.x[i*t*d:(i+1)*t*d])
	}
	for i := range f.blocks {
		// Token pooling reads only the class token (row 0) of the last
		// block: its queries, projection and MLP need no other row
		// (every row is still a key and a value).
		f.block(wk, &f.blocks[i], m, i == len(f.blocks)-1 && f.e.Pool != "avg")
	}
	for i := range m {
		pooled := wk.pooled[:d]
		if f.e.Pool == "avg" {
			clear(pooled)
			x := wk.x[i*t*d:]
			for r := f.pre; r < t; r++ {
				addInto(pooled, x[r*d:(r+1)*d])
			}
			for j := range pooled {
				pooled[j] /= float32(t - f.pre)
			}
			layerNormRows(wk, pooled, pooled, 1, d, f.normW, f.normB, f.eps)
		} else {
			layerNormRows(wk, pooled, wk.cls[i*d:(i+1)*d], 1, d, f.normW, f.normB, f.eps) // the class token
		}
		cur := pooled
		for _, l := range f.hidden {
			next := wk.tmp[:l.out]
			f.linear(next, cur, 1, l.in, l.out, l.w, l.b)
			for j, v := range next {
				next[j] = max(v, 0)
			}
			copy(wk.pooled[:l.out], next)
			cur = wk.pooled[:l.out]
		}
		copy(out[i*f.outDim:(i+1)*f.outDim], cur)
	}
}

// block is one pre-norm transformer block on the m images' tokens in
// wk.x, in place; with clsOnly, on their class tokens only, gathered in
// wk.cls (every token is still a key and a value).
func (f *vitForward) block(wk *vitWork, b *vitLayer, m int, clsOnly bool) {
	d, t, dh := f.d, f.t, f.d/f.heads
	rows := m * t
	layerNormRows(wk, wk.h, wk.x, rows, d, b.n1w, b.n1b, f.eps)
	f.linear(wk.qkv, wk.h, rows, d, 3*d, b.qkvW, b.qkvB)
	scale := float32(1 / math.Sqrt(float64(dh)))
	queries := t
	if clsOnly {
		queries = 1
	}
	for img := range m {
		qkv, o := wk.qkv[img*t*3*d:], wk.o[img*queries*d:]
		for hd := range f.heads {
			q, kk, v := qkv[hd*dh:], qkv[d+hd*dh:], qkv[2*d+hd*dh:]
			f.gemm.Sgemm(blas.NoTrans, blas.Trans, queries, t, dh, 1, q, 3*d, kk, 3*d, 0, wk.s, t)
			vec.SoftmaxRows(wk.s[:queries*t], t, scale)
			f.gemm.Sgemm(blas.NoTrans, blas.NoTrans, queries, dh, t, 1, wk.s, t, v, 3*d, 0, o[hd*dh:], d)
		}
	}
	x := wk.x[:rows*d]
	if clsOnly {
		x, rows = wk.cls[:m*d], m
		for img := range m {
			copy(x[img*d:(img+1)*d], wk.x[img*t*d:])
		}
	}
	tmp := wk.tmp[:rows*d]
	f.linear(tmp, wk.o, rows, d, d, b.projW, b.projB)
	residual(x, tmp, b.ls1)
	layerNormRows(wk, wk.h, x, rows, d, b.n2w, b.n2b, f.eps)
	f.linear(wk.m, wk.h, rows, d, f.mlp, b.fc1W, b.fc1B)
	f.activation(wk.m[:rows*f.mlp])
	f.linear(tmp, wk.m, rows, f.mlp, d, b.fc2W, b.fc2B)
	residual(x, tmp, b.ls2)
}

// residual adds h (scaled per channel by gamma, when LayerScale) to x.
func residual(x, h, gamma []float32) {
	if gamma == nil {
		addInto(x, h)
		return
	}
	d := len(gamma)
	for i := range x {
		x[i] += h[i] * gamma[i%d]
	}
}

func addInto(dst, src []float32) { vec.Add(dst, src) }

// layerNormRows normalises rows of src into dst (which may be src) as
// torch.nn.LayerNorm does, with vec.LayerNorm's float32 statistics (the
// graph's layerNormOp keeps float64 ones; TestViTDirectFeaturesMatchTheGraph
// holds the two within 1e-5).
func layerNormRows(wk *vitWork, dst, src []float32, rows, d int, gamma, beta []float32, eps float64) {
	vec.LayerNorm(dst[:rows*d], dst[:rows*d], wk.rstd[:rows], src[:rows*d], gamma, beta, rows, d, eps)
}

func geluTanhInPlace(x []float32) {
	c := float32(math.Sqrt(2 / math.Pi))
	for i, v := range x {
		inner := (v + v*v*v*0.044715) * c
		x[i] = v * (float32(math.Tanh(float64(inner))) + 1) * 0.5
	}
}

func quickGELUInPlace(x []float32) {
	for i, v := range x {
		x[i] = v * float32(1/(1+math.Exp(-float64(v*1.702))))
	}
}
