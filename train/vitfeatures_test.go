package train

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestViTDirectFeaturesMatchTheGraph: the direct ViT feature pass gives
// the graph's features (the graph is held to PyTorch's by the parity
// tests) for every ViT option it covers, on random weights, with one and
// two workers.
func TestViTDirectFeaturesMatchTheGraph(t *testing.T) {
	base := EncoderSpec{Arch: "vit", Patch: 4, Dim: 24, Depth: 2, Heads: 3, MLPRatio: 2}
	cases := map[string]func(e *EncoderSpec){
		"token pool":         func(e *EncoderSpec) {},
		"avg pool":           func(e *EncoderSpec) { e.Pool = "avg" },
		"no class token":     func(e *EncoderSpec) { e.Pool, e.NoClassToken = "avg", true },
		"embed without cls":  func(e *EncoderSpec) { e.NoEmbedClass = true },
		"norm_pre":           func(e *EncoderSpec) { e.NormPre = true },
		"layer scale":        func(e *EncoderSpec) { e.LayerScale = true },
		"gelu tanh":          func(e *EncoderSpec) { e.Act = GELUTanh },
		"quick gelu":         func(e *EncoderSpec) { e.Act = QuickGELU },
		"no patch bias":      func(e *EncoderSpec) { e.NoPatchBias = true },
		"dense layers after": func(e *EncoderSpec) { e.Hidden = []int{16, 8} },
		"ln eps":             func(e *EncoderSpec) { e.LNEps = 1e-5 },
	}
	shape := []int{3, 16, 16}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			enc := base
			change(&enc)
			if !canRunViTDirect(enc, shape) {
				t.Fatal("the direct pass does not take this ViT")
			}
			ps, err := newParams(enc, Classification, shape, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Random weights everywhere (LayerScale's 1e-5 and the zero
			// biases would hide a missing term).
			r := rand.New(rand.NewPCG(4, 4))
			w := Weights{}
			for _, p := range ps {
				v := make([]float32, len(p.init))
				for i := range v {
					v[i] = float32(r.NormFloat64() * 0.2)
				}
				w[p.name] = v
			}
			directMatchesGraph(t, enc, ps, w, shape, r)
		})
	}
}

// directMatchesGraph checks that newExtractor takes a direct pass for enc
// and that it gives the frozen graph's features (1e-5 relative) for five
// random images, with two, one and again two workers on one extractor
// (a worker's buffers from smaller groups grow for larger ones).
func directMatchesGraph(t *testing.T, enc EncoderSpec, ps []*param, w Weights, shape []int, r *rand.Rand) {
	t.Helper()
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
	x, err := newExtractor(enc, w, shape, 5)
	if err != nil {
		t.Fatal(err)
	}
	if x.direct == nil {
		t.Fatal("newExtractor did not take the direct pass")
	}
	for _, workers := range []int{2, 1, 2} {
		prev := runtime.GOMAXPROCS(workers)
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
}
