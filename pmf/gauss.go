package pmf

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// gaussian accumulates the precision Λ and the linear term h of a
// Gaussian full conditional, Λ = λ0 I + Σ w x xᵀ and h = Σ w t x, and draws
// from N(Λ⁻¹h, Λ⁻¹). Its buffers are reused across draws.
type gaussian struct {
	d         int
	lam       *mat.SymDense
	lamData   []float64 // lam's backing array: upper triangle, row-major
	hData     []float64
	h, mu, xi *mat.VecDense
	chol      mat.Cholesky
	upper     mat.TriDense
	noise     *mat.VecDense
}

func newGaussian(d int) *gaussian {
	g := &gaussian{d: d, lamData: make([]float64, d*d), hData: make([]float64, d), mu: mat.NewVecDense(d, nil),
		xi: mat.NewVecDense(d, nil), noise: mat.NewVecDense(d, nil)}
	g.lam = mat.NewSymDense(d, g.lamData)
	g.h = mat.NewVecDense(d, g.hData)
	return g
}

// reset starts a conditional with prior precision lambda0 (times I).
func (g *gaussian) reset(lambda0 float64) {
	clear(g.lamData)
	clear(g.hData)
	for i := 0; i < g.d; i++ {
		g.lamData[i*g.d+i] = lambda0
	}
}

// resetDiag starts a conditional with a diagonal prior precision.
func (g *gaussian) resetDiag(lambda []float64) {
	clear(g.lamData)
	clear(g.hData)
	for i, l := range lambda {
		g.lamData[i*g.d+i] = l
	}
}

// add is one observation t ≈ x·θ with precision w.
func (g *gaussian) add(x []float64, t, w float64) {
	d := g.d
	for i := 0; i < d; i++ {
		xi := x[i] * w
		row := g.lamData[i*d+i : i*d+d]
		for j, xj := range x[i:d] {
			row[j] += xi * xj
		}
		g.hData[i] += xi * t
	}
}

// draw writes a sample into dst.
func (g *gaussian) draw(rng *rand.Rand, dst []float64) error {
	if ok := g.chol.Factorize(g.lam); !ok {
		return fmt.Errorf("a full conditional's precision is not positive definite")
	}
	if err := g.chol.SolveVecTo(g.mu, g.h); err != nil {
		return err
	}
	// Λ = UᵀU, so U⁻¹ξ has covariance Λ⁻¹.
	g.chol.UTo(&g.upper)
	for i := 0; i < g.d; i++ {
		g.xi.SetVec(i, rng.NormFloat64())
	}
	if err := g.noise.SolveVec(&g.upper, g.xi); err != nil {
		return err
	}
	for i := 0; i < g.d; i++ {
		dst[i] = g.mu.AtVec(i) + g.noise.AtVec(i)
	}
	return nil
}

// inverseGamma draws from InvGamma(shape, scale).
func inverseGamma(rng *rand.Rand, shape, scale float64) float64 {
	return 1 / distuv.Gamma{Alpha: shape, Beta: scale, Src: rng}.Rand()
}
