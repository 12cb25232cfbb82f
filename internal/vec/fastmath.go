package vec

import "math"

// GELUInPlace sets every x to x Φ(x), the exact GELU (torch.nn.GELU()),
// with erf by Erf32.
func GELUInPlace(x []float32) { geluInPlaceImpl(x) }

// SoftmaxRows replaces each row of x (n values each; len(x) a multiple of
// n) by the softmax of scale times it, with the exponential of Exp32.
func SoftmaxRows(x []float32, n int, scale float32) { softmaxRowsImpl(x, n, scale) }

var (
	geluInPlaceImpl = geluInPlaceGeneric
	softmaxRowsImpl = softmaxRowsGeneric
)

// Coefficients of Erf32: Eigen's and XLA's single-precision erf, an odd
// numerator of degree 13 over an even denominator of degree 8.
const (
	erfN13, erfN11, erfN9, erfN7 = -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05
	erfN5, erfN3, erfN1          = -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02
	erfD8, erfD6, erfD4, erfD2   = -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03
	erfD0                        = -1.42647390514189e-02
)

// Erf32 is erf in float32 as a rational function (inputs clamped to
// [-4, 4], beyond which erf is ±1 in float32): within 5e-7 of math.Erf,
// without a branch or an exponential, so that it vectorises.
func Erf32(x float32) float32 {
	x = max(-4, min(4, x))
	x2 := x * x
	p := x2*erfN13 + erfN11
	p = x2*p + erfN9
	p = x2*p + erfN7
	p = x2*p + erfN5
	p = x2*p + erfN3
	p = x2*p + erfN1
	q := x2*erfD8 + erfD6
	q = x2*q + erfD4
	q = x2*q + erfD2
	q = x2*q + erfD0
	return x * p / q
}

// Exp32 is e^x for x ≤ 0 (clamped at -87, near the end of float32's
// normal range) as the SIMD kernels compute it: Cephes' expf polynomial
// on x - n ln2, scaled by 2^n; within about one unit in the last place.
func Exp32(x float32) float32 {
	x = max(x, -87)
	n := float32(math.RoundToEven(float64(x * 1.44269504088896341)))
	r := x - n*0.693359375 + n*2.12194440e-4
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

func geluInPlaceGeneric(x []float32) {
	for i, v := range x {
		x[i] = v * 0.5 * (1 + Erf32(v*invSqrt2))
	}
}

func softmaxRowsGeneric(x []float32, n int, scale float32) {
	for off := 0; off+n <= len(x); off += n {
		row := x[off : off+n]
		mx := float32(math.Inf(-1))
		for _, v := range row {
			mx = max(mx, v*scale)
		}
		var sum float32
		for j, v := range row {
			e := Exp32(v*scale - mx)
			row[j] = e
			sum += e
		}
		inv := 1 / sum
		for j := range row {
			row[j] *= inv
		}
	}
}
