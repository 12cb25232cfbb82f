package vec

// AddConstReLU computes dst = max(dst + c, 0): a bias and a ReLU in one
// pass (c = 0: a ReLU alone).
func AddConstReLU(dst []float32, c float32) { addConstReLUImpl(dst, c) }

// AddReLU computes dst = max(a + b, 0); len(a), len(b) >= len(dst).
func AddReLU(dst, a, b []float32) { addReLUImpl(dst, a, b) }

// MaxInto computes dst = max(dst, x), elementwise; len(x) >= len(dst).
// With a NaN in either, the SIMD kernel gives x's value.
func MaxInto(dst, x []float32) { maxIntoImpl(dst, x) }

var (
	addConstReLUImpl = addConstReLUGeneric
	addReLUImpl      = addReLUGeneric
	maxIntoImpl      = maxIntoGeneric
)

func maxIntoGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = max(dst[i], v)
	}
}

func addConstReLUGeneric(dst []float32, c float32) {
	for i, v := range dst {
		dst[i] = max(v+c, 0)
	}
}

func addReLUGeneric(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = max(a[i]+b[i], 0)
	}
}
