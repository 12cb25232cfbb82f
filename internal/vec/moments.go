package vec

// ByteMoments returns the sum of the bytes of b and the sum of their
// squares, exactly (as integers): the first two moments that a store's
// normalisation statistics need, in one pass.
func ByteMoments(b []byte) (sum, sumSquares uint64) { return byteMomentsImpl(b) }

var byteMomentsImpl = byteMomentsGeneric

// momentsBlock is how many bytes the 32-bit lanes take before they are
// added into the 64-bit totals: a lane gains at most 2 x 255^2 = 130,050
// a step of 16 bytes, so 8,192 steps stay below 2^31.
const momentsBlock = 16 * 8192

// byteMomentsGeneric counts the byte values in four tables that take
// alternate bytes (so that runs of one value do not wait on each other's
// increments), then weighs the counts; the uint32 counts are added up
// every 2^30 bytes at most. It runs about twice as fast as summing the
// values and squares directly.
func byteMomentsGeneric(b []byte) (sum, sumSquares uint64) {
	for len(b) > 0 {
		part := b[:min(len(b), 1<<30)]
		b = b[len(part):]
		var t [4][256]uint32
		for len(part) >= 4 {
			t[0][part[0]]++
			t[1][part[1]]++
			t[2][part[2]]++
			t[3][part[3]]++
			part = part[4:]
		}
		for _, v := range part {
			t[0][v]++
		}
		for v := range uint64(256) {
			n := uint64(t[0][v]) + uint64(t[1][v]) + uint64(t[2][v]) + uint64(t[3][v])
			sum += n * v
			sumSquares += n * v * v
		}
	}
	return sum, sumSquares
}
