//go:build openblas && cgo

package cblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
void openblas_set_num_threads(int);
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
)

// Name says which BLAS Enable installs.
const Name = "openblas"

// impl is gonum's native BLAS with OpenBLAS's single-precision matrix
// products.
type impl struct{ gonum.Implementation }

func trans(t blas.Transpose) C.enum_CBLAS_TRANSPOSE {
	if t == blas.NoTrans {
		return C.CblasNoTrans
	}
	return C.CblasTrans
}

func ptr(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

// Sgemm computes c = alpha * op(a) * op(b) + beta * c (row major). A
// large product is split into GOMAXPROCS blocks of rows (or of columns,
// when c is wide), each a one-thread OpenBLAS call on its own goroutine.
func (impl) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	workers := runtime.GOMAXPROCS(0)
	if workers == 1 || m*n*k < splitWork || max(m, n) < 2*workers {
		serial{}.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			if m >= n {
				i0, i1 := w*m/workers, (w+1)*m/workers
				aw := a[i0:] // rows of a's transpose are its columns
				if tA == blas.NoTrans {
					aw = a[i0*lda:]
				}
				serial{}.Sgemm(tA, tB, i1-i0, n, k, alpha, aw, lda, b, ldb, beta, c[i0*ldc:], ldc)
				return
			}
			j0, j1 := w*n/workers, (w+1)*n/workers
			bw := b[j0:] // columns of b are its transpose's rows
			if tB == blas.Trans {
				bw = b[j0*ldb:]
			}
			serial{}.Sgemm(tA, tB, m, j1-j0, k, alpha, a, lda, bw, ldb, beta, c[j0:], ldc)
		})
	}
	wg.Wait()
}

// splitWork is the product size (m*n*k) from which Sgemm splits it.
const splitWork = 1 << 18

// serial calls OpenBLAS on the calling thread.
type serial struct{}

// Serial returns the one-thread matrix product, for callers that run
// their own goroutines (the convolution ops, an image per worker).
func Serial() Sgemmer { return serial{} }

func (serial) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	C.cblas_sgemm(C.CblasRowMajor, trans(tA), trans(tB), C.blasint(m), C.blasint(n), C.blasint(k), C.float(alpha),
		ptr(a), C.blasint(lda), ptr(b), C.blasint(ldb), C.float(beta), ptr(c), C.blasint(ldc))
}

// Sgemv computes y = alpha * op(a) * x + beta * y (row major).
func (impl) Sgemv(tA blas.Transpose, m, n int, alpha float32, a []float32, lda int, x []float32, incX int, beta float32, y []float32, incY int) {
	if m == 0 || n == 0 {
		return
	}
	C.cblas_sgemv(C.CblasRowMajor, trans(tA), C.blasint(m), C.blasint(n), C.float(alpha), ptr(a), C.blasint(lda),
		ptr(x), C.blasint(incX), C.float(beta), ptr(y), C.blasint(incY))
}

// Enable makes gorgonia use OpenBLAS. OpenBLAS itself runs on one thread:
// Sgemm spreads large products over GOMAXPROCS goroutines (the node's CPU
// share when it runs in its own process), and callers that work in
// parallel already use Serial, so the CPUs are never oversubscribed.
func Enable() string {
	C.openblas_set_num_threads(1)
	G.Use(impl{})
	return Name
}
