//go:build goexperiment.simd && amd64

package vec

import "simd/archsimd"

func init() {
	if archsimd.X86.AVX2() {
		byteMomentsImpl = byteMomentsSIMD
	}
}

// byteMomentsSIMD widens 16 bytes at a time to 16-bit lanes and adds
// their pairwise products with themselves (the squares) and with ones
// (the values) into 32-bit lanes (VPMADDWD).
func byteMomentsSIMD(b []byte) (sum, sumSquares uint64) {
	ones := archsimd.BroadcastInt16x16(1)
	for len(b) >= 16 {
		n := min(len(b), momentsBlock) &^ 15
		var s, q archsimd.Int32x8
		for i := 0; i < n; i += 16 {
			x := archsimd.LoadUint8x16Slice(b[i:]).ExtendToUint16().AsInt16x16()
			s = s.Add(x.DotProductPairs(ones))
			q = q.Add(x.DotProductPairs(x))
		}
		var sl, ql [8]int32
		s.Store(&sl)
		q.Store(&ql)
		for k := range 8 {
			sum += uint64(sl[k])
			sumSquares += uint64(ql[k])
		}
		b = b[n:]
	}
	archsimd.ClearAVXUpperBits()
	for _, v := range b {
		sum += uint64(v)
		sumSquares += uint64(v) * uint64(v)
	}
	return sum, sumSquares
}
