package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// TestKernelsMatchGeneric checks the active kernels (SIMD when built with
// GOEXPERIMENT=simd) against the portable loops, for lengths covering
// every tail case.
func TestKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t.Logf("accelerated: %v", Accelerated())
	for n := 0; n <= 41; n++ {
		x, y, d := randSlice(r, n), randSlice(r, n), randSlice(r, n)
		d1, d2 := append([]float32{}, d...), append([]float32{}, d...)
		Axpy(d1, 0.7, x)
		axpyGeneric(d2, 0.7, x)
		for i := range d1 {
			if math.Abs(float64(d1[i]-d2[i])) > 1e-5 {
				t.Fatalf("axpy n=%d i=%d: %g vs %g", n, i, d1[i], d2[i])
			}
		}
		if a, b := Dot(x, y), dotGeneric(x, y); math.Abs(float64(a-b)) > 1e-4*(1+math.Abs(float64(b))) {
			t.Fatalf("dot n=%d: %g vs %g", n, a, b)
		}
		d3, d4 := append([]float32{}, d...), append([]float32{}, d...)
		s3, s4 := AxpyDot(d3, -1.5, x, y), axpyDotGeneric(d4, -1.5, x, y)
		if math.Abs(float64(s3-s4)) > 1e-4*(1+math.Abs(float64(s4))) {
			t.Fatalf("axpydot n=%d: %g vs %g", n, s3, s4)
		}
		if a, b := Sum(x), sumGeneric(x); math.Abs(float64(a-b)) > 1e-4*(1+math.Abs(float64(b))) {
			t.Fatalf("sum n=%d: %g vs %g", n, a, b)
		}
		a1, a2 := append([]float32{}, d...), append([]float32{}, d...)
		Add(a1, x)
		addGeneric(a2, x)
		AddConst(a1, 0.25)
		addConstGeneric(a2, 0.25)
		for i := range a1 {
			if a1[i] != a2[i] {
				t.Fatalf("add n=%d i=%d: %g vs %g", n, i, a1[i], a2[i])
			}
		}
		srcs := [][]float32{x, y, randSlice(r, n+3)}
		for k := 1; k <= len(srcs); k++ {
			s1, s2 := append([]float32{}, d...), append([]float32{}, d...)
			SumOf(s1, srcs[:k])
			sumOfGeneric(s2, srcs[:k])
			for i := range s1 {
				if s1[i] != s2[i] {
					t.Fatalf("sumOf n=%d k=%d i=%d: %g vs %g", n, k, i, s1[i], s2[i])
				}
			}
		}
		p1, p2 := append([]float32{}, d...), append([]float32{}, d...)
		m1, v1 := randSlice(r, n), make([]float32, n)
		for i := range v1 {
			v1[i] = float32(r.Float64())
		}
		m2, v2 := append([]float32{}, m1...), append([]float32{}, v1...)
		AdamW(p1, x, m1, v1, 0.999, 0.01, 1.2, 0.9, 0.999, 1e-8)
		adamwGeneric(p2, x, m2, v2, 0.999, 0.01, 1.2, 0.9, 0.999, 1e-8)
		for i := range p1 {
			if math.Abs(float64(p1[i]-p2[i])) > 1e-5 || math.Abs(float64(v1[i]-v2[i])) > 1e-6 {
				t.Fatalf("adamw n=%d i=%d: %g vs %g", n, i, p1[i], p2[i])
			}
		}
	}
}

func TestWeightedSqErr(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 1; n < 30; n++ {
		p, y, w := randSlice(r, n), randSlice(r, n), randSlice(r, n)
		d1, d2 := make([]float32, n), make([]float32, n)
		s1, s2 := WeightedSqErr(p, y, w, d1, 0.3), wseGeneric(p, y, w, d2, 0.3)
		if math.Abs(float64(s1-s2)) > 1e-4*(1+math.Abs(float64(s2))) {
			t.Fatalf("n=%d: %g vs %g", n, s1, s2)
		}
		for i := range d1 {
			if math.Abs(float64(d1[i]-d2[i])) > 1e-5 {
				t.Fatalf("n=%d grad %d: %g vs %g", n, i, d1[i], d2[i])
			}
		}
	}
}
