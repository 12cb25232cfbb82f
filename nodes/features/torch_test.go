package features

import (
	"context"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/imageops"
	"github.com/gatepipe/gatepipe/internal/torchtest"
	"github.com/gatepipe/gatepipe/nodes/nodetest"
	"github.com/gatepipe/gatepipe/nodes/specs"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/train"
)

// imageStore writes a classification store of n random uint8 images
// [c, h, w] and returns its directory.
func imageStore(t *testing.T, n, c, h, w int) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(n*c*h*w), 1))
	x := make([]byte, n*c*h*w)
	for i := range x {
		x[i] = byte(rng.IntN(256))
	}
	ys, idx := make([]int64, n), make([]int64, n)
	for i := range ys {
		ys[i], idx[i] = int64(i%3), int64(i)
	}
	mean, std := make([]float64, c), make([]float64, c)
	for i := range mean {
		mean[i], std[i] = 0.4+0.05*float64(i), 0.2+0.02*float64(i)
	}
	meta := &examplestore.Meta{Format: "test", Task: "classification", NumClasses: 3, Shape: []int{c, h, w}, DType: "U8",
		Normalize: examplestore.Normalization{Scale: 1.0 / 255, Mean: mean, Std: std}}
	split := &examplestore.Split{X: safetensors.Tensor{DType: safetensors.U8, Shape: []int{n, c, h, w}, Data: x},
		Y: safetensors.I64Tensor("y", []int{n}, ys), Index: idx}
	if err := examplestore.Write(dir, meta, map[string]*examplestore.Split{"test": split, "train": split}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// randomWeights writes weights for enc in gatepipe's names where every
// tensor is random (batch-norm variances positive), so that layer scales,
// GRN and running statistics all matter, and returns the file.
func randomWeights(t *testing.T, enc train.EncoderSpec, shape []int, classes int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "w.safetensors")
	if err := train.WriteWeights(p, enc, train.Classification, shape, classes, nil, 1); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var ts []safetensors.Tensor
	for name, x := range f.Tensors {
		v := x.Float32s()
		for i := range v {
			switch {
			case strings.HasSuffix(name, "running_var"):
				v[i] = 0.5 + rng.Float32()
			case strings.Contains(name, "gamma") || strings.Contains(name, "grn"):
				v[i] = 0.3 * float32(rng.NormFloat64())
			default:
				v[i] += 0.02 * float32(rng.NormFloat64())
			}
		}
		ts = append(ts, safetensors.F32Tensor(name, x.Shape, v))
	}
	if err := safetensors.WriteFile(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// readFeatures reads split "test" of a feature store.
func readFeatures(t *testing.T, dir string) ([]float32, []int) {
	t.Helper()
	s, err := examplestore.ReadSplit(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	return s.X.Float32s(), s.X.Shape
}

// TestTorchRuntimeMatchesGo runs the features block on both runtimes for
// every built-in architecture and its variants, on the same randomly
// filled weights, with and without an evaluation transform (antialiased
// bilinear and bicubic resizing, grey images repeated to RGB), and
// requires the feature stores to agree within 1e-4 relative to the
// features' scale.
func TestTorchRuntimeMatchesGo(t *testing.T) {
	torchtest.Need(t, "torch")
	preset := func(name string) train.EncoderSpec {
		p, err := train.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	small := func(name string, dims []int) train.EncoderSpec {
		p := preset(name)
		p.Channels = dims
		return p
	}
	avgViT := preset("vit_tiny_patch16_224")
	avgViT.Pool, avgViT.NoClassToken, avgViT.Depth = "avg", true, 2
	pre := &imageops.Preprocess{Size: [2]int{32, 32}, ResizeTo: 36, Interpolation: imageops.Bicubic, Mean: []float32{0.485, 0.456, 0.406}, Std: []float32{0.229, 0.224, 0.225}}
	grey := &imageops.Preprocess{Size: [2]int{32, 32}, CropPct: 0.9, Interpolation: imageops.Bilinear, Channels: 3}
	cases := []struct {
		name    string
		enc     train.EncoderSpec
		c, h, w int
		pre     *imageops.Preprocess
		classes int
	}{
		{"mlp", train.EncoderSpec{Arch: "mlp", Hidden: []int{16, 8}}, 3, 6, 6, nil, 0},
		{"convnet", train.EncoderSpec{Arch: "convnet", Channels: []int{4, 8}, Hidden: []int{12}}, 3, 16, 12, nil, 0},
		{"resnet18 (imagenet stem)", small("resnet18", []int{8, 16, 16, 32}), 3, 40, 48, pre, 0},
		{"resnext bottleneck, groups", small("resnext50_32x4d", []int{32, 32, 64, 64}), 3, 32, 32, nil, 0},
		{"resnet cifar stem", train.EncoderSpec{Arch: "resnet", Channels: []int{8, 16}, Blocks: []int{1, 2}}, 1, 12, 12, nil, 0},
		{"convnext v1", small("convnext_atto", []int{8, 16, 16, 32}), 3, 32, 32, nil, 0},
		{"convnext v2 (GRN)", small("convnextv2_atto", []int{8, 16, 16, 32}), 1, 36, 40, grey, 0},
		{"vit token", preset("vit_ti_16"), 3, 32, 32, nil, 0},
		{"deit3 (layer scale, no embed class)", preset("deit3_small_patch16_224"), 3, 32, 48, nil, 0},
		{"clip (norm_pre, quick_gelu)", preset("vit_base_patch32_clip_quickgelu_224"), 3, 64, 64, nil, 0},
		{"vit avg pool, no class token", avgViT, 3, 32, 32, nil, 0},
		{"probabilities", train.EncoderSpec{Arch: "convnet", Channels: []int{4}}, 3, 8, 8, nil, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each case starts its own workers: at once on a GPU
			// machine's 16 cores, rather than one after another (124 s of
			// the first GPU check).
			t.Parallel()
			store := imageStore(t, 5, tc.c, tc.h, tc.w)
			shape := []int{tc.c, tc.h, tc.w}
			if tc.pre != nil {
				shape = tc.pre.OutShape(tc.c)
			}
			weights := randomWeights(t, tc.enc, shape, max(tc.classes, 1))
			run := func(rt torchrt.Options) ([]float32, []int) {
				n := &Node{enc: tc.enc, weights: specs.Weights(weights), preprocess: tc.pre, dataset: store, classes: tc.classes, rt: rt, batch: 2}
				env := nodetest.Env(t)
				if _, err := n.Run(context.Background(), env); err != nil {
					t.Fatal(err)
				}
				return readFeatures(t, env.OutDir)
			}
			goX, goShape := run(torchrt.Options{Runtime: torchrt.Go})
			torchX, torchShape := run(torchrt.Options{Runtime: torchrt.Torch, Precision: "fp32", Python: torchtest.Python()})
			if len(goShape) != 2 || goShape[0] != torchShape[0] || goShape[1] != torchShape[1] {
				t.Fatalf("shapes: go %v, torch %v", goShape, torchShape)
			}
			scale := 0.0
			for _, v := range goX {
				scale = max(scale, math.Abs(float64(v)))
			}
			worst := 0.0
			for i := range goX {
				worst = max(worst, math.Abs(float64(goX[i]-torchX[i]))/scale)
			}
			if scale == 0 || worst > 1e-4 {
				t.Fatalf("torch features differ from Go's by %.2g of their scale %.3g (limit 1e-4)", worst, scale)
			}
			t.Logf("%v features, max difference %.2g of scale %.3g", goShape, worst, scale)
		})
	}
}

// TestLibraryEncoderMatchesGo: torchvision's own ResNet-18, built by name
// on the torch runtime (arch = "torchvision:resnet18") with a torchvision
// state dict, gives the features gatepipe's Go ResNet-18 computes from the
// same file (its names mapped to gatepipe's), within 1e-4 of their scale.
func TestLibraryEncoderMatchesGo(t *testing.T) {
	torchtest.Need(t, "torch", "torchvision")
	weights := filepath.Join(t.TempDir(), "resnet18.pth")
	script := `import sys, torch, torchvision
torch.manual_seed(5)
m = torchvision.models.resnet18()
for mod in m.modules():
    if isinstance(mod, torch.nn.BatchNorm2d):
        mod.running_mean.normal_(0, 0.1); mod.running_var.uniform_(0.5, 1.5)
        mod.weight.data.uniform_(0.5, 1.5); mod.bias.data.normal_(0, 0.1)
torch.save(m.state_dict(), sys.argv[1])`
	if out, err := exec.Command(torchtest.Python(), "-c", script, weights).CombinedOutput(); err != nil {
		t.Fatalf("writing torchvision weights: %v\n%s", err, out)
	}
	store := imageStore(t, 5, 3, 64, 64)
	preset, err := train.Preset("resnet18")
	if err != nil {
		t.Fatal(err)
	}
	run := func(enc train.EncoderSpec, rt torchrt.Options) ([]float32, []int) {
		n := &Node{enc: enc, weights: specs.Weights(weights), dataset: store, rt: rt, batch: 2}
		env := nodetest.Env(t)
		if _, err := n.Run(context.Background(), env); err != nil {
			t.Fatal(err)
		}
		return readFeatures(t, env.OutDir)
	}
	goX, goShape := run(preset, torchrt.Options{Runtime: torchrt.Go})
	torchX, torchShape := run(train.EncoderSpec{Arch: "torchvision:resnet18"}, torchrt.Options{Runtime: torchrt.Torch, Precision: "fp32", Python: torchtest.Python()})
	if len(goShape) != 2 || goShape[1] != 512 || goShape[0] != torchShape[0] || goShape[1] != torchShape[1] {
		t.Fatalf("shapes: go %v, torch %v", goShape, torchShape)
	}
	scale, worst := 0.0, 0.0
	for _, v := range goX {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i := range goX {
		worst = max(worst, math.Abs(float64(goX[i]-torchX[i]))/scale)
	}
	if scale == 0 || worst > 1e-4 {
		t.Fatalf("torchvision's ResNet-18 differs from Go's by %.2g of the features' scale %.3g (limit 1e-4)", worst, scale)
	}
	t.Logf("%v features, max difference %.2g of scale %.3g", goShape, worst, scale)
}
