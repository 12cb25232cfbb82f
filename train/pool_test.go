package train

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPool2RowMatchesGeneric checks the row kernel in use (the SIMD one
// where the build has it) against the scalar one: values, recorded
// indices, first-maximum ties, partial last steps and the fused ReLU.
func TestPool2RowMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 7, 8, 9, 14, 16, 23} {
		for _, relu := range []bool{false, true} {
			for trial := range 20 {
				w := 2*n + trial%3
				r0, r1 := make([]float32, 2*n), make([]float32, 2*n)
				for i := range r0 {
					// Few distinct values, so windows tie often.
					r0[i], r1[i] = float32(rng.IntN(5)-2), float32(rng.IntN(5)-2)
				}
				base, sink := int32(100*trial), int32(1<<20)
				want, wantAt := make([]float32, n), make([]int32, n)
				got, gotAt := make([]float32, n), make([]int32, n)
				pool2RowGeneric(r0, r1, want, wantAt, base, int32(w), sink, relu)
				pool2Row(r0, r1, got, gotAt, base, int32(w), sink, relu)
				if !slices.Equal(got, want) || !slices.Equal(gotAt, wantAt) {
					t.Fatalf("n %d relu %v: got %v at %v, want %v at %v\nr0 %v\nr1 %v", n, relu, got, gotAt, want, wantAt, r0, r1)
				}
			}
		}
	}
}

// TestPool2RowFirstMaximum pins the tie and ReLU rules on one window.
func TestPool2RowFirstMaximum(t *testing.T) {
	cases := []struct {
		r0, r1 []float32
		relu   bool
		max    float32
		at     int32
	}{
		{[]float32{1, 3}, []float32{3, 2}, false, 3, 11},
		{[]float32{2, 2}, []float32{2, 2}, false, 2, 10},
		{[]float32{-1, -3}, []float32{-2, -1}, false, -1, 10},
		{[]float32{-1, -3}, []float32{-2, -1}, true, 0, 99},
		{[]float32{0, 0}, []float32{0, 0.5}, true, 0.5, 10 + 7 + 1},
	}
	for i, c := range cases {
		for _, kernel := range []func(r0, r1, dst []float32, at []int32, base, w, sink int32, relu bool){pool2RowGeneric, pool2Row} {
			dst, at := make([]float32, 1), make([]int32, 1)
			kernel(c.r0, c.r1, dst, at, 10, 7, 99, c.relu)
			if dst[0] != c.max || at[0] != c.at {
				t.Errorf("case %d: got %v at %d, want %v at %d", i, dst[0], at[0], c.max, c.at)
			}
		}
	}
}
