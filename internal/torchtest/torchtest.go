// Package torchtest gives tests the Python with PyTorch they run the torch
// runtime and trainer with: $GATEPIPE_TEST_PYTHON (a GPU machine's), else
// Debian's /usr/bin/python3, which make test provides.
package torchtest

import (
	"os"
	"os/exec"
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
