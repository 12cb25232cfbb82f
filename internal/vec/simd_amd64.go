//go:build goexperiment.simd && amd64

package vec

import "simd/archsimd"

func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		axpyImpl, dotImpl, axpyDotImpl, adamwImpl = axpySIMD, dotSIMD, axpyDotSIMD, adamwSIMD
		sumImpl, addImpl, addConstImpl, sumOfImpl = sumSIMD, addSIMD, addConstSIMD, sumOfSIMD
		accelerated = true
	}
}

// The kernels keep every scalar out of their vector loops (tails use
// masked partial loads and stores) and end with VZEROUPPER before any
// scalar code. Go emits legacy SSE for scalar float32 work; an SSE
// instruction while the upper halves of the YMM registers are dirty costs a
// state transition, measured here at about 110 ns per call before this
// was done.

func axpySIMD(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	va := archsimd.BroadcastFloat32x8(a)
	n := len(dst)
	i := 0
	for ; i+16 <= n; i += 16 {
		d0 := archsimd.LoadFloat32x8Slice(dst[i:])
		d1 := archsimd.LoadFloat32x8Slice(dst[i+8:])
		archsimd.LoadFloat32x8Slice(x[i:]).MulAdd(va, d0).StoreSlice(dst[i:])
		archsimd.LoadFloat32x8Slice(x[i+8:]).MulAdd(va, d1).StoreSlice(dst[i+8:])
	}
	for ; i < n; i += 8 {
		d := archsimd.LoadFloat32x8SlicePart(dst[i:])
		archsimd.LoadFloat32x8SlicePart(x[i:]).MulAdd(va, d).StoreSlicePart(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
}

func dotSIMD(x, y []float32) float32 {
	y = y[:len(x)]
	var acc0, acc1 archsimd.Float32x8
	n := len(x)
	i := 0
	for ; i+16 <= n; i += 16 {
		acc0 = archsimd.LoadFloat32x8Slice(x[i:]).MulAdd(archsimd.LoadFloat32x8Slice(y[i:]), acc0)
		acc1 = archsimd.LoadFloat32x8Slice(x[i+8:]).MulAdd(archsimd.LoadFloat32x8Slice(y[i+8:]), acc1)
	}
	for ; i < n; i += 8 {
		acc0 = archsimd.LoadFloat32x8SlicePart(x[i:]).MulAdd(archsimd.LoadFloat32x8SlicePart(y[i:]), acc0)
	}
	var b [8]float32
	acc0.Add(acc1).Store(&b)
	archsimd.ClearAVXUpperBits()
	return ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]))
}

func axpyDotSIMD(dst []float32, a float32, x, y []float32) float32 {
	x, y = x[:len(dst)], y[:len(dst)]
	va := archsimd.BroadcastFloat32x8(a)
	var acc archsimd.Float32x8
	n := len(dst)
	for i := 0; i < n; i += 8 {
		xv := archsimd.LoadFloat32x8SlicePart(x[i:])
		xv.MulAdd(va, archsimd.LoadFloat32x8SlicePart(dst[i:])).StoreSlicePart(dst[i:])
		acc = xv.MulAdd(archsimd.LoadFloat32x8SlicePart(y[i:]), acc)
	}
	var b [8]float32
	acc.Store(&b)
	archsimd.ClearAVXUpperBits()
	return ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]))
}

