package train

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// blobs makes n [1, 8, 8] images of 3 classes: class c brightens row band c.
func blobs(n int, seed uint64) *Data {
	r := rand.New(rand.NewPCG(seed, 1))
	d := &Data{Shape: []int{1, 8, 8}}
	for i := 0; i < n; i++ {
		c := i % 3
		for y := 0; y < 8; y++ {
			for x := 0; x < 8; x++ {
				v := float32(r.NormFloat64() * 0.5)
				if y/3 == c {
					v += 1.5
				}
				d.X = append(d.X, v)
			}
		}
		d.Y = append(d.Y, int64(c))
	}
	return d
}

func TestEncodersLearn(t *testing.T) {
	for _, enc := range []EncoderSpec{{Arch: "mlp", Hidden: []int{16}}, {Arch: "convnet", Channels: []int{4}, Hidden: []int{16}},
		{Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{1, 1}}, {Arch: "vit", Patch: 4, Dim: 16, Depth: 1, Heads: 2, MLPRatio: 2}} {
		t.Run(enc.Arch, func(t *testing.T) {
			rec := Recipe{LR: 0.01, WeightDecay: 0.01, BatchSize: 16, Iterations: 60, ValidateEvery: 20, TopK: 2, PlateauFactor: 0.5, PlateauPatience: 3, PlateauThreshold: 1e-4}
			var logged int
			res, err := Train(context.Background(), enc, nil, 3, rec, blobs(120, 1), blobs(60, 2), blobs(90, 3), func(LogEntry) { logged++ }, nil, Resume{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Metrics["acc1"] < 90 || len(res.Checkpoints) != 2 || logged == 0 {
				t.Fatalf("metrics %v, %d checkpoints, %d log entries", res.Metrics, len(res.Checkpoints), logged)
			}
		})
	}
}

func TestSeedsMakeRunsReproducible(t *testing.T) {
	enc := EncoderSpec{Arch: "mlp", Hidden: []int{8}}
	rec := Recipe{LR: 0.01, BatchSize: 8, Iterations: 20, ValidateEvery: 10, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3, Seed: 7}
	a, err := Train(context.Background(), enc, nil, 3, rec, blobs(60, 1), blobs(30, 2), blobs(30, 3), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Train(context.Background(), enc, nil, 3, rec, blobs(60, 1), blobs(30, 2), blobs(30, 3), nil, nil, Resume{})
	if a.Metrics["loss"] != b.Metrics["loss"] {
		t.Fatalf("same seed, different results: %v vs %v", a.Metrics, b.Metrics)
	}
}

func TestDivergenceNamesTheIteration(t *testing.T) {
	enc := EncoderSpec{Arch: "mlp", Hidden: []int{8}}
	rec := Recipe{LR: 1e30, BatchSize: 8, Iterations: 50, ValidateEvery: 100, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3}
	_, err := Train(context.Background(), enc, nil, 3, rec, blobs(60, 1), blobs(30, 2), blobs(30, 3), nil, nil, Resume{})
	if err == nil || !contains(err.Error(), "diverged") || !contains(err.Error(), "iteration") {
		t.Fatalf("err = %v", err)
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (s == sub || len(sub) == 0 || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestCheckpointsReload: a run's best checkpoint (batch-norm running
// statistics included) loads back as initial weights through the same
// safetensors matching as a PyTorch export, and reproduces its accuracy
// before any further step.
func TestCheckpointsReload(t *testing.T) {
	enc := EncoderSpec{Arch: "resnet", Channels: []int{4}, Blocks: []int{1}}
	rec := Recipe{LR: 0.01, BatchSize: 16, Iterations: 40, ValidateEvery: 20, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3}
	res, err := Train(context.Background(), enc, nil, 3, rec, blobs(120, 1), blobs(60, 2), blobs(90, 3), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for name, v := range res.Checkpoints[0].Values {
		ts = append(ts, safetensors.F32Tensor(name, res.Checkpoints[0].Shapes[name], v))
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, nil); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Parse(buf.Bytes(), "checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Tensors["encoder.bn1.running_var"]; !ok {
		t.Fatal("checkpoint lacks the batch-norm running statistics")
	}
	w, _, err := MatchWeights(enc, Classification, []int{1, 8, 8}, 3, f)
	if err != nil {
		t.Fatal(err)
	}
	test := blobs(90, 3)
	params, _ := newParams(enc, Classification, test.Shape, 3, 0)
	again, _, err := evaluate(enc, params, 3, test, []map[string][]float32{w}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(again["loss"]-res.Metrics["loss"]) > 1e-6 {
		t.Fatalf("reloaded checkpoint: test loss %v, the run reported %v", again["loss"], res.Metrics["loss"])
	}
}

// TestLinearProbeFreezesTheEncoder: with LinearProbe, a ResNet's weights
// and batch-norm statistics come out as they went in; only the head moves,
// and a probe on trained features still classifies.
func TestLinearProbeFreezesTheEncoder(t *testing.T) {
	enc := EncoderSpec{Arch: "resnet", Channels: []int{4}, Blocks: []int{1}}
	rec := Recipe{LR: 0.01, BatchSize: 16, Iterations: 40, ValidateEvery: 20, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3}
	pre, err := Train(context.Background(), enc, nil, 3, rec, blobs(120, 1), blobs(60, 2), blobs(90, 3), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	init := Weights{}
	for k, v := range pre.Checkpoints[0].Values {
		if !strings.HasPrefix(k, "head.") {
			init[k] = v
		}
	}
	rec.LinearProbe, rec.Seed = true, 5
	probe, err := Train(context.Background(), enc, init, 3, rec, blobs(120, 4), blobs(60, 5), blobs(90, 6), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	after := probe.Checkpoints[0].Values
	for k, v := range init {
		if !slices.Equal(after[k], v) {
			t.Fatalf("%s changed under a linear probe", k)
		}
	}
	if probe.Metrics["acc1"] < 90 {
		t.Errorf("probe %v", probe.Metrics)
	}
}

// TestTopFiveOnlyWithMoreThanFiveClasses: Acc@5 is reported only where it
// can be below 100.
func TestTopFiveOnlyWithMoreThanFiveClasses(t *testing.T) {
	for _, classes := range []int{2, 5, 6} {
		d := &Data{Y: []int64{0, 1}}
		probs := [][]float32{make([]float32, classes), make([]float32, classes)}
		probs[0][0], probs[1][0] = 1, 1
		_, has := classificationMetrics(d, probs)["acc5"]
		if has != (classes > 5) {
			t.Errorf("%d classes: acc5 reported %v", classes, has)
		}
	}
}

// TestProgressNamesItsPhase: progress says when a run validates and when
// it tests its kept sets, not only how many iterations are done (a bar
// used to sit at 250/250 while the test split was evaluated).
func TestProgressNamesItsPhase(t *testing.T) {
	enc := EncoderSpec{Arch: "mlp", Hidden: []int{8}}
	rec := Recipe{LR: 0.01, BatchSize: 8, Iterations: 6, ValidateEvery: 3, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3}
	var phases []string
	_, err := Train(context.Background(), enc, nil, 3, rec, blobs(30, 1), blobs(15, 2), blobs(15, 3), nil,
		func(done, total int64, phase string) {
			if n := len(phases); n == 0 || phases[n-1] != phase {
				phases = append(phases, phase)
			}
		}, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{PhaseTraining, PhaseValidating, PhaseTraining, PhaseValidating, PhaseTesting}
	if strings.Join(phases, " ") != strings.Join(want, " ") {
		t.Fatalf("phases %v, want %v", phases, want)
	}
}
