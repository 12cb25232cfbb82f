package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInputFailsValidateAtItsLine: what can be checked before anything
// runs is checked by validate, at the line that gave the value: a
// weights file that does not exist, a module argument outside the values
// its variable's validation allows (the caller's line, with the allowed
// values), the same for a root variable given with -var.
func TestBadInputFailsValidateAtItsLine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
encoder "mine" {
  arch = "convnet"
}

module "gate" {
  source   = "stdlib/tiers/small"
  encoder  = encoder.mine
  scale    = "cpuu"
  protocol = "linear-probe"
}
`)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"module arguments", []string{"validate", dir}, []string{
			"main.hcl:9:14", `scale must be "full", "cpu", "test", "smoke" or an object overriding full's fields (stdlib/tiers/run), not "cpuu".`,
			"main.hcl:10:14", `protocol must be "finetune" or "linear_probe", not "linear-probe".`,
			`validation of variable "scale" of module "gate"`}},
		{"root variable", []string{"validate", "-var", "scale=cpuu", "../../examples/tier_small.hcl"}, []string{
			"tier_small.hcl:", `scale must be "full", "cpu" or "test", not "cpuu".`}},
		{"missing weights", []string{"validate", "-var", "weights=/nonexistent.safetensors", "../../examples/tier_small.hcl"}, []string{
			fmt.Sprintf("tier_small.hcl:%d:13", lineOf(t, "../../examples/tier_small.hcl", "  weights = var.weights")), "/nonexistent.safetensors does not exist"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := gp(t, t.TempDir(), tc.args...)
			out := strings.Join(strings.Fields(r.stdout+r.stderr), " ")
			if r.code != exitConfigError {
				t.Fatalf("exit %d:\n%s", r.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestValidScaleObjectPasses: the tier's scale also takes an object of
// overrides, which its validation accepts.
func TestValidScaleObjectPasses(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
encoder "mine" {
  arch = "convnet"
}

module "gate" {
  source  = "stdlib/tiers/small"
  encoder = encoder.mine
  scale   = { iterations = 5, image_size = [32, 32] }
}
`)
	if r := gp(t, t.TempDir(), "validate", dir); r.code != 0 {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// lineOf is the 1-based line of file that starts with prefix.
func lineOf(t *testing.T, file, prefix string) int {
	t.Helper()
	for i, line := range strings.Split(readFile(file), "\n") {
		if strings.HasPrefix(line, prefix) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line %q", file, prefix)
	return 0
}
