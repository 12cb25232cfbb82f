package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFastErfAndExpAgreeWithMath: Erf32 and Exp32 stay within a few
// float32 units of the float64 functions over their ranges.
func TestFastErfAndExpAgreeWithMath(t *testing.T) {
	var worstErf, worstExp float64
	for i := -600000; i <= 600000; i++ {
		x := float32(i) / 100000 // -6 .. 6
		worstErf = max(worstErf, math.Abs(float64(Erf32(x))-math.Erf(float64(x))))
	}
	for i := 0; i <= 870000; i++ {
		x := -float32(i) / 10000 // 0 .. -87
		want := math.Exp(float64(x))
		worstExp = max(worstExp, math.Abs(float64(Exp32(x))-want)/want)
	}
	if worstErf > 5e-7 || worstExp > 3e-7 {
		t.Fatalf("largest error: erf %.3g (absolute), exp %.3g (relative)", worstErf, worstExp)
	}
}

// TestGELUAndSoftmaxKernels: the in-place GELU and the row softmax (the
// SIMD ones when built with them) match float64 references, for row
// lengths around the vector width, including rows of very negative logits.
func TestGELUAndSoftmaxKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{1, 5, 8, 9, 16, 23, 197} {
		x := make([]float32, 3*n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 3)
		}
		x[n] = -500 // a row whose values are far below zero
		for i := n; i < 2*n; i++ {
			x[i] -= 300
		}
		g := append([]float32(nil), x...)
		GELUInPlace(g)
		for i, v := range x {
			want := float64(v) * 0.5 * (1 + math.Erf(float64(v)/math.Sqrt2))
			if math.Abs(float64(g[i])-want) > 1e-6*(1+math.Abs(want)) {
				t.Fatalf("n %d: gelu(%v) = %v, want %v", n, v, g[i], want)
			}
		}
		s := append([]float32(nil), x...)
		SoftmaxRows(s, n, 0.7)
		for off := 0; off < len(x); off += n {
			// The logits as float32 computes them (0.7 v rounded), so
			// that only the kernels' own error is measured.
			logit := func(v float32) float64 { return float64(v * 0.7) }
			mx := math.Inf(-1)
			for _, v := range x[off : off+n] {
				mx = max(mx, logit(v))
			}
			var sum float64
			for _, v := range x[off : off+n] {
				sum += math.Exp(logit(v) - mx)
			}
			for j, v := range x[off : off+n] {
				want := math.Exp(logit(v)-mx) / sum
				if math.Abs(float64(s[off+j])-want) > 1e-6 {
					t.Fatalf("n %d row %d: softmax[%d] = %v, want %v", n, off/n, j, s[off+j], want)
				}
			}
		}
	}
}

// TestReLUKernels: the fused bias/residual ReLUs and MaxInto, tails included.
func TestReLUKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{1, 7, 8, 9, 31} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		d := append([]float32(nil), a...)
		AddConstReLU(d, 0.3)
		s := make([]float32, n)
		AddReLU(s, a, b)
		m := append([]float32(nil), a...)
		MaxInto(m, b)
		for i := range a {
			if d[i] != max(a[i]+0.3, 0) || s[i] != max(a[i]+b[i], 0) || m[i] != max(a[i], b[i]) {
				t.Fatalf("n %d, %d: AddConstReLU %v, AddReLU %v, MaxInto %v for a %v b %v", n, i, d[i], s[i], m[i], a[i], b[i])
			}
		}
	}
}
