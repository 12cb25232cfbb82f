// Package torchtest gives tests the Python with PyTorch they run the torch
// runtime and trainer with: $GATEPIPE_TEST_PYTHON (a GPU machine's), else
// Debian's /usr/bin/python3, which make test provides.
package torchtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Python returns the interpreter tests use.
func Python() string {
	if p := os.Getenv("GATEPIPE_TEST_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// Need skips t (fails it in CI, where make test installs Debian's
// python3-torch and python3-torchvision) unless Python() imports modules
// (e.g. "torch", "torchvision").
func Need(t testing.TB, modules ...string) {
	t.Helper()
	if exec.Command(Python(), "-c", "import "+strings.Join(modules, ", ")).Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s with %s is needed (Debian: python3-torch, python3-torchvision)", Python(), strings.Join(modules, ", "))
		}
		t.Skipf("%s cannot import %s (set GATEPIPE_TEST_PYTHON)", Python(), strings.Join(modules, ", "))
	}
}

// CUDAEnv names the variable that runs the torch tests on GPUs: set to the
// number of GPUs to use (make gpu-check sets it where torch sees CUDA).
const CUDAEnv = "GATEPIPE_TEST_CUDA"

// GPUCount is the number of GPUs the torch tests run their blocks on: 0
// (CPU torch) unless $GATEPIPE_TEST_CUDA says more.
func GPUCount() int {
	n, err := strconv.Atoi(os.Getenv(CUDAEnv))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// GPUs is the device list of a node-level test's assignment: GPU "0" when
// GPUCount is at least 1, else none (CPU torch).
func GPUs() []string {
	if GPUCount() > 0 {
		return []string{"0"}
	}
	return nil
}
