package peer

import (
	"slices"
	"testing"

	"github.com/gatepipe/gatepipe/internal/blascore"
)

func TestTorchEnvReplacesInherited(t *testing.T) {
	got := withEnv([]string{"PATH=/bin", "OMP_NUM_THREADS=8", "OPENBLAS_NUM_THREADS=4"}, TorchEnv(2))
	for _, want := range []string{"PATH=/bin", "OMP_NUM_THREADS=2", "OPENBLAS_NUM_THREADS=1", "MALLOC_MMAP_THRESHOLD_=1000000000", "MALLOC_TRIM_THRESHOLD_=1000000000"} {
		if !slices.Contains(got, want) {
			t.Errorf("env lacks %s: %v", want, got)
		}
	}
	if slices.Contains(got, "OMP_NUM_THREADS=8") || slices.Contains(got, "OPENBLAS_NUM_THREADS=4") {
		t.Errorf("inherited thread settings kept: %v", got)
	}
}

func TestTorchEnvLoadsBestBLASKernels(t *testing.T) {
	got := withEnv([]string{"OPENBLAS_CORETYPE=Haswell"}, TorchEnv(1))
	best := blascore.Best(blascore.Host())
	if best == "" {
		t.Skip("no AVX-512 here: OpenBLAS picks its kernels itself")
	}
	if !slices.Contains(got, "OPENBLAS_CORETYPE="+best) || slices.Contains(got, "OPENBLAS_CORETYPE=Haswell") {
		t.Errorf("env %v: want OPENBLAS_CORETYPE=%s in place of the inherited Haswell", got, best)
	}
}
