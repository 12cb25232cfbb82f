package vec

import "math"

func axpyGeneric(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}

func dotGeneric(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyDotGeneric(dst []float32, a float32, x, y []float32) float32 {
	axpyGeneric(dst, a, x)
	return dotGeneric(x[:len(dst)], y)
}

func adamwGeneric(p, g, m, v []float32, decay, stepSize, invBC2, b1, b2, eps float32) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		gi := g[i]
		mi := b1*m[i] + (1-b1)*gi
		vi := b2*v[i] + (1-b2)*gi*gi
		m[i], v[i] = mi, vi
		p[i] = p[i]*decay - stepSize*mi/(float32(math.Sqrt(float64(vi)))*invBC2+eps)
	}
}

func sumGeneric(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func addGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += x[i]
	}
}

func sumOfGeneric(dst []float32, srcs [][]float32) {
	copy(dst, srcs[0][:len(dst)])
	for _, x := range srcs[1:] {
		addGeneric(dst, x)
	}
}

func addConstGeneric(dst []float32, c float32) {
	for i := range dst {
		dst[i] += c
	}
}
