package vec

import "testing"

func BenchmarkAxpy175(b *testing.B) {
	x, d := make([]float32, 175), make([]float32, 175)
	for range b.N {
		Axpy(d, 0.5, x)
	}
}

func BenchmarkAxpyDot175(b *testing.B) {
	x, y, d := make([]float32, 175), make([]float32, 175), make([]float32, 175)
	for range b.N {
		AxpyDot(d, 0.5, x, y)
	}
}

func BenchmarkAdamW14k(b *testing.B) {
	n := 14000
	p, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for range b.N {
		AdamW(p, g, m, v, 0.99, 0.01, 1, 0.9, 0.999, 1e-8)
	}
}

func BenchmarkAxpy4096(b *testing.B) {
	x, d := make([]float32, 4096), make([]float32, 4096)
	for range b.N {
		Axpy(d, 0.5, x)
	}
}
