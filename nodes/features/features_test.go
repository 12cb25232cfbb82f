package features

import (
	"context"
	"math"
	"testing"

	"github.com/gatepipe/gatepipe/nodes/nodetest"
	"github.com/gatepipe/gatepipe/nodes/specs"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/train"
)

// TestGoFeaturesStreamInBatches computes a split's features on the Go
// runtime reading the memory-mapped store a batch at a time (here two
// images, then one at a time) and in one batch: the stores agree.
func TestGoFeaturesStreamInBatches(t *testing.T) {
	enc := train.EncoderSpec{Arch: "convnet", Channels: []int{4, 8}, Hidden: []int{6}}
	store := imageStore(t, 7, 3, 10, 12)
	weights := randomWeights(t, enc, []int{3, 10, 12}, 1)
	var got [][]float32
	for _, batchBytes := range []int{0, 2 * 3 * 10 * 12 * 4, 1} {
		n := &Node{enc: enc, weights: specs.Weights(weights), dataset: store, rt: torchrt.Options{Runtime: torchrt.Go}, batchBytes: batchBytes}
		env := nodetest.Env(t)
		if _, err := n.Run(context.Background(), env); err != nil {
			t.Fatal(err)
		}
		x, shape := readFeatures(t, env.OutDir)
		if shape[0] != 7 || shape[1] != 6 {
			t.Fatalf("features of shape %v", shape)
		}
		got = append(got, x)
	}
	for k := 1; k < len(got); k++ {
		for i := range got[0] {
			if d := math.Abs(float64(got[k][i] - got[0][i])); d > 1e-5*(1+math.Abs(float64(got[0][i]))) {
				t.Fatalf("batched run %d: feature %d is %g, one batch gives %g", k, i, got[k][i], got[0][i])
			}
		}
	}
}
