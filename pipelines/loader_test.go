package pipelines

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/zclconf/go-cty/cty"
)

func TestLoadModulesAndVariables(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(`
variable "lr" {
  type    = number
  default = 0.1
}
variable "names" { type = list(string) }
locals { x = 1 }
dataset "d" { format = "idx" }
module "local" { source = "./sub" }
module "std" { source = "stdlib/tiers/small" }
`), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "m.hcl"), []byte(`output "o" { value = 1 }`), 0o644)
	std := fstest.MapFS{"tiers/small/main.hcl": {Data: []byte(`command "c" { run = ["true"] }`)}}
	l := NewLoader(std, []string{"dataset", "command"})
	mod, diags := l.LoadConfig(dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if mod.Pipeline.Blocks[addrs.Block{Kind: "dataset", Name: "d"}] == nil {
		t.Fatal("dataset.d missing")
	}
	if len(mod.Children) != 2 || mod.Children["std"].Path != addrs.RootModule.Child("std") {
		t.Fatalf("children %v", mod.Children)
	}
	vals, diags := RootVariableValues(mod.Pipeline, map[string]VarValue{"names": {Raw: `["a", "b"]`, From: "-var"}, "lr": {Raw: "0.5"}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if !vals["lr"].RawEquals(cty.NumberFloatVal(0.5)) || vals["names"].LengthInt() != 2 {
		t.Fatalf("vals %#v", vals)
	}
	_, diags = RootVariableValues(mod.Pipeline, map[string]VarValue{"lrr": {Raw: "1"}})
	if len(diags) != 2 { // unknown lrr (did you mean lr) + missing names
		t.Fatalf("want 2 diagnostics, got %v", diags)
	}
}
