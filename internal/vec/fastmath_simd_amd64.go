//go:build goexperiment.simd && amd64

package vec

import "simd/archsimd"

func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		geluInPlaceImpl, softmaxRowsImpl = geluInPlaceSIMD, softmaxRowsSIMD
	}
}

func erfSIMD(x archsimd.Float32x8) archsimd.Float32x8 {
	x = x.Max(archsimd.BroadcastFloat32x8(-4)).Min(archsimd.BroadcastFloat32x8(4))
	x2 := x.Mul(x)
	p := archsimd.BroadcastFloat32x8(erfN13).MulAdd(x2, archsimd.BroadcastFloat32x8(erfN11))
	p = p.MulAdd(x2, archsimd.BroadcastFloat32x8(erfN9))
	p = p.MulAdd(x2, archsimd.BroadcastFloat32x8(erfN7))
	p = p.MulAdd(x2, archsimd.BroadcastFloat32x8(erfN5))
	p = p.MulAdd(x2, archsimd.BroadcastFloat32x8(erfN3))
	p = p.MulAdd(x2, archsimd.BroadcastFloat32x8(erfN1))
	q := archsimd.BroadcastFloat32x8(erfD8).MulAdd(x2, archsimd.BroadcastFloat32x8(erfD6))
	q = q.MulAdd(x2, archsimd.BroadcastFloat32x8(erfD4))
	q = q.MulAdd(x2, archsimd.BroadcastFloat32x8(erfD2))
	q = q.MulAdd(x2, archsimd.BroadcastFloat32x8(erfD0))
	return x.Mul(p).Div(q)
}

func geluInPlaceSIMD(x []float32) {
	half := archsimd.BroadcastFloat32x8(0.5)
	one := archsimd.BroadcastFloat32x8(1)
	is2 := archsimd.BroadcastFloat32x8(invSqrt2)
	n := len(x)
	i := 0
	for ; i+8 <= n; i += 8 {
		v := archsimd.LoadFloat32x8Slice(x[i:])
		v.Mul(half).Mul(erfSIMD(v.Mul(is2)).Add(one)).StoreSlice(x[i:])
	}
	if i < n {
		v := archsimd.LoadFloat32x8SlicePart(x[i:])
		v.Mul(half).Mul(erfSIMD(v.Mul(is2)).Add(one)).StoreSlicePart(x[i:])
	}
	archsimd.ClearAVXUpperBits()
}

var (
	lanes            = [8]int32{0, 1, 2, 3, 4, 5, 6, 7}
	rot4, rot2, rot1 = [8]uint32{4, 5, 6, 7, 0, 1, 2, 3}, [8]uint32{2, 3, 0, 1, 6, 7, 4, 5}, [8]uint32{1, 0, 3, 2, 5, 4, 7, 6}
)

// softmaxRowsSIMD: the row's maximum and sum are reduced across lanes by
// three permutes each, so no scalar runs inside the loop; a row's last
// values are read once more by an overlapping load for the maximum (a
// maximum may count an element twice) and masked for the sum.
func softmaxRowsSIMD(x []float32, n int, scale float32) {
	if n < 8 {
		softmaxRowsGeneric(x, n, scale)
		return
	}
	vs := archsimd.BroadcastFloat32x8(scale)
	one := archsimd.BroadcastFloat32x8(1)
	r4, r2, r1 := archsimd.LoadUint32x8Slice(rot4[:]), archsimd.LoadUint32x8Slice(rot2[:]), archsimd.LoadUint32x8Slice(rot1[:])
	full := n - n%8
	tail := archsimd.LoadInt32x8Slice(lanes[:]).Less(archsimd.BroadcastInt32x8(int32(n % 8)))
	for off := 0; off+n <= len(x); off += n {
		row := x[off : off+n]
		m := archsimd.LoadFloat32x8Slice(row[n-8:]).Mul(vs)
		for i := 0; i < full; i += 8 {
			m = m.Max(archsimd.LoadFloat32x8Slice(row[i:]).Mul(vs))
		}
		m = m.Max(m.Permute(r4))
		m = m.Max(m.Permute(r2))
		m = m.Max(m.Permute(r1))
		var sum archsimd.Float32x8
		for i := 0; i < full; i += 8 {
			e := expNeg(archsimd.LoadFloat32x8Slice(row[i:]).Mul(vs).Sub(m))
			e.StoreSlice(row[i:])
			sum = sum.Add(e)
		}
		if full < n {
			e := expNeg(archsimd.LoadFloat32x8SlicePart(row[full:]).Mul(vs).Sub(m)).Masked(tail)
			e.StoreSlicePart(row[full:])
			sum = sum.Add(e)
		}
		sum = sum.Add(sum.Permute(r4))
		sum = sum.Add(sum.Permute(r2))
		sum = sum.Add(sum.Permute(r1))
		inv := one.Div(sum)
		for i := 0; i < full; i += 8 {
			archsimd.LoadFloat32x8Slice(row[i:]).Mul(inv).StoreSlice(row[i:])
		}
		if full < n {
			archsimd.LoadFloat32x8SlicePart(row[full:]).Mul(inv).StoreSlicePart(row[full:])
		}
	}
	archsimd.ClearAVXUpperBits()
}
