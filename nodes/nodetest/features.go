package nodetest

import (
	"math/rand/v2"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/torchtest"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
)

// SplitSize names a split of a generated store and its example count.
type SplitSize struct {
	Name string
	N    int
}

// FeatureStore writes a store of feature vectors [d] in classes classes:
// example i is of class i mod classes, Gaussian noise plus shift on the
// dimensions j with j mod classes equal to its class (so the classes
// overlap more or less), drawn from seed split after split. It returns
// the store's directory.
func FeatureStore(t testing.TB, d, classes int, shift float64, seed uint64, splits ...SplitSize) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	out := map[string]*examplestore.Split{}
	for _, s := range splits {
		x, y, idx := make([]float32, s.N*d), make([]int64, s.N), make([]int64, s.N)
		for i := range s.N {
			y[i], idx[i] = int64(i%classes), int64(i)
			for j := range d {
				x[i*d+j] = float32(rng.NormFloat64())
				if j%classes == i%classes {
					x[i*d+j] += float32(shift)
				}
			}
		}
		out[s.Name] = &examplestore.Split{X: safetensors.F32Tensor("x", []int{s.N, d}, x), Y: safetensors.I64Tensor("y", []int{s.N}, y), Index: idx}
	}
	meta := &examplestore.Meta{Format: "features", Task: "classification", NumClasses: classes, Shape: []int{d}, DType: "F32",
		Normalize: examplestore.Normalization{Scale: 1, Mean: make([]float64, d), Std: make([]float64, d)}}
	if err := examplestore.Write(dir, meta, out); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Env is a node's environment in a test: an empty output directory, no
// log or progress, two CPUs and the torch tests' GPUs (torchtest.GPUs).
func Env(t testing.TB) *nodes.Env {
	return &nodes.Env{OutDir: t.TempDir(), Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 2, GPUs: torchtest.GPUs()}}
}
