package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBuildRefusesWithoutOpenBLAS: on a machine where OpenBLAS cannot
// be found (a compiler that fails stands for a missing cblas.h), `make
// build` stops with the line that installs it instead of silently
// building a binary 10x slower; PORTABLE=1 builds that one on purpose.
func TestMakeBuildRefusesWithoutOpenBLAS(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, _ := filepath.Abs("../..")
	bin := filepath.Join(t.TempDir(), "gatepipe")
	cmd := exec.Command("make", "-s", "build", "CC=false", "DEPS_BLAS=", "BIN="+bin)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "sudo apt-get install libopenblas-dev") || !strings.Contains(string(out), "make build PORTABLE=1") {
		t.Fatalf("make build without OpenBLAS: err %v\n%s", err, out)
	}
	if _, err := exec.Command("test", "-e", bin).CombinedOutput(); err == nil {
		t.Fatal("a binary was built anyway")
	}
	cmd = exec.Command("make", "-n", "build", "CC=false", "DEPS_BLAS=", "BIN="+bin, "PORTABLE=1")
	cmd.Dir = root
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `go build -tags ""`) {
		t.Fatalf("make -n build PORTABLE=1: %v\n%s", err, out)
	}
}
