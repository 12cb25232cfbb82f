package vec

import "math"

// GELU computes a = z*Phi(z) (the exact GELU of torch.nn.GELU) and
// d = Phi(z) + z*phi(z), its derivative, for every element of z.
func GELU(a, d, z []float32) { geluImpl(a, d, z) }

var geluImpl = geluGeneric

// Constants of erf by Abramowitz & Stegun 7.1.26 (absolute error below
// 1.5e-7, under float32 resolution).
const (
	erfP                              = 0.3275911
	erfA1, erfA2, erfA3, erfA4, erfA5 = 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429
	invSqrt2                          = 0.7071067811865476
	invSqrt2Pi                        = 0.3989422804014327
)

func geluGeneric(a, d, z []float32) {
	for i, v := range z {
		cdf, pdf := NormalCDFPDF(v)
		a[i] = v * cdf
		d[i] = cdf + v*pdf
	}
}

// NormalCDFPDF returns the standard normal CDF and density at z, sharing
// one exponential: exp(-z^2/2) is both the density's kernel and, for
// u = z/sqrt(2), the exp(-u^2) of the erf approximation.
func NormalCDFPDF(z float32) (cdf, pdf float32) {
	e := float32(math.Exp(float64(-0.5 * z * z)))
	u := z * invSqrt2
	au := u
	if au < 0 {
		au = -au
	}
	t := 1 / (1 + erfP*au)
	q := (((((erfA5*t+erfA4)*t)+erfA3)*t+erfA2)*t + erfA1) * t * e // 1 - erf(|u|)
	if u < 0 {
		return 0.5 * q, e * invSqrt2Pi
	}
	return 1 - 0.5*q, e * invSqrt2Pi
}
