package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/imageops"
)

var (
	pretrainedOnce sync.Once
	pretrainedDir  string
	pretrainedErr  string
)

// pretrainedFixtures returns the directory of the torchvision fixtures
// (testdata/pretrained/make_pretrained.py), generating them on first use
// into the user cache directory (about 700 MB, reused while the script is
// unchanged), or skips the test saying why it cannot.
// GATEPIPE_PRETRAINED_FIXTURES names an existing directory instead. Under
// CI a missing torchvision fails the test (make test installs it), unless
// GATEPIPE_ALLOW_SKIP is set.
func pretrainedFixtures(t *testing.T) string {
	t.Helper()
	pretrainedOnce.Do(func() {
		if dir := os.Getenv("GATEPIPE_PRETRAINED_FIXTURES"); dir != "" {
			pretrainedDir = dir
			return
		}
		script, err := filepath.Abs(filepath.Join("testdata", "pretrained", "make_pretrained.py"))
		if err != nil {
			pretrainedErr = err.Error()
			return
		}
		// The script and the parity script it imports its writer from.
		var src []byte
		for _, f := range []string{script, filepath.Join(filepath.Dir(script), "..", "parity", "make_parity.py")} {
			b, err := os.ReadFile(f)
			if err != nil {
				pretrainedErr = err.Error()
				return
			}
			src = append(src, b...)
		}
		if err := exec.Command("/usr/bin/python3", "-c", "import torchvision").Run(); err != nil {
			pretrainedErr = "python3-torchvision is not installed (apt-get install python3-torchvision; make test installs it as root): the torchvision parity tests need it to build their fixtures"
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		sum := sha256.Sum256(src)
		dir := filepath.Join(cache, "gatepipe-test", "pretrained-"+hex.EncodeToString(sum[:6]))
		if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
			pretrainedDir = dir
			return
		}
		tmp := dir + ".tmp"
		_ = os.RemoveAll(tmp)
		out, err := exec.Command("/usr/bin/python3", script, tmp).CombinedOutput()
		if err != nil {
			pretrainedErr = "make_pretrained.py: " + err.Error() + "\n" + string(out)
			return
		}
		_ = os.WriteFile(filepath.Join(tmp, "done"), out, 0o644)
		_ = os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err != nil {
			pretrainedErr = err.Error()
			return
		}
		pretrainedDir = dir
	})
	if pretrainedErr != "" {
		if os.Getenv("CI") != "" && os.Getenv("GATEPIPE_ALLOW_SKIP") == "" {
			t.Fatal(pretrainedErr)
		}
		t.Skip(pretrainedErr)
	}
	return pretrainedDir
}

// closeRelative fails unless max|got - want| <= tol * max|want|.
func closeRelative(t *testing.T, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	var worst, scale float64
	for i := range got {
		worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
		scale = math.Max(scale, math.Abs(float64(want[i])))
	}
	if worst > tol*scale {
		t.Fatalf("max |gatepipe - torchvision| = %.3g, %.3g of the largest value (tolerance %g)\ngot  %v\nwant %v", worst, worst/scale, tol, got[:min(len(got), 10)], want[:min(len(want), 10)])
	}
	t.Logf("max abs difference %.3g (%.3g relative)", worst, worst/scale)
}

// TestTorchvisionParity loads torchvision's models (randomly initialised,
// made by make_pretrained.py) in torchvision's names, timm's names and
// BF16, and checks gatepipe's logits within 1e-4 relative.
func TestTorchvisionParity(t *testing.T) {
	if testing.Short() {
		t.Skip("full-size models: not in -short")
	}
	dir := pretrainedFixtures(t)
	for _, name := range []string{"resnet18", "resnet18_bf16", "resnet50", "resnext50_32x4d", "convnext_tiny", "convnext_tiny_timm", "vit_b_16", "vit_small_resized"} {
		t.Run(name, func(t *testing.T) {
			f, err := safetensors.ReadFile(filepath.Join(dir, name+".safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			var enc EncoderSpec
			if p := f.Metadata["preset"]; p != "" {
				if enc, err = Preset(p); err != nil {
					t.Fatal(err)
				}
			} else if err := json.Unmarshal([]byte(f.Metadata["spec"]), &enc); err != nil {
				t.Fatal(err)
			}
			classes, _ := strconv.Atoi(f.Metadata["classes"])
			in, want := f.Tensors["parity.input"], f.Tensors["parity.logits"]
			shape := in.Shape[1:]
			w, ignored, err := MatchWeights(enc, Classification, shape, classes, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range ignored {
				if n != "parity.input" && n != "parity.logits" && filepath.Ext(n) != ".num_batches_tracked" {
					t.Errorf("tensor %s was not used", n)
				}
			}
			got, err := Logits(enc, shape, classes, w, in.Float32s(), in.Shape[0])
			if err != nil {
				t.Fatal(err)
			}
			closeRelative(t, got, want.Float32s(), 1e-4)
			// The frozen path the features block runs (folded batch
			// norms, fused ReLUs) gives the same logits.
			frozen, err := logitsFromFeatures(enc, w, in.Float32s(), shape, classes)
			if err != nil {
				t.Fatal(err)
			}
			closeRelative(t, frozen, want.Float32s(), 1e-4)
		})
	}
}

// TestPreprocessMatchesTorchvision: Resize(antialias=True) + CenterCrop +
// Normalize on a float image, bilinear and bicubic, up and down.
func TestPreprocessMatchesTorchvision(t *testing.T) {
	dir := pretrainedFixtures(t)
	f, err := safetensors.ReadFile(filepath.Join(dir, "preprocess.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Interpolation string
		Resize, Crop  int
	}
	var mean, std []float32
	for k, v := range map[string]any{"cases": &cases, "mean": &mean, "std": &std} {
		if err := json.Unmarshal([]byte(f.Metadata[k]), v); err != nil {
			t.Fatal(err)
		}
	}
	in := f.Tensors["input"]
	c, h, w := in.Shape[0], in.Shape[1], in.Shape[2]
	for i, tc := range cases {
		interp, err := imageops.ParseInterpolation(tc.Interpolation)
		if err != nil {
			t.Fatal(err)
		}
		p := imageops.Preprocess{Size: [2]int{tc.Crop, tc.Crop}, ResizeTo: tc.Resize, Interpolation: interp, Mean: mean, Std: std, Channels: c}
		got, err := p.Apply(in.Float32s(), c, h, w)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tc.Interpolation+"_"+strconv.Itoa(tc.Resize), func(t *testing.T) {
			closeRelative(t, got, f.Tensors["case"+strconv.Itoa(i)].Float32s(), 1e-5)
		})
	}
}
