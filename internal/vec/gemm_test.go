package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

func naive(c []float32, ldc int, a []float32, ai, ak int, b []float32, ldb int, m, k, n int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for kk := 0; kk < k; kk++ {
				s += float64(a[i*ai+kk*ak]) * float64(b[kk*ldb+j])
			}
			c[i*ldc+j] += float32(s)
		}
	}
}

func TestGemmShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{14, 45, 64}, {14, 64, 175}, {64, 14, 175}, {7, 3, 5}, {1, 1, 1}, {5, 9, 17}, {3, 20, 33}} {
		m, k, n := sh[0], sh[1], sh[2]
		for _, trans := range []bool{false, true} {
			a := randSlice(r, m*k)
			ai, ak := k, 1
			if trans {
				ai, ak = 1, m
			}
			b, c := randSlice(r, k*n), randSlice(r, m*n)
			want := append([]float32{}, c...)
			naive(want, n, a, ai, ak, b, n, m, k, n)
			Gemm(c, n, a, ai, ak, b, n, m, k, n)
			for i := range c {
				if math.Abs(float64(c[i]-want[i])) > 1e-3 {
					t.Fatalf("gemm %v trans=%v at %d: %g vs %g", sh, trans, i, c[i], want[i])
				}
			}
		}
		// GemmBT: C[m][n] += A[m][k] * B[n][k]^T
		a, bt, c := randSlice(r, m*k), randSlice(r, n*k), randSlice(r, m*n)
		want := append([]float32{}, c...)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s float64
				for kk := 0; kk < k; kk++ {
					s += float64(a[i*k+kk]) * float64(bt[j*k+kk])
				}
				want[i*n+j] += float32(s)
			}
		}
		GemmBT(c, n, a, k, bt, k, m, k, n)
		for i := range c {
			if math.Abs(float64(c[i]-want[i])) > 1e-3 {
				t.Fatalf("gemmBT %v at %d: %g vs %g", sh, i, c[i], want[i])
			}
		}
	}
}

func BenchmarkGemmOut(b *testing.B) { // P[14x175] += N[14x64] W2[64x175]
	a, w, c := make([]float32, 14*64), make([]float32, 64*175), make([]float32, 14*175)
	for range b.N {
		Gemm(c, 175, a, 64, 1, w, 175, 14, 64, 175)
	}
}

func BenchmarkGemmBTOut(b *testing.B) { // dN[14x64] += dP[14x175] W2^T
	a, w, c := make([]float32, 14*175), make([]float32, 64*175), make([]float32, 14*64)
	for range b.N {
		GemmBT(c, 64, a, 175, w, 175, 14, 175, 64)
	}
}
