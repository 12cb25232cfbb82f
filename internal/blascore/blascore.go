// Package blascore chooses the OpenBLAS kernel set ("core type") for the
// CPU gatepipe runs on, where OpenBLAS's own detection falls short.
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from the
// CPU's vendor, family and model. Debian's 0.3.21 does not know AMD's
// Zen 4 and Zen 5, which have AVX-512, and gives them the AVX2 Haswell
// kernels: on this project's Zen 5 machine the training's single-precision
// products run 1.3-2.4x slower than with the AVX-512 ones. Later releases
// give such CPUs the Cooperlake kernels (SkylakeX's, plus bfloat16) when
// they have AVX512-BF16 and SkylakeX's otherwise; Choose makes the same
// choice from the CPU's features, whatever the installed release.
package blascore

import "golang.org/x/sys/cpu"

// EnvVar is the variable OpenBLAS reads its core type from when it loads.
const EnvVar = "OPENBLAS_CORETYPE"

// Features are the CPU features the choice depends on.
type Features struct {
	// AVX512 is AVX512 F, CD, BW, DQ and VL together (what OpenBLAS's
	// SkylakeX kernels use), enabled by the operating system.
	AVX512 bool
	// BF16 is AVX512-BF16.
	BF16 bool
}

// Host returns the running CPU's features.
func Host() Features {
	x := cpu.X86
	avx512 := x.HasAVX512F && x.HasAVX512CD && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL
	return Features{AVX512: avx512, BF16: avx512 && x.HasAVX512BF16}
}

// Best returns the core type whose kernels suit a CPU with features f
// best where OpenBLAS may not know it, or "" where every release already
// picks the best kernels it has (CPUs without AVX-512).
func Best(f Features) string {
	switch {
	case !f.AVX512:
		return ""
	case f.BF16:
		return "Cooperlake"
	default:
		return "SkylakeX"
	}
}

// Choose returns the core type to load OpenBLAS with, or "" to leave the
// choice to OpenBLAS: Best(f), unless the user set one (env is EnvVar's
// value), which stands.
func Choose(f Features, env string) string {
	if env != "" {
		return ""
	}
	return Best(f)
}

// BestEnv returns the assignment EnvVar=Best(Host()), or nil when there
// is nothing to set: for benchmarks that run gatepipe and its peers on the
// best kernels whatever the environment says.
func BestEnv() []string {
	if core := Best(Host()); core != "" {
		return []string{EnvVar + "=" + core}
	}
	return nil
}
