// Package cblas gives gorgonia a faster single-precision matrix multiply:
// with the build tag "openblas" (cgo and Debian's libopenblas-dev), Sgemm
// and Sgemv go to OpenBLAS and everything else stays in gonum's native
// BLAS; without it, Enable does nothing and gonum's Go BLAS is used.
// `make build` sets the tag when OpenBLAS is installed.
package cblas

import "gonum.org/v1/gonum/blas"

// Sgemmer is a single-precision matrix product, row major, as gonum's
// blas.Float32Level3 has it.
type Sgemmer interface {
	Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
}
