package report

import (
	"testing"

	"github.com/gatepipe/gatepipe/formats/runmeta"
)

// TestRunFigureNamesAreUnique: for_each instances of one train block share
// model and benchmark names; their curves must not overwrite each other.
func TestRunFigureNamesAreUnique(t *testing.T) {
	runs := []Run{
		{Model: "pretrained", Benchmark: "b", Info: &runmeta.Info{Node: `train.ft["a"]`}},
		{Model: "pretrained", Benchmark: "b", Info: &runmeta.Info{Node: `train.ft["b"]`}},
		{Model: "pretrained", Benchmark: "b"},
		{Model: "solo", Benchmark: "b"},
	}
	uniqueIDs(runs)
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.id()] {
			t.Fatalf("two runs named %q", r.id())
		}
		seen[r.id()] = true
	}
	if runs[3].id() != "solo_b" || runs[0].id() != "train_ft_a" {
		t.Fatalf("ids %q, %q", runs[3].id(), runs[0].id())
	}
}
