package train

import (
	"math/rand/v2"
	"testing"
)

// TestResNetDirectFeaturesMatchTheGraph: the direct ResNet feature pass
// gives the frozen graph's features (held to torchvision's by the parity
// tests) for basic and bottleneck blocks, both stems, grouped
// convolutions and non-square images, with one and two workers.
func TestResNetDirectFeaturesMatchTheGraph(t *testing.T) {
	cases := map[string]struct {
		enc   EncoderSpec
		shape []int
	}{
		"basic, small stem": {EncoderSpec{Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{1, 2}}, []int{3, 12, 12}},
		// 1,600 columns a layer-1 image: each image alone in its products.
		"basic, large images":  {EncoderSpec{Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{1, 1}}, []int{3, 40, 40}},
		"bottleneck, imagenet": {EncoderSpec{Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{2, 1}, Block: "bottleneck", Stem: "imagenet"}, []int{3, 32, 24}},
		"resnext groups":       {EncoderSpec{Arch: "resnet", Channels: []int{16, 16}, Blocks: []int{1, 1}, Block: "bottleneck", Stem: "imagenet", Groups: 4, WidthPerGroup: 16}, []int{1, 20, 20}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			enc, shape := tc.enc, tc.shape
			if !canRunResNetDirect(enc, shape) {
				t.Fatal("the direct pass does not take this ResNet")
			}
			ps, err := newParams(enc, Classification, shape, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(5, 5))
			w := Weights{}
			for _, p := range ps {
				v := make([]float32, len(p.init))
				for i := range v {
					v[i] = float32(r.NormFloat64() * 0.3)
					if len(p.name) > 12 && p.name[len(p.name)-12:] == "running_var" {
						v[i] = 0.5 + r.Float32()
					}
				}
				w[p.name] = v
			}
			directMatchesGraph(t, enc, ps, w, shape, r)
		})
	}
}
