package cblas

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
)

// TestSgemmMatchesGonum: whichever BLAS Enable installs computes the same
// products as gonum's reference for every transpose combination, on a
// small product and on tall and wide ones large enough to be split
// between goroutines (three of them here).
func TestSgemmMatchesGonum(t *testing.T) {
	t.Logf("BLAS: %s", Enable())
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	for _, size := range [][3]int{{7, 5, 9}, {301, 40, 50}, {20, 517, 60}} {
		checkSgemm(t, size[0], size[1], size[2])
	}
	if got := Serial(); got == nil {
		t.Fatal("no serial BLAS")
	}
}

func checkSgemm(t *testing.T, m, n, k int) {
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	for _, ta := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		for _, tb := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			a, b, c := rnd(m*k), rnd(k*n), rnd(m*n)
			lda, ldb := k, n
			if ta == blas.Trans {
				lda = m
			}
			if tb == blas.Trans {
				ldb = k
			}
			want := append([]float32(nil), c...)
			gonum.Implementation{}.Sgemm(ta, tb, m, n, k, 0.5, a, lda, b, ldb, 2, want, n)
			got := append([]float32(nil), c...)
			G.WhichBLAS().Sgemm(ta, tb, m, n, k, 0.5, a, lda, b, ldb, 2, got, n)
			for i := range got {
				if math.Abs(float64(got[i]-want[i])) > 1e-3 {
					t.Fatalf("%dx%dx%d trans %v %v: c[%d] = %v, want %v", m, n, k, ta, tb, i, got[i], want[i])
				}
			}
		}
	}
}
