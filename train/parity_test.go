package train

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// TestPyTorchParity loads each encoder's fixture (a PyTorch state_dict
// with an input and PyTorch's eval-mode logits, made by
// testdata/parity/make_parity.py) and checks the gorgonia forward pass
// matches within 1e-4.
func TestPyTorchParity(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "parity", "*.safetensors"))
	if err != nil || len(files) < len(Archs) {
		t.Fatalf("parity fixtures %v (%v): want at least one per arch", files, err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".safetensors")
		t.Run(name, func(t *testing.T) {
			f, err := safetensors.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var enc EncoderSpec
			if err := json.Unmarshal([]byte(f.Metadata["spec"]), &enc); err != nil {
				t.Fatal(err)
			}
			seen[enc.Arch] = true
			classes, _ := strconv.Atoi(f.Metadata["classes"])
			in, want := f.Tensors["parity.input"], f.Tensors["parity.logits"]
			shape := in.Shape[1:]
			w, ignored, err := MatchWeights(enc, Classification, shape, classes, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(ignored) != 2 {
				t.Errorf("ignored %v, want only the two parity tensors", ignored)
			}
			got, err := Logits(enc, shape, classes, w, in.Float32s(), in.Shape[0])
			if err != nil {
				t.Fatal(err)
			}
			exp := want.Float32s()
			if len(got) != len(exp) {
				t.Fatalf("%d logits, want %d", len(got), len(exp))
			}
			var worst float64
			for i := range got {
				worst = math.Max(worst, math.Abs(float64(got[i]-exp[i])))
			}
			if worst > 1e-4 {
				t.Fatalf("max |gorgonia - pytorch| = %g > 1e-4\ngot  %v\nwant %v", worst, got, exp)
			}
			t.Logf("max abs difference %.2g", worst)
		})
	}
	for _, arch := range Archs {
		if !seen[arch] {
			t.Errorf("no parity fixture for %s", arch)
		}
	}
}

func TestMatchWeightsNamesWhatIsWrong(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join("testdata", "parity", "convnet.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	// A wider first conv than the file holds, and a resnet with none of
	// its tensors.
	for _, enc := range []EncoderSpec{{Arch: "convnet", Channels: []int{5, 6}, Hidden: []int{12}}, {Arch: "resnet", Channels: []int{4}, Blocks: []int{1}}} {
		_, _, err := MatchWeights(enc, Classification, []int{3, 8, 8}, 5, f)
		if err == nil {
			t.Fatalf("%s: no error", enc.Arch)
		}
		t.Log(err)
	}
	// A different head (10 classes) is not an error: it starts fresh.
	w, ignored, err := MatchWeights(EncoderSpec{Arch: "convnet", Channels: []int{4, 6}, Hidden: []int{12}}, Classification, []int{3, 8, 8}, 10, f)
	if err != nil || w["head.weight"] != nil || len(ignored) != 4 {
		t.Fatalf("err %v, head %v, ignored %v", err, w["head.weight"] != nil, ignored)
	}
}

// TestFeaturesFeedTheHead: the pooled features Features returns, put
// through the fixture's head, give PyTorch's logits (for every
// architecture).
func TestFeaturesFeedTheHead(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "parity", "*.safetensors"))
	for _, file := range files {
		arch := strings.TrimSuffix(filepath.Base(file), ".safetensors")
		f, err := safetensors.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var enc EncoderSpec
		json.Unmarshal([]byte(f.Metadata["spec"]), &enc)
		in := f.Tensors["parity.input"]
		w, _, err := MatchWeights(enc, Classification, in.Shape[1:], 5, f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := logitsFromFeatures(enc, w, in.Float32s(), in.Shape[1:], 5)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		want := f.Tensors["parity.logits"].Float32s()
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-4 {
				t.Fatalf("%s: logit %d from features %v, PyTorch %v", arch, i, got[i], want[i])
			}
		}
	}
}

// logitsFromFeatures runs the frozen feature path (Features: folded batch
// norms, fused ReLUs, chunked batches) and applies the head's weights.
func logitsFromFeatures(enc EncoderSpec, w Weights, x []float32, shape []int, classes int) ([]float32, error) {
	feats, dim, err := Features(enc, w, &Data{X: x, Shape: shape})
	if err != nil {
		return nil, err
	}
	n := len(feats) / dim
	hw, hb := w["head.weight"], w["head.bias"]
	out := make([]float32, n*classes)
	for i := range n {
		for c := range classes {
			v := float64(hb[c])
			for k := range dim {
				v += float64(feats[i*dim+k]) * float64(hw[c*dim+k])
			}
			out[i*classes+c] = float32(v)
		}
	}
	return out, nil
}

// TestNonFiniteWeightsAreRefused: a checkpoint holding NaN or infinite
// values is refused when it is loaded, naming each tensor and how many
// of its values are bad; a model never starts from them.
func TestNonFiniteWeightsAreRefused(t *testing.T) {
	enc := EncoderSpec{Arch: "convnet", Channels: []int{4, 6}, Hidden: []int{12}}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name   string
		poison map[string]func(v []float32)
		want   []string
	}{
		{"one NaN in an encoder tensor", map[string]func([]float32){
			"encoder.convs.0.weight": func(v []float32) { v[3] = nan },
		}, []string{"1 tensor(s)", "encoder.convs.0.weight holds 1 NaN of 108 values"}},
		{"infinite and NaN values in two tensors, the head's among them", map[string]func([]float32){
			"encoder.convs.1.bias": func(v []float32) { v[0], v[1] = inf, -inf },
			"head.weight": func(v []float32) {
				for i := range v {
					v[i] = nan
				}
				v[0] = inf
			},
		}, []string{"2 tensor(s)", "encoder.convs.1.bias holds 2 infinite of 6 values", "head.weight holds 59 NaN and 1 infinite of 60 values"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := safetensors.ReadFile(filepath.Join("testdata", "parity", "convnet.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			var ts []safetensors.Tensor
			for name, tn := range f.Tensors {
				v := tn.Float32s()
				if p := tc.poison[name]; p != nil {
					p(v)
				}
				ts = append(ts, safetensors.F32Tensor(name, tn.Shape, v))
			}
			for name := range tc.poison {
				if f.Tensors[name] == nil {
					t.Fatalf("the fixture has no tensor %s", name)
				}
			}
			path := filepath.Join(t.TempDir(), "poisoned.safetensors")
			if err := safetensors.WriteFile(path, ts, nil); err != nil {
				t.Fatal(err)
			}
			g, err := safetensors.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = MatchWeights(enc, Classification, []int{3, 8, 8}, 5, g)
			if err == nil {
				t.Fatal("non-finite weights were loaded")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
