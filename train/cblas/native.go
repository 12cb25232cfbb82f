//go:build !(openblas && cgo)

package cblas

import (
	"errors"

	"gonum.org/v1/gonum/blas/gonum"
)

// Name says which BLAS Enable installs.
const Name = "gonum"

// Enable keeps gonum's native BLAS.
func Enable() string { return Name }

// Serial returns gonum's matrix product (which spreads large products
// over goroutines itself).
func Serial() Sgemmer { return gonum.Implementation{} }

// Core says that no OpenBLAS kernels are in use.
func Core() (string, error) { return "", errors.New("built without OpenBLAS") }
