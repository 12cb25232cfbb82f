//go:build goexperiment.simd && amd64

package train

import "simd/archsimd"

func init() {
	if archsimd.X86.AVX2() {
		pool2Row = pool2RowSIMD
	}
}

var (
	// poolLanes is each lane's window top-left offset (2 x window) in the
	// order SelectFromPairGrouped leaves the windows: 0 1 4 5 2 3 6 7.
	poolLanes = [8]int32{0, 2, 8, 10, 4, 6, 12, 14}
	// poolOrder permutes that order back to 0..7.
	poolOrder = [8]uint32{0, 1, 4, 5, 2, 3, 6, 7}
)

// pool2RowSIMD is pool2RowGeneric eight windows at a time (AVX2): the even
// and odd columns of 16 inputs per row are split with VSHUFPS, the four
// window candidates compared with strict greater-than in row-major order
// (so ties keep the first), and the maximum's flat index blended along.
// A short last step uses partial loads and stores.
func pool2RowSIMD(r0, r1, dst []float32, at []int32, base, w, sink int32, relu bool) {
	n := len(dst)
	r0, r1, at = r0[:2*n], r1[:2*n], at[:n]
	lanes := archsimd.LoadInt32x8(&poolLanes)
	order := archsimd.LoadUint32x8(&poolOrder)
	one, wv, sinkv := archsimd.BroadcastInt32x8(1), archsimd.BroadcastInt32x8(w), archsimd.BroadcastInt32x8(sink)
	var zero archsimd.Float32x8
	for x := 0; x < n; x += 8 {
		k := min(8, n-x)
		lo, hi := 2*x, 2*x+2*k
		mid := min(lo+8, hi)
		a0, b0 := archsimd.LoadFloat32x8SlicePart(r0[lo:mid]), archsimd.LoadFloat32x8SlicePart(r1[lo:mid])
		a1, b1 := archsimd.LoadFloat32x8SlicePart(r0[mid:hi]), archsimd.LoadFloat32x8SlicePart(r1[mid:hi])
		aE, aO := a0.SelectFromPairGrouped(0, 2, 4, 6, a1), a0.SelectFromPairGrouped(1, 3, 5, 7, a1)
		bE, bO := b0.SelectFromPairGrouped(0, 2, 4, 6, b1), b0.SelectFromPairGrouped(1, 3, 5, 7, b1)
		tl := archsimd.BroadcastInt32x8(base + int32(lo)).Add(lanes)
		m, a := aE, tl
		if relu {
			mask := aE.Greater(zero)
			m, a = aE.Merge(zero, mask), tl.Merge(sinkv, mask)
		}
		mask := aO.Greater(m)
		m, a = aO.Merge(m, mask), tl.Add(one).Merge(a, mask)
		bl := tl.Add(wv)
		mask = bE.Greater(m)
		m, a = bE.Merge(m, mask), bl.Merge(a, mask)
		mask = bO.Greater(m)
		m, a = bO.Merge(m, mask), bl.Add(one).Merge(a, mask)
		m, a = m.Permute(order), a.Permute(order)
		if k == 8 {
			m.StoreSlice(dst[x:])
			a.StoreSlice(at[x:])
			continue
		}
		m.StoreSlicePart(dst[x : x+k])
		a.StoreSlicePart(at[x : x+k])
	}
	archsimd.ClearAVXUpperBits()
}
