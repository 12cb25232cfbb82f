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
	for _, sh := range [][3]int{{14, 45, 64}, {14, 64, 175}, {64, 14, 175}, {7, 3, 5}, {1, 1, 1}, {5, 9, 17}, {3, 20, 33}, {10, 8, 40}, {22, 5, 48}, {9, 3, 16}} {
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

// TestGemmRowsIndependentOfBlocks: a row of C is bitwise the same whether
// it is computed alone or inside a block of 4 or 6 rows, so the blocking
// never changes a meta-model's scores.
func TestGemmRowsIndependentOfBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const k, n = 37, 50
	b := randSlice(r, k*n)
	for _, m := range []int{1, 4, 6, 7, 10, 14} {
		a := randSlice(r, m*k)
		c := make([]float32, m*n)
		Gemm(c, n, a, k, 1, b, n, m, k, n)
		for i := 0; i < m; i++ {
			row := make([]float32, n)
			Gemm(row, n, a[i*k:], k, 1, b, n, 1, k, n)
			for j := range row {
				if row[j] != c[i*n+j] {
					t.Fatalf("m=%d row %d col %d: %g alone, %g in a block", m, i, j, row[j], c[i*n+j])
				}
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
