// Package cblas gives gorgonia a faster single-precision matrix multiply:
// with the build tag "openblas" (cgo and Debian's libopenblas-dev), Sgemm
// and Sgemv go to OpenBLAS and everything else stays in gonum's native
// BLAS; without it, Enable does nothing and gonum's Go BLAS is used.
// `make build` sets the tag when OpenBLAS is installed.
package cblas
