// Package peer runs the reference implementations gatepipe's benchmarks
// compare with, configured as their experts run them, and says how.
package peer

import (
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/internal/blascore"
)

// TorchEnv is the environment of a best-configured PyTorch CPU run on
// threads threads: OpenMP at that many threads, OpenBLAS single-threaded
// (PyTorch parallelises above it; a second OpenBLAS thread per OpenMP
// thread oversubscribes the cores), and glibc's malloc kept from returning
// and re-mapping large buffers every step. On a CPU with AVX-512 it also
// loads OpenBLAS (PyTorch's linear layers) with its AVX-512 kernels,
// whatever the inherited OPENBLAS_CORETYPE says (blascore.BestEnv); its
// convolutions run in oneDNN, which picks AVX-512 itself.
func TorchEnv(threads int) []string {
	t := strconv.Itoa(threads)
	return append([]string{
		"OMP_NUM_THREADS=" + t,
		"OPENBLAS_NUM_THREADS=1",
		"MALLOC_MMAP_THRESHOLD_=1000000000",
		"MALLOC_TRIM_THRESHOLD_=1000000000",
	}, blascore.BestEnv()...)
}

// HasTorch reports whether Debian's python3-torch is importable.
func HasTorch() bool {
	return exec.Command("/usr/bin/python3", "-c", "import torch").Run() == nil
}

// Torch returns a command running a Python reference script with
// /usr/bin/python3 under TorchEnv(threads) (replacing any inherited value
// of those variables).
func Torch(threads int, script string, args ...string) *exec.Cmd {
	cmd := exec.Command("/usr/bin/python3", append([]string{script}, args...)...)
	cmd.Env = withEnv(os.Environ(), TorchEnv(threads))
	return cmd
}

// Describe prints an environment as a shell prefix, for beside a figure.
func Describe(env []string) string { return strings.Join(env, " ") }

func withEnv(base, set []string) []string {
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, s := range set {
			if n, _, _ := strings.Cut(s, "="); n == name {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// HasTorchvision reports whether Debian's python3-torchvision is
// importable.
func HasTorchvision() bool {
	return exec.Command("/usr/bin/python3", "-c", "import torchvision").Run() == nil
}
