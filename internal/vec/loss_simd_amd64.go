//go:build goexperiment.simd && amd64

package vec

import "simd/archsimd"

func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		wseImpl = wseSIMD
	}
}

func wseSIMD(p, y, w, dp []float32, scale float32) float32 {
	y, w = y[:len(p)], w[:len(p)]
	grad := dp != nil
	if grad {
		dp = dp[:len(p)]
	}
	vs := archsimd.BroadcastFloat32x8(scale)
	var acc archsimd.Float32x8
	for c := 0; c < len(p); c += 8 {
		d := archsimd.LoadFloat32x8SlicePart(p[c:]).Sub(archsimd.LoadFloat32x8SlicePart(y[c:]))
		wd := archsimd.LoadFloat32x8SlicePart(w[c:]).Mul(d)
		acc = wd.MulAdd(d, acc)
		if grad {
			wd.Mul(vs).StoreSlicePart(dp[c:])
		}
	}
	var b [8]float32
	acc.Store(&b)
	archsimd.ClearAVXUpperBits()
	return ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]))
}
