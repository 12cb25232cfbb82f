package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatepipe/gatepipe/engine"
)

// TestResultServesWhatApplyServes: a damaged or missing manifest beside
// an output (objects/xx/ID.json) does not stop apply, which finds the
// output through its action's index entry and the copy of the manifest
// it carries; Result, which show prints, looks it up the same way
// instead of failing on the damaged file.
func TestResultServesWhatApplyServes(t *testing.T) {
	tests := map[string]func(path string) error{
		"garbage":   func(p string) error { return os.WriteFile(p, []byte("{not json"), 0o644) },
		"truncated": func(p string) error { return os.Truncate(p, 3) },
		"removed":   os.Remove,
	}
	for name, damage := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.write(map[string]string{"main.hcl": chain})
			if rec, _ := h.apply(engine.Options{}); rec.Failed() {
				t.Fatalf("first apply: %+v", rec.Counts)
			}
			manifests, _ := filepath.Glob(filepath.Join(h.cache.Dir(), "objects", "*", "*.json"))
			if len(manifests) == 0 {
				t.Fatal("no manifests in the cache")
			}
			for _, p := range manifests {
				if err := damage(p); err != nil {
					t.Fatal(err)
				}
			}
			rec, _ := h.apply(engine.Options{})
			if rec.Counts["cached"] != 4 {
				t.Fatalf("apply after damage: %+v", rec.Counts)
			}
			e, err := h.engine(engine.Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, diags := e.Plan(context.Background()); diags.HasErrors() {
				t.Fatal(diags)
			}
			r, err := e.Result("step.c")
			if err != nil {
				t.Fatalf("Result: %v", err)
			}
			if r.Status != engine.StatusCached || r.Manifest == nil || r.Dir == "" || r.OutputID == "" {
				t.Fatalf("Result = %+v", r)
			}
		})
	}
}
