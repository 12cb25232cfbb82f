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

// Sgemm computes c = alpha * op(a) * op(b) + beta * c (row major).
func (impl) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
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

// Enable makes gorgonia use OpenBLAS with as many threads as GOMAXPROCS
// (the node's CPU share when it runs in its own process).
func Enable() string {
	C.openblas_set_num_threads(C.int(runtime.GOMAXPROCS(0)))
	G.Use(impl{})
	return Name
}
