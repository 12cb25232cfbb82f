package train

import (
	"math"
	"math/rand/v2"
	"runtime"
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
		"basic, small stem":    {EncoderSpec{Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{1, 2}}, []int{3, 12, 12}},
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
			size := shape[0] * shape[1] * shape[2]
			d := &Data{Shape: shape, X: make([]float32, 5*size), Y: make([]int64, 5)}
			for i := range d.X {
				d.X[i] = float32(r.NormFloat64())
			}
			g, err := newGraphExtractor(enc, ps, w, shape, 5)
			if err != nil {
				t.Fatal(err)
			}
			want, err := g.run(d)
			g.close()
			if err != nil {
				t.Fatal(err)
			}
			for _, workers := range []int{1, 2} {
				prev := runtime.GOMAXPROCS(workers)
				x, err := newExtractor(enc, w, shape, 5)
				if err != nil {
					t.Fatal(err)
				}
				if x.direct == nil {
					t.Fatal("newExtractor did not take the direct pass")
				}
				got, err := x.run(d)
				runtime.GOMAXPROCS(prev)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) || x.dim != g.dim {
					t.Fatalf("%d values (dim %d), want %d (dim %d)", len(got), x.dim, len(want), g.dim)
				}
				for i := range want {
					if diff := math.Abs(float64(got[i] - want[i])); diff > 1e-5*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%d workers: feature %d: %v, the graph gives %v", workers, i, got[i], want[i])
					}
				}
			}
		})
	}
}
