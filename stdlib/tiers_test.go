package stdlib

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatepipe/gatepipe/internal/tiergen"
)

// TestTierModulesAreGenerated: stdlib/tiers/{small,base,big}/main.hcl are
// what internal/tiergen's template gives for the paper's published tiers
// (UPDATE_GOLDEN=1 rewrites them), so their shared variables and wiring
// are written once.
func TestTierModulesAreGenerated(t *testing.T) {
	f, err := os.Open("data/gate_combinations.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tiers, err := tiergen.Tiers(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range tiers {
		want, err := tiergen.Render(tier)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join("tiers", tier.Name, "main.hcl")
		if os.Getenv("UPDATE_GOLDEN") != "" {
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from internal/tiergen's template: edit tier.hcl.tmpl and run UPDATE_GOLDEN=1 go test ./stdlib/", p)
		}
	}
}