// adamwConsts are the broadcast constants of one AdamW step, built before
// the loop so no scalar is live inside it.
func adamwSIMD(p, g, m, v []float32, decay, stepSize, invBC2, b1, b2, eps float32) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	vb1, vb1c := archsimd.BroadcastFloat32x8(b1), archsimd.BroadcastFloat32x8(1-b1)
	vb2, vb2c := archsimd.BroadcastFloat32x8(b2), archsimd.BroadcastFloat32x8(1-b2)
	vdecay, vstep := archsimd.BroadcastFloat32x8(decay), archsimd.BroadcastFloat32x8(stepSize)
	vinv, veps := archsimd.BroadcastFloat32x8(invBC2), archsimd.BroadcastFloat32x8(eps)
	step := func(pp, gp, mp, vp *[8]float32) {
		gv := archsimd.LoadFloat32x8(gp)
		mv := archsimd.LoadFloat32x8(mp).Mul(vb1).Add(gv.Mul(vb1c))
		vv := archsimd.LoadFloat32x8(vp).Mul(vb2).Add(gv.Mul(gv).Mul(vb2c))
		mv.Store(mp)
		vv.Store(vp)
		denom := vv.Sqrt().MulAdd(vinv, veps)
		archsimd.LoadFloat32x8(pp).Mul(vdecay).Sub(vstep.Mul(mv).Div(denom)).Store(pp)
	}
	n := len(p)
	full := n &^ 7
	for i := 0; i < full; i += 8 {
		step((*[8]float32)(p[i:i+8]), (*[8]float32)(g[i:i+8]), (*[8]float32)(m[i:i+8]), (*[8]float32)(v[i:i+8]))
	}
	if full < n {
		// The tail goes through zero-padded copies (v = 0 gives a zero
		// step, never 0/0).
		var tp, tg, tm, tv [8]float32
		copy(tp[:], p[full:])
		copy(tg[:], g[full:])
		copy(tm[:], m[full:])
		copy(tv[:], v[full:])
		step(&tp, &tg, &tm, &tv)
		copy(p[full:], tp[:])
		copy(m[full:], tm[:])
		copy(v[full:], tv[:])
	}
	archsimd.ClearAVXUpperBits()
}

func sumSIMD(x []float32) float32 {
	var acc0, acc1 archsimd.Float32x8
	n := len(x)
	i := 0
	for ; i+16 <= n; i += 16 {
		acc0 = acc0.Add(archsimd.LoadFloat32x8Slice(x[i:]))
		acc1 = acc1.Add(archsimd.LoadFloat32x8Slice(x[i+8:]))
	}
	for ; i < n; i += 8 {
		acc0 = acc0.Add(archsimd.LoadFloat32x8SlicePart(x[i:]))
	}
	var b [8]float32
	acc0.Add(acc1).Store(&b)
	archsimd.ClearAVXUpperBits()
	return ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]))
}

func addSIMD(dst, x []float32) {
	x = x[:len(dst)]
	n := len(dst)
	i := 0
	for ; i+8 <= n; i += 8 {
		archsimd.LoadFloat32x8Slice(dst[i:]).Add(archsimd.LoadFloat32x8Slice(x[i:])).StoreSlice(dst[i:])
	}
	if i < n {
		archsimd.LoadFloat32x8SlicePart(dst[i:]).Add(archsimd.LoadFloat32x8SlicePart(x[i:])).StoreSlicePart(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
}

// sumOfSIMD keeps each 8-value block's running sum in a register across
// all sources and stores it once, where adding one source at a time
// into dst would load and store every block once per source.
func sumOfSIMD(dst []float32, srcs [][]float32) {
	n := len(dst)
	for _, x := range srcs {
		_ = x[:n]
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		acc := archsimd.LoadFloat32x8Slice(srcs[0][i:])
		for _, x := range srcs[1:] {
			acc = acc.Add(archsimd.LoadFloat32x8Slice(x[i:]))
		}
		acc.StoreSlice(dst[i:])
	}
	if i < n {
		acc := archsimd.LoadFloat32x8SlicePart(srcs[0][i:n])
		for _, x := range srcs[1:] {
			acc = acc.Add(archsimd.LoadFloat32x8SlicePart(x[i:n]))
		}
		acc.StoreSlicePart(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
}

func addConstSIMD(dst []float32, c float32) {
	vc := archsimd.BroadcastFloat32x8(c)
	n := len(dst)
	i := 0
	for ; i+8 <= n; i += 8 {
		archsimd.LoadFloat32x8Slice(dst[i:]).Add(vc).StoreSlice(dst[i:])
	}
	if i < n {
		archsimd.LoadFloat32x8SlicePart(dst[i:]).Add(vc).StoreSlicePart(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
}
