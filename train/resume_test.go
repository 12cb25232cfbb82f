package train

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumedRunEqualsUninterruptedRun: a run saved at an iteration,
// written to a file, read back and continued ends with the same
// parameters, bit for bit, and the same test metrics as a run that never
// stopped (batch norms, the plateau scheduler and the kept top-k sets
// included).
func TestResumedRunEqualsUninterruptedRun(t *testing.T) {
	for _, enc := range []EncoderSpec{{Arch: "mlp", Hidden: []int{16}}, {Arch: "resnet", Channels: []int{4, 8}, Blocks: []int{1, 1}},
		{Arch: "vit", Patch: 4, Dim: 16, Depth: 1, Heads: 2, MLPRatio: 2}} {
		t.Run(enc.Arch, func(t *testing.T) {
			rec := Recipe{LR: 0.01, WeightDecay: 0.01, BatchSize: 16, Iterations: 50, ValidateEvery: 10, TopK: 2,
				PlateauFactor: 0.5, PlateauPatience: 0, PlateauThreshold: 0.99, Seed: 3}
			dir := t.TempDir()
			saved := map[int]string{}
			save := func(s *State) error {
				p := filepath.Join(dir, "state"+itoaTest(s.Iteration)+".safetensors")
				saved[s.Iteration] = p
				return WriteStateFile(p, s, map[string]string{"action": "a"})
			}
			whole, err := Train(context.Background(), enc, nil, 3, rec, blobs(120, 1), blobs(60, 2), blobs(90, 3), nil, nil, Resume{Every: 15, Save: save})
			if err != nil {
				t.Fatal(err)
			}
			if len(saved) != 3 { // 15, 30, 45
				t.Fatalf("saved at %v, want 15, 30 and 45", saved)
			}
			from, meta, err := ReadStateFile(saved[30])
			if err != nil || meta["action"] != "a" {
				t.Fatalf("read: %v %v", err, meta)
			}
			if from.LR == rec.LR {
				t.Fatalf("the plateau scheduler never lowered the learning rate by iteration 30 (%g): the test would not cover it", from.LR)
			}
			var resumedAt int
			var last *State
			resumed, err := Train(context.Background(), enc, nil, 3, rec, blobs(120, 1), blobs(60, 2), blobs(90, 3), nil, nil,
				Resume{From: from, Every: 15, Save: func(s *State) error { last = s; return nil },
					Resumed: func(it, _ int) { resumedAt = it }, Refused: func(err error) { t.Fatalf("refused: %v", err) }})
			if err != nil {
				t.Fatal(err)
			}
			if resumedAt != 30 {
				t.Fatalf("resumed at %d, want 30", resumedAt)
			}
			assertSameRun(t, whole, resumed)
			// The parameters and optimiser at iteration 45, after the
			// resume, not only the kept sets (which may predate it).
			want, _, err := ReadStateFile(saved[45])
			if err != nil || last == nil || last.Iteration != 45 {
				t.Fatalf("state at 45: %v %v", err, last)
			}
			for what, pair := range map[string][2]map[string][]float32{"value": {want.Values, last.Values}, "adam_m": {want.AdamM, last.AdamM}, "adam_v": {want.AdamV, last.AdamV}} {
				assertSameValues(t, what, pair[0], pair[1])
			}
			if want.AdamStep != last.AdamStep || want.LR != last.LR {
				t.Fatalf("adam step %d vs %d, lr %g vs %g", want.AdamStep, last.AdamStep, want.LR, last.LR)
			}
		})
	}
}

func assertSameRun(t *testing.T, a, b *Result) {
	t.Helper()
	if len(a.Checkpoints) != len(b.Checkpoints) {
		t.Fatalf("%d vs %d checkpoints", len(a.Checkpoints), len(b.Checkpoints))
	}
	for i := range a.Checkpoints {
		ca, cb := a.Checkpoints[i], b.Checkpoints[i]
		if ca.Iteration != cb.Iteration || ca.ValScore != cb.ValScore {
			t.Fatalf("checkpoint %d: iteration %d score %v vs iteration %d score %v", i, ca.Iteration, ca.ValScore, cb.Iteration, cb.ValScore)
		}
		assertSameValues(t, "checkpoint "+itoaTest(i), ca.Values, cb.Values)
	}
	for k, v := range a.Metrics {
		if b.Metrics[k] != v {
			t.Fatalf("test %s: %v vs %v", k, v, b.Metrics[k])
		}
	}
}

// TestStateOfAnotherModelIsRefused: a state whose tensors do not fit the
// model is reported and the run starts over (and equals a fresh run).
func TestStateOfAnotherModelIsRefused(t *testing.T) {
	rec := Recipe{LR: 0.01, BatchSize: 8, Iterations: 20, ValidateEvery: 10, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3, Seed: 1}
	var state *State
	if _, err := Train(context.Background(), EncoderSpec{Arch: "mlp", Hidden: []int{8}}, nil, 3, rec, blobs(60, 1), blobs(30, 2), blobs(30, 3), nil, nil,
		Resume{Every: 10, Save: func(s *State) error { state = s; return nil }}); err != nil {
		t.Fatal(err)
	}
	other := EncoderSpec{Arch: "mlp", Hidden: []int{12}}
	fresh, err := Train(context.Background(), other, nil, 3, rec, blobs(60, 1), blobs(30, 2), blobs(30, 3), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	var why error
	got, err := Train(context.Background(), other, nil, 3, rec, blobs(60, 1), blobs(30, 2), blobs(30, 3), nil, nil,
		Resume{From: state, Refused: func(err error) { why = err }, Resumed: func(int, int) { t.Fatal("resumed from another model's state") }})
	if err != nil {
		t.Fatal(err)
	}
	if why == nil || !strings.Contains(why.Error(), "values, the model has") {
		t.Fatalf("refusal: %v", why)
	}
	assertSameRun(t, fresh, got)
}

func assertSameValues(t *testing.T, what string, a, b map[string][]float32) {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%s: %d vs %d tensors", what, len(a), len(b))
	}
	for name, va := range a {
		vb := b[name]
		if len(va) != len(vb) {
			t.Fatalf("%s %s: %d vs %d values", what, name, len(va), len(vb))
		}
		for j := range va {
			if math.Float32bits(va[j]) != math.Float32bits(vb[j]) {
				t.Fatalf("%s %s[%d]: %v vs %v", what, name, j, va[j], vb[j])
			}
		}
	}
}

func itoaTest(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoaTest(i/10) + digits[i%10:i%10+1]
}
