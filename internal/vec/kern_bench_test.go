//go:build goexperiment.simd && amd64

package vec

import "testing"

func BenchmarkKernel4x16(b *testing.B) {
	a, w, c := make([]float32, 4*256), make([]float32, 256*16), make([]float32, 4*16)
	for range b.N {
		gemm4x16(&c[0], 16, &a[0], 256, 1, &w[0], 16, 256)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/256, "ns/k")
}

func BenchmarkKernel6x16(b *testing.B) {
	a, w, c := make([]float32, 6*256), make([]float32, 256*16), make([]float32, 6*16)
	for range b.N {
		gemm6x16(&c[0], 16, &a[0], 256, 1, &w[0], 16, 256)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/256, "ns/k")
}
