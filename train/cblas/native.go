//go:build !(openblas && cgo)

package cblas

import "gonum.org/v1/gonum/blas/gonum"

// Name says which BLAS Enable installs.
const Name = "gonum"

// Enable keeps gonum's native BLAS.
func Enable() string { return InUse() }

// Serial returns gonum's matrix product (which spreads large products
// over goroutines itself).
func Serial() Sgemmer { return gonum.Implementation{} }

// InUse says what training's matrix products run on: gonum's Go BLAS.
func InUse() string { return Name }
