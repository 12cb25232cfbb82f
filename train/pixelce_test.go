package train

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// pixelLoss runs one loss graph on maps z [B, K, h, w] and returns the
// loss and its gradient with respect to z. fused: pixelCrossEntropy
// against the classes; else the graph it replaces (upsample, transposes,
// log-softmax against one-hot targets).
func pixelLoss(t *testing.T, fused bool, z []float32, classes []int, s []int, height, width int) (float64, []float32, error) {
	t.Helper()
	b := &builder{declared: map[string]*param{}}
	var zn, loss *G.Node
	err := b.try(func() {
		b.g = G.NewGraph()
		zn = G.NewTensor(b.g, tensor.Float32, 4, G.WithShape(s...), G.WithName("z"),
			G.WithValue(tensor.New(tensor.WithShape(s...), tensor.WithBacking(append([]float32(nil), z...)))))
		n, k, pixels := s[0], s[1], height*width
		if fused {
			y := make([]float32, n*pixels)
			for i, c := range classes {
				y[i] = float32(c)
			}
			loss = b.pixelCrossEntropy(zn, b.constant([]int{n, pixels}, y), height, width)
			return
		}
		up := b.upsample(zn, n*k, height, width)
		up = b.must(G.Transpose(b.must(G.Reshape(up, tensor.Shape{n, k, pixels})), 0, 2, 1))
		up = b.must(G.Reshape(up, tensor.Shape{n * pixels, k}))
		y := make([]float32, n*pixels*k)
		for i, c := range classes {
			y[i*k+c] = 1
		}
		_, loss = crossEntropyOn(b, up, b.constant([]int{n * pixels, k}, y), n*pixels)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(loss, zn); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(b.g, G.BindDualValues(zn))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return 0, nil, err
	}
	g, err := zn.Grad()
	if err != nil {
		t.Fatal(err)
	}
	return float64(loss.Value().Data().(float32)), append([]float32(nil), g.Data().([]float32)...), nil
}

// TestPixelCrossEntropyEqualsTheGraph: the fused loss and its gradient
// equal the graph it replaces, upsampling up (by whole and fractional
// factors, edges clamped) and at the maps' own size.
func TestPixelCrossEntropyEqualsTheGraph(t *testing.T) {
	for _, c := range []struct {
		name          string
		shape         []int // [B, K, h, w]
		height, width int
	}{
		{"x4", []int{2, 5, 3, 4}, 12, 16},
		{"fractional", []int{2, 4, 3, 5}, 7, 9},
		{"same size", []int{1, 3, 4, 4}, 4, 4},
		{"one class map pixel", []int{2, 3, 1, 1}, 3, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			z := make([]float32, prod(c.shape))
			for i := range z {
				z[i] = float32(2 * rng.NormFloat64())
			}
			classes := make([]int, c.shape[0]*c.height*c.width)
			for i := range classes {
				classes[i] = rng.IntN(c.shape[1])
			}
			want, wantGrad, err := pixelLoss(t, false, z, classes, c.shape, c.height, c.width)
			if err != nil {
				t.Fatal(err)
			}
			got, gotGrad, err := pixelLoss(t, true, z, classes, c.shape, c.height, c.width)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("loss %.7f, the graph's %.7f", got, want)
			}
			if len(gotGrad) != len(wantGrad) {
				t.Fatalf("%d gradient values, want %d", len(gotGrad), len(wantGrad))
			}
			var worst float64
			for i := range gotGrad {
				worst = max(worst, math.Abs(float64(gotGrad[i]-wantGrad[i])))
			}
			if worst > 1e-6 {
				t.Errorf("gradient differs from the graph's by up to %g", worst)
			}
		})
	}
}

// TestPixelCrossEntropyRejectsAClassOutOfRange: a mask value past the
// classes is an error naming the pixel, not a read past the scores.
func TestPixelCrossEntropyRejectsAClassOutOfRange(t *testing.T) {
	s := []int{1, 3, 2, 2}
	classes := []int{0, 1, 2, 3} // 3 is not a class of three
	_, _, err := pixelLoss(t, true, make([]float32, prod(s)), classes, s, 2, 2)
	if err == nil || !strings.Contains(err.Error(), "not a class of 0..2") || !strings.Contains(err.Error(), "pixel (1, 1)") {
		t.Fatalf("err = %v, want the pixel and the classes", err)
	}
}

// TestSegmentationEvalBatchFollowsTheHead: an evaluation batch of
// segmentation holds at most segmentationOutputs class scores whether or
// not the store names its classes (ADE20K's Parquet names none: batches
// of 16 images held 485 MB a value at 151 classes and 224 px).
func TestSegmentationEvalBatchFollowsTheHead(t *testing.T) {
	for _, c := range []struct {
		name    string
		d       Data
		outputs int
		want    int
	}{
		{"ade20k, no names", Data{Task: Segmentation, Shape: []int{3, 224, 224}}, 151, 2},
		{"ade20k, names", Data{Task: Segmentation, Shape: []int{3, 224, 224}, ClassNames: make([]string, 151)}, 151, 2},
		{"small maps", Data{Task: Segmentation, Shape: []int{1, 16, 16}}, 4, 250},
		{"classification", Data{Shape: []int{3, 224, 224}}, 1000, 16},
	} {
		if got := c.d.evalBatchFor(c.outputs); got != c.want {
			t.Errorf("%s: evaluation batch %d, want %d", c.name, got, c.want)
		}
		if scores := c.d.evalBatchFor(c.outputs) * c.d.pixels() * c.outputs; c.d.Task == Segmentation && c.want > 1 && scores > segmentationOutputs {
			t.Errorf("%s: %d class scores a batch", c.name, scores)
		}
	}
}

// TestPixelSoftmaxEqualsTheGraph: the fused per-pixel probabilities equal
// the exponential of the upsampled maps' log-softmax, pixel-major.
func TestPixelSoftmaxEqualsTheGraph(t *testing.T) {
	s, height, width := []int{2, 4, 3, 5}, 7, 9
	probs := func(fused bool, z []float32) []float32 {
		b := &builder{declared: map[string]*param{}}
		var out *G.Node
		if err := b.try(func() {
			b.g = G.NewGraph()
			zn := G.NewTensor(b.g, tensor.Float32, 4, G.WithShape(s...), G.WithName("z"),
				G.WithValue(tensor.New(tensor.WithShape(s...), tensor.WithBacking(append([]float32(nil), z...)))))
			if fused {
				out = b.pixelSoftmax(zn, height, width)
				return
			}
			n, k := s[0], s[1]
			up := b.upsample(zn, n*k, height, width)
			up = b.must(G.Transpose(b.must(G.Reshape(up, tensor.Shape{n, k, height * width})), 0, 2, 1))
			out = b.must(G.Exp(b.logSoftmax(b.must(G.Reshape(up, tensor.Shape{n * height * width, k})))))
		}); err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(b.g)
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), out.Value().Data().([]float32)...)
	}
	rng := rand.New(rand.NewPCG(8, 9))
	z := make([]float32, prod(s))
	for i := range z {
		z[i] = float32(3 * rng.NormFloat64())
	}
	got, want := probs(true, z), probs(false, z)
	if len(got) != len(want) || len(got) != s[0]*height*width*s[1] {
		t.Fatalf("%d probabilities, want %d", len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("probability %d: %v, the graph's %v", i, got[i], want[i])
		}
	}
}
