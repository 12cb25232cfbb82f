package predict

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/stdlib"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

func decode(t *testing.T, dir, src string) (*Node, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig([]byte(src), "p.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cfg, diags := hcldec.Decode(f.Body, spec, nil)
	if diags.HasErrors() {
		return nil, diags
	}
	n, diags := Kind{Stdlib: stdlib.FS()}.Decode(cfg, nodes.Decl{Body: f.Body, Dir: dir})
	if diags.HasErrors() {
		return nil, diags
	}
	return n.(*Node), nil
}

func TestPredictHeldOutModel(t *testing.T) {
	dir := "../../examples/eevee_predict"
	n, diags := decode(t, dir, `
matrix   = "pool_without_dino.csv"
tier     = ["iwildcam", "ade20k", "clevr-math", "acdc", "imagenet1k", "mini", "cubirds", "cifar100"]
measured = "dino_small_tier.csv"
validate = false
splits   = 5
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	out := t.TempDir()
	v, err := n.Run(context.Background(), &nodes.Env{OutDir: out, Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if v.GetAttr("model").AsString() != "dino" || !v.GetAttr("of").RawEquals(cty.NumberIntVal(21)) {
		t.Fatalf("value %#v", v)
	}
	data, _ := os.ReadFile(filepath.Join(out, "predictions.csv"))
	if lines := strings.Count(string(data), "\n"); lines != 176 {
		t.Fatalf("predictions.csv has %d lines, want a header and 175 metrics", lines)
	}
}

func TestPredictNeedsTheTierResults(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mine.csv"), []byte("category,benchmark,metric,model,value,higher_is_better\nImg Class,cifar100,Acc@1,me,50,true\n"), 0o644)
	n, diags := decode(t, dir, "matrix = \"stdlib/data/gate_table3.csv\"\ntier = [\"cifar100\", \"acdc\"]\nmeasured = \"mine.csv\"\nvalidate = false")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, err := n.Run(context.Background(), &nodes.Env{OutDir: t.TempDir(), Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 1}})
	if err == nil || !strings.Contains(err.Error(), "cifar100:Acc@5") {
		t.Fatalf("err = %v, want it to name the first missing tier metric", err)
	}
}
