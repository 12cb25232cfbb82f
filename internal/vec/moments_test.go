package vec

import (
	"math/rand/v2"
	"testing"
)

func TestByteMoments(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 15, 16, 17, 1000, momentsBlock - 1, momentsBlock, momentsBlock + 33, 3*momentsBlock + 7} {
		for _, fill := range []string{"random", "max"} {
			b := make([]byte, n)
			for i := range b {
				if fill == "max" {
					b[i] = 255
				} else {
					b[i] = byte(r.IntN(256))
				}
			}
			var ws, wq uint64
			for _, v := range b {
				ws += uint64(v)
				wq += uint64(v) * uint64(v)
			}
			s, q := ByteMoments(b)
			if s != ws || q != wq {
				t.Errorf("%d %s bytes: ByteMoments = %d, %d; want %d, %d", n, fill, s, q, ws, wq)
			}
			if s, q := byteMomentsGeneric(b); s != ws || q != wq {
				t.Errorf("%d %s bytes: generic = %d, %d; want %d, %d", n, fill, s, q, ws, wq)
			}
		}
	}
}

func BenchmarkByteMoments(b *testing.B) {
	x := make([]byte, 224*224)
	for i := range x {
		x[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(x)))
	for range b.N {
		ByteMoments(x)
	}
}
