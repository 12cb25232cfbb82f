package engine_test

import (
	"fmt"
	"testing"

	"github.com/gatepipe/gatepipe/engine"
)

// keyedPipeline is the shape of stdlib/tiers/run: one block per benchmark
// reaching its data through a map local and an upstream for_each block,
// both indexed by each.key.
const keyedPipeline = `
step "data_a" { value = "A" }
step "data_b" { fail = %s }
locals {
  data = { a = step.data_a.value, "b" = step.data_b.value }
}
step "bench" {
  for_each = toset(["a", "b"])
  value    = "${local.data[each.key]}-bench"
}
step "train" {
  for_each = toset(["a", "b"])
  value    = "${step.bench[each.key].value}-trained"
}
`

// TestKeyedDependenciesIsolateInstances: an instance that reaches an
// upstream only as X[each.key] depends on that element alone: a failure
// in another element does not skip it, and a change to another element
// leaves it cached.
func TestKeyedDependenciesIsolateInstances(t *testing.T) {
	h := newHarness(t)
	h.write(map[string]string{"main.hcl": fmt.Sprintf(keyedPipeline, "true")})
	rec, _ := h.apply(engine.Options{})
	got := statuses(rec)
	want := map[string]engine.RunStatus{
		"step.data_b": engine.RunFailed, `step.bench["b"]`: engine.RunSkipped, `step.train["b"]`: engine.RunSkipped,
		`step.bench["a"]`: engine.RunRan, `step.train["a"]`: engine.RunRan,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}

	// Mend data_b: only the b side runs; a's instances stay cached.
	h.write(map[string]string{"main.hcl": fmt.Sprintf(keyedPipeline, "false")})
	rec, _ = h.apply(engine.Options{})
	got = statuses(rec)
	want = map[string]engine.RunStatus{
		"step.data_b": engine.RunRan, `step.bench["b"]`: engine.RunRan, `step.train["b"]`: engine.RunRan,
		`step.bench["a"]`: engine.RunCached, `step.train["a"]`: engine.RunCached,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("after mending: %s = %q, want %q", k, got[k], v)
		}
	}
}
