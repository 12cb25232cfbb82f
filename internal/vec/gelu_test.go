package vec

import (
	"math"
	"testing"
)

// TestGELUAccuracy compares GELU and its derivative with float64 math.Erf
// over [-10, 10].
func TestGELUAccuracy(t *testing.T) {
	var z []float32
	for x := -10.0; x <= 10; x += 0.00731 {
		z = append(z, float32(x))
	}
	z = append(z, 0, -0, 1e-30, -1e-30, -100, 100)
	a, d := make([]float32, len(z)), make([]float32, len(z))
	GELU(a, d, z)
	for i, v := range z {
		x := float64(v)
		cdf := 0.5 * (1 + math.Erf(x/math.Sqrt2))
		wantA := x * cdf
		wantD := cdf + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
		if math.Abs(float64(a[i])-wantA) > 2e-6*(1+math.Abs(wantA)) || math.Abs(float64(d[i])-wantD) > 2e-6*(1+math.Abs(wantD)) {
			t.Fatalf("z=%g: gelu %g (want %g), grad %g (want %g)", x, a[i], wantA, d[i], wantD)
		}
	}
}
