//go:build goexperiment.simd && amd64

package vec

import "simd/archsimd"

func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		addConstReLUImpl, addReLUImpl, maxIntoImpl = addConstReLUSIMD, addReLUSIMD, maxIntoSIMD
	}
}

func addConstReLUSIMD(dst []float32, c float32) {
	vc := archsimd.BroadcastFloat32x8(c)
	var zero archsimd.Float32x8
	n := len(dst)
	i := 0
	for ; i+8 <= n; i += 8 {
		archsimd.LoadFloat32x8Slice(dst[i:]).Add(vc).Max(zero).StoreSlice(dst[i:])
	}
	if i < n {
		archsimd.LoadFloat32x8SlicePart(dst[i:]).Add(vc).Max(zero).StoreSlicePart(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
}

func addReLUSIMD(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	var zero archsimd.Float32x8
	n := len(dst)
	i := 0
	for ; i+8 <= n; i += 8 {
		archsimd.LoadFloat32x8Slice(a[i:]).Add(archsimd.LoadFloat32x8Slice(b[i:])).Max(zero).StoreSlice(dst[i:])
	}
	if i < n {
		archsimd.LoadFloat32x8SlicePart(a[i:]).Add(archsimd.LoadFloat32x8SlicePart(b[i:])).Max(zero).StoreSlicePart(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
}

func maxIntoSIMD(dst, x []float32) {
	x = x[:len(dst)]
	n := len(dst)
	i := 0
	for ; i+8 <= n; i += 8 {
		archsimd.LoadFloat32x8Slice(dst[i:]).Max(archsimd.LoadFloat32x8Slice(x[i:])).StoreSlice(dst[i:])
	}
	if i < n {
		archsimd.LoadFloat32x8SlicePart(dst[i:]).Max(archsimd.LoadFloat32x8SlicePart(x[i:])).StoreSlicePart(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
}
