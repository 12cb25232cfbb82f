package eevee

import (
	"os"
	"testing"
)

// longTest skips t, evidence on the paper's matrix that takes minutes on
// two cores, unless GATEPIPE_LONG_TESTS=1 (`make bench` sets it); -short
// skips it too. make test stays within its time so.
func longTest(t *testing.T, what string) {
	t.Helper()
	if testing.Short() || os.Getenv("GATEPIPE_LONG_TESTS") != "1" {
		t.Skipf("%s: minutes on two cores; GATEPIPE_LONG_TESTS=1 (make bench) runs it", what)
	}
}
