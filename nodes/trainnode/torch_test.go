package trainnode

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/train"
)

// writePred writes the worker's segmentation output: I32 best and F32
// ptrue, one value a pixel.
func writePred(t *testing.T, path string, best []int32, ptrue []float32) {
	t.Helper()
	bb, pb := make([]byte, 4*len(best)), make([]byte, 4*len(ptrue))
	for i, v := range best {
		binary.LittleEndian.PutUint32(bb[4*i:], uint32(v))
	}
	for i, v := range ptrue {
		binary.LittleEndian.PutUint32(pb[4*i:], math.Float32bits(v))
	}
	err := safetensors.WriteFile(path, []safetensors.Tensor{
		{Name: "best", DType: safetensors.I32, Shape: []int{len(best)}, Data: bb},
		{Name: "ptrue", DType: safetensors.F32, Shape: []int{len(ptrue)}, Data: pb},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

// TestSegmentationMetricsFromTheMappedFile: the torch runtime's
// per-pixel predictions, read one example at a time from the mapped
// file, score as the whole arrays do; a file with too few pixels is an
// error.
func TestSegmentationMetricsFromTheMappedFile(t *testing.T) {
	// Three examples of 1x2x3: masks of classes 0..2.
	const n, pixels, classes = 3, 6, 3
	// Targets only, as the torch runtime's Go side loads its test split.
	d := &train.Data{Task: train.Segmentation, Shape: []int{1, 2, 3}}
	best, ptrue := make([]int32, n*pixels), make([]float32, n*pixels)
	for i := range n * pixels {
		d.Y = append(d.Y, int64(i%classes))
		best[i] = int32((i * 2) % classes)
		ptrue[i] = 0.1 + 0.8*float32(i%5)/4
	}
	// The same predictions held whole, scored example by example.
	whole := train.NewSegmentationScores(d, classes)
	for k := range n {
		if err := whole.Add(best[k*pixels:(k+1)*pixels], ptrue[k*pixels:(k+1)*pixels]); err != nil {
			t.Fatal(err)
		}
	}
	want, err := whole.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pred.safetensors")
	writePred(t, path, best, ptrue)
	got, err := segmentationMetricsFrom(path, d, classes)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) < 5 {
		t.Fatalf("metrics %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	writePred(t, path, best[:pixels*2], ptrue[:pixels*2])
	if _, err := segmentationMetricsFrom(path, d, classes); err == nil || !strings.Contains(err.Error(), "for 3 examples of 6 pixels") {
		t.Errorf("two examples' predictions for three: err = %v", err)
	}
}
