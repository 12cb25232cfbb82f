//go:build goexperiment.simd && amd64

package vec

import "simd/archsimd"

func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		geluImpl = geluSIMD
	}
}

// expNeg computes exp(x) for x <= 0 (clamped at -87, where float32
// underflows): x = n*ln2 + r with |r| <= ln2/2, exp(r) by the Cephes expf
// polynomial, 2^n by building the float's exponent bits.
func expNeg(x archsimd.Float32x8) archsimd.Float32x8 {
	x = x.Max(archsimd.BroadcastFloat32x8(-87))
	n := x.Mul(archsimd.BroadcastFloat32x8(1.44269504088896341)).RoundToEven()
	r := n.MulAdd(archsimd.BroadcastFloat32x8(-0.693359375), x)
	r = n.MulAdd(archsimd.BroadcastFloat32x8(2.12194440e-4), r)
	p := archsimd.BroadcastFloat32x8(1.9875691500e-4)
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(1.3981999507e-3))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(8.3334519073e-3))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(4.1665795894e-2))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(1.6666665459e-1))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(5.0000001201e-1))
	p = p.MulAdd(r.Mul(r), r).Add(archsimd.BroadcastFloat32x8(1))
	bits := n.ConvertToInt32().Add(archsimd.BroadcastInt32x8(127)).ShiftAllLeft(23)
	return p.Mul(bits.AsFloat32x8())
}

func geluSIMD(a, d, z []float32) {
	a, d = a[:len(z)], d[:len(z)]
	half := archsimd.BroadcastFloat32x8(0.5)
	one := archsimd.BroadcastFloat32x8(1)
	zero := archsimd.Float32x8{}
	for i := 0; i < len(z); i += 8 {
		zv := archsimd.LoadFloat32x8SlicePart(z[i:])
		e := expNeg(zv.Mul(zv).Mul(archsimd.BroadcastFloat32x8(-0.5)))
		au := zv.Mul(archsimd.BroadcastFloat32x8(invSqrt2))
		au = au.Max(zero.Sub(au))
		t := one.Div(au.MulAdd(archsimd.BroadcastFloat32x8(erfP), one))
		poly := archsimd.BroadcastFloat32x8(erfA5)
		poly = poly.MulAdd(t, archsimd.BroadcastFloat32x8(erfA4))
		poly = poly.MulAdd(t, archsimd.BroadcastFloat32x8(erfA3))
		poly = poly.MulAdd(t, archsimd.BroadcastFloat32x8(erfA2))
		poly = poly.MulAdd(t, archsimd.BroadcastFloat32x8(erfA1))
		hq := poly.Mul(t).Mul(e).Mul(half) // (1 - erf(|u|)) / 2
		cdf := hq.Merge(one.Sub(hq), zv.Less(zero))
		zv.Mul(cdf).StoreSlicePart(a[i:])
		zv.Mul(e).MulAdd(archsimd.BroadcastFloat32x8(invSqrt2Pi), cdf).StoreSlicePart(d[i:])
	}
	archsimd.ClearAVXUpperBits()
}
