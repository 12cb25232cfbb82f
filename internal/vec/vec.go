// Package vec holds float32 vector kernels: for the EEVEE scorer GEMM
// (plain and with B transposed), axpy, dot, a fused axpy+dot, GELU,
// LayerNorm forward and backward, the weighted squared error and the AdamW
// update; for the trainer's ops sum, add and add-a-constant. Built with
// GOEXPERIMENT=simd on amd64 with AVX2 and FMA, they use 8-wide SIMD;
// otherwise portable Go loops compute the same thing.
package vec

// Axpy computes dst += a*x; len(x) >= len(dst).
func Axpy(dst []float32, a float32, x []float32) { axpyImpl(dst, a, x) }

// Dot returns x·y; len(y) >= len(x).
func Dot(x, y []float32) float32 { return dotImpl(x, y) }

// AxpyDot computes dst += a*x and returns x·y in one pass over x;
// len(x), len(y) >= len(dst).
func AxpyDot(dst []float32, a float32, x, y []float32) float32 { return axpyDotImpl(dst, a, x, y) }

// AdamW applies one AdamW step to p given gradients g and moments m, v:
// p = p*decay - stepSize * m' / (sqrt(v')*invBC2 + eps), with
// m' = b1*m + (1-b1)*g and v' = b2*v + (1-b2)*g*g.
func AdamW(p, g, m, v []float32, decay, stepSize, invBC2, b1, b2, eps float32) {
	adamwImpl(p, g, m, v, decay, stepSize, invBC2, b1, b2, eps)
}

// Sum returns the sum of x.
func Sum(x []float32) float32 { return sumImpl(x) }

// Add computes dst += x; len(x) >= len(dst).
func Add(dst, x []float32) { addImpl(dst, x) }

// SumOf sets dst to the elementwise sum of srcs (at least one, each at
// least len(dst) long), adding them in order.
func SumOf(dst []float32, srcs [][]float32) { sumOfImpl(dst, srcs) }

// AddConst computes dst += c.
func AddConst(dst []float32, c float32) { addConstImpl(dst, c) }

// Accelerated reports whether the SIMD kernels are in use.
func Accelerated() bool { return accelerated }

var (
	axpyImpl     = axpyGeneric
	dotImpl      = dotGeneric
	axpyDotImpl  = axpyDotGeneric
	adamwImpl    = adamwGeneric
	sumImpl      = sumGeneric
	addImpl      = addGeneric
	addConstImpl = addConstGeneric
	sumOfImpl    = sumOfGeneric
	accelerated  = false
)
