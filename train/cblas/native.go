//go:build !(openblas && cgo)

package cblas

// Name says which BLAS Enable installs.
const Name = "gonum"

// Enable keeps gonum's native BLAS.
func Enable() string { return Name }
