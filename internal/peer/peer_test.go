package peer

import (
	"slices"
	"testing"
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
