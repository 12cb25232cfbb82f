package search

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// writeMatrix writes a long-format matrix of 12 models: benchmarks b0..b5
// with two categories; b5 has a missing cell when withMissing is set.
func writeMatrix(t *testing.T, dir string, withMissing bool) string {
	var sb strings.Builder
	sb.WriteString("category,benchmark,metric,model,value,higher_is_better\n")
	for b := 0; b < 6; b++ {
		cat := "A"
		if b >= 3 {
			cat = "B"
		}
		for m := 0; m < 12; m++ {
			v := fmt.Sprintf("%.4f", math.Sin(float64(m*(b+1)))+float64(m)/10)
			if withMissing && b == 5 && m == 3 {
				v = ""
			}
			fmt.Fprintf(&sb, "%s,b%d,acc,m%d,%s,true\n", cat, b, m, v)
		}
	}
	p := filepath.Join(dir, "matrix.csv")
	os.WriteFile(p, []byte(sb.String()), 0o644)
	return p
}

func decode(t *testing.T, dir, src string) (*Node, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig([]byte(src), "s.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cfg, diags := hcldec.Decode(f.Body, spec, nil)
	if diags.HasErrors() {
		return nil, diags
	}
	n, diags := Kind{}.Decode(cfg, nodes.Decl{Body: f.Body, Dir: dir})
	if diags.HasErrors() {
		return nil, diags
	}
	return n.(*Node), nil
}

func TestSearchWritesResultsAndUsableTiers(t *testing.T) {
	dir := t.TempDir()
	writeMatrix(t, dir, true)
	n, diags := decode(t, dir, `
matrix      = "matrix.csv"
k           = [1, 2]
initial     = 10
winners     = 3
children    = 2
generations = 2
splits      = 3
missing     = "drop_columns"
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	out := t.TempDir()
	env := &nodes.Env{OutDir: out, Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 2}}
	v, err := n.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"search.json", "single.csv", "k2_winners.csv", "k2_history.csv", "k2_importance.csv", "tiers/k2/main.hcl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing output %s", f)
		}
	}
	best := v.GetAttr("best").Index(cty.StringVal("2"))
	if best.LengthInt() != 2 {
		t.Fatalf("best k=2 %#v", best)
	}
	for _, b := range best.AsValueSlice() {
		if b.AsString() == "b5" {
			t.Fatal("b5 had a missing cell and was dropped; it cannot be selected")
		}
	}
	// The generated tier is a module a pipeline can use.
	l := pipelines.NewLoader(nil, nil)
	mod, diags := l.LoadConfig(v.GetAttr("tiers").Index(cty.StringVal("2")).AsString())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if mod.Pipeline.Outputs["benchmarks"] == nil || mod.Pipeline.Outputs["score"] == nil {
		t.Fatalf("tier module outputs: %v", mod.Pipeline.Outputs)
	}
	val, _ := mod.Pipeline.Outputs["benchmarks"].Expr.Value(nil)
	if !val.Equals(cty.TupleVal(best.AsValueSlice())).True() {
		t.Fatalf("tier lists %#v, search says %#v", val, best)
	}
}

func TestSearchRefusesMissingCellsByDefault(t *testing.T) {
	dir := t.TempDir()
	writeMatrix(t, dir, true)
	n, diags := decode(t, dir, "matrix = \"matrix.csv\"\nk = [2]")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, err := n.Run(context.Background(), &nodes.Env{OutDir: t.TempDir(), Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 1}})
	if err == nil || !strings.Contains(err.Error(), "missing cells") || !strings.Contains(err.Error(), "m3/b5:acc") {
		t.Fatalf("err = %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for src, want := range map[string]string{
		"matrix = \"m.csv\"\nk = [0]":                          "at least 1",
		"matrix = \"m.csv\"\nk = [2]\nweighting = \"rows\"":    "weighting must be one of",
		"matrix = \"m.csv\"\nk = [2]\nmissing = \"zero\"":      "never filled",
		"matrix = \"m.csv\"\nk = [2]\nmethod = \"greedy\"":     "only method",
		"matrix = \"m.csv\"\nk = [2]\nepoch = \"best\"":        "epoch must be one of",
		"matrix = \"m.csv\"\nk = []":                           "Missing k",
		"matrix = \"m.csv\"\nk = [2]\nscoring_seeds = [0]":     "Too few scoring seeds",
		"matrix = \"m.csv\"\nk = [2]\nscoring_seeds = [-1, 3]": "Invalid scoring seed",
	} {
		if _, diags := decode(t, t.TempDir(), src); !diags.HasErrors() || !strings.Contains(diags.Error(), want) {
			t.Errorf("%q: %v, want %q", src, diags, want)
		}
	}
}

// TestStabilityOverScoringSeeds repeats a small search under three
// scoring seeds: every seed's best set is reported, frequencies are
// shares of the seeds, and the consensus (the block's value) holds the k
// most frequent benchmarks.
func TestStabilityOverScoringSeeds(t *testing.T) {
	dir := t.TempDir()
	writeMatrix(t, dir, false)
	n, diags := decode(t, dir, `
matrix        = "matrix.csv"
k             = [2]
initial       = 10
winners       = 3
children      = 2
generations   = 1
splits        = 3
single        = false
scoring_seeds = [1, 2]
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	out := t.TempDir()
	v, err := n.Run(context.Background(), &nodes.Env{OutDir: out, Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "search.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Stability) != 1 || len(rep.Stability[0].Best) != 3 || len(rep.Stability[0].Seeds) != 3 {
		t.Fatalf("stability %+v", rep.Stability)
	}
	st := rep.Stability[0]
	count := map[string]int{}
	for _, b := range st.Best {
		for _, x := range b {
			count[x]++
		}
	}
	for b, f := range st.Frequency {
		if math.Abs(f-float64(count[b])/3) > 1e-12 {
			t.Errorf("%s: frequency %v, selected %d of 3 times", b, f, count[b])
		}
	}
	cons := v.GetAttr("consensus").Index(cty.StringVal("2")).AsValueSlice()
	if len(cons) != 2 {
		t.Fatalf("consensus %#v", cons)
	}
	for _, c := range cons {
		for b, f := range st.Frequency {
			if f > st.Frequency[c.AsString()] && !slices.ContainsFunc(cons, func(x cty.Value) bool { return x.AsString() == b }) {
				t.Errorf("consensus holds %s (%.2f) but not the more frequent %s (%.2f)", c.AsString(), st.Frequency[c.AsString()], b, f)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(out, "stability.csv")); err != nil {
		t.Error(err)
	}
}
