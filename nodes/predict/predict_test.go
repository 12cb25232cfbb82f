package predict

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pmf"
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
	const header = "category,benchmark,metric,model,value,higher_is_better\n"
	cifar := "Img Class,cifar100,Acc@1,me,50,true\nImg Class,cifar100,Acc@5,me,80,true\nImg Class,cifar100,Loss,me,1.9,false\n"
	for _, tc := range []struct{ name, csv, want, not string }{
		// cifar100 lacks Acc@5 and Loss, which the prediction uses.
		{"a benchmark measured in part", header + "Img Class,cifar100,Acc@1,me,50,true\n", "tier benchmark cifar100 is measured on Acc@1 but not on Acc@5, Loss", ""},
		// acdc has nothing measured.
		{"a benchmark not measured", header + cifar, "acdc:", "cifar100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "mine.csv"), []byte(tc.csv), 0o644)
			n, diags := decode(t, dir, "matrix = \"stdlib/data/gate_table3.csv\"\ntier = [\"cifar100\", \"acdc\"]\nmeasured = \"mine.csv\"\nvalidate = false")
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			_, err := n.Run(context.Background(), &nodes.Env{OutDir: t.TempDir(), Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 1}})
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.not != "" && strings.Contains(err.Error(), tc.not)) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestPredictByMatrixCompletion predicts DINO's results from its small
// tier with PMF: the predictions carry a spread, and they are closer to
// DINO's published results than each benchmark's pool mean.
func TestPredictByMatrixCompletion(t *testing.T) {
	dir := "../../examples/eevee_predict"
	n, diags := decode(t, dir, `
matrix   = "pool_without_dino.csv"
measured = "dino_small_tier.csv"
method   = "bpmf"
validate = false
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	out := t.TempDir()
	if _, err := n.Run(context.Background(), &nodes.Env{OutDir: out, Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 1}}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(filepath.Join(out, "predictions.csv"))
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// DINO's true results, and the pool's per-column mean and spread.
	full, _ := stdlib.FS().Open("data/gate_table3.csv")
	all, _ := eevee.LoadCSV(full, "gate")
	dino := slices.Index(all.Models, "dino")
	pool := &eevee.Matrix{Models: slices.Delete(slices.Clone(all.Models), dino, dino+1), Columns: all.Columns,
		Values: slices.Delete(slices.Clone(all.Values), dino, dino+1)}
	units := pmf.Units(pmf.FromMatrix(pool))
	truth, poolMean, poolStd := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for j, c := range all.Columns {
		truth[c.Name()] = all.Values[dino][j]
		poolMean[c.Name()], poolStd[c.Name()] = units.Mean[j], units.Std[j]
		if units.Borrowed[j] {
			poolStd[c.Name()] = 0 // constant over the pool
		}
	}
	var predErr, meanErr float64
	predicted := 0
	for _, r := range rows[1:] {
		name := r[1] + ":" + r[2]
		if r[5] != "" || poolStd[name] < 1e-9 {
			continue // measured, or constant over the pool (Winoground's losses)
		}
		p, _ := strconv.ParseFloat(r[3], 64)
		sd, _ := strconv.ParseFloat(r[4], 64)
		if !(sd > 0) {
			t.Errorf("%s: predicted without a spread (%q)", name, r[4])
		}
		predErr += math.Pow((p-truth[name])/poolStd[name], 2)
		meanErr += math.Pow((poolMean[name]-truth[name])/poolStd[name], 2)
		predicted++
	}
	predRMSE, meanRMSE := math.Sqrt(predErr/float64(predicted)), math.Sqrt(meanErr/float64(predicted))
	t.Logf("DINO's %d unmeasured metrics: RMSE %.3f (bpmf) vs %.3f (pool mean), in pool std units", predicted, predRMSE, meanRMSE)
	if predicted < 100 || predRMSE >= meanRMSE {
		t.Errorf("bpmf RMSE %.3f on %d cells is not below the pool mean's %.3f", predRMSE, predicted, meanRMSE)
	}
}

func TestPredictMethodIsChecked(t *testing.T) {
	_, diags := decode(t, t.TempDir(), "matrix = \"stdlib/data/gate_table3.csv\"\nmeasured = \"x.csv\"\nmethod = \"nuts\"")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "bpmf") {
		t.Fatalf("diags = %v, want an unknown-method error listing the methods", diags)
	}
	_, diags = decode(t, t.TempDir(), "matrix = \"stdlib/data/gate_table3.csv\"\nmeasured = \"x.csv\"")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "tier") {
		t.Fatalf("diags = %v, want eevee to need a tier", diags)
	}
}

// TestPredictOnSomeColumns: with columns = "higher_is_better" the measured
// results are aligned with the columns the meta-model keeps (the losses
// are neither needed nor predicted), not with the whole pool's.
func TestPredictOnSomeColumns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mine.csv"), []byte(`category,benchmark,metric,model,value,higher_is_better
Img Class,cifar100,Acc@1,me,50,true
Img Class,cifar100,Acc@5,me,80,true
Img Class,imagenet1k,Acc@1,me,60,true
Img Class,imagenet1k,Acc@5,me,85,true
`), 0o644)
	n, diags := decode(t, dir, `
matrix   = "stdlib/data/gate_table3.csv"
tier     = ["cifar100", "imagenet1k"]
measured = "mine.csv"
columns  = "higher_is_better"
validate = false
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	out := t.TempDir()
	if _, err := n.Run(context.Background(), &nodes.Env{OutDir: out, Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 1}}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(readFileT(t, filepath.Join(out, "predictions.csv")))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows[1:] {
		if r[6] != "true" {
			t.Fatalf("a lower-is-better column was predicted: %v", r)
		}
		if r[1] == "imagenet1k" && r[2] == "Acc@5" {
			found = r[5] == "85"
		}
	}
	if !found {
		t.Fatal("imagenet1k:Acc@5 is not shown with its measured 85")
	}
}

func readFileT(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPredictWarnsWhenTheRankBaselineTies: with validation, an EEVEE
// predict logs the meta-model's leave-one-model-out error beside every
// baseline's, and warns that the mean-rank-on-tier baseline does about as
// well (as it does on the paper's matrix and small tier), and
// prediction.json holds all three rows.
func TestPredictWarnsWhenTheRankBaselineTies(t *testing.T) {
	n, diags := decode(t, t.TempDir(), `
matrix   = "stdlib/data/gate_table3.csv"
tier     = ["iwildcam", "ade20k", "clevr-math", "acdc", "imagenet1k", "mini", "cubirds", "cifar100"]
measured = "`+filepath.Join(mustAbs(t, "../../examples/eevee_predict"), "dino_small_tier.csv")+`"
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var logs strings.Builder
	out := t.TempDir()
	if _, err := n.Run(context.Background(), &nodes.Env{OutDir: out, Log: zerolog.New(&logs), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 2}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"method":"eevee meta-model"`, `"method":"pool mean"`, `"method":"mean rank on tier"`,
		`{"level":"warn","message":"The meta-model does not clearly beat the strongest trivial baseline (mean rank on tier): MAE`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
	data, _ := os.ReadFile(filepath.Join(out, "prediction.json"))
	if !strings.Contains(string(data), `"method": "mean rank on tier"`) {
		t.Errorf("prediction.json lacks the rank baseline:\n%s", data)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestPredictRefusesBadMeasuredFiles: a measured file with a NaN, with a
// metric's direction against the pool's, or with a tier benchmark measured
// on only some of its metrics is an error naming the file (and line),
// not a prediction made from a silently changed row.
func TestPredictRefusesBadMeasuredFiles(t *testing.T) {
	good, err := os.ReadFile("../../examples/eevee_predict/dino_small_tier.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(good)), "\n")
	edit := func(match string, f func(string) string) string {
		var out []string
		for _, l := range lines {
			if strings.Contains(l, match) {
				if l = f(l); l == "" {
					continue
				}
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n") + "\n"
	}
	tests := map[string]struct{ csv, want string }{
		"NaN value": {edit("ade20k,mIoU", func(l string) string { return strings.Replace(l, "33.3", "nan", 1) }),
			`bad.csv:16: ade20k:mIoU has no value ("nan")`},
		"direction against the pool": {edit("cifar100,Loss", func(l string) string { return strings.Replace(l, ",false", ",true", 1) }),
			`cifar100:Loss has higher_is_better = true, but the pool matrix has false`},
		"a tier metric missing": {edit("ade20k,Mean Acc", func(string) string { return "" }),
			`tier benchmark ade20k is measured on`},
		// ACDC's Dice in % against the paper's fraction: 100x apart.
		"a percentage against a fraction column": {edit("acdc,Dice Score", func(l string) string { return strings.Replace(l, ",0.5,", ",51.2,", 1) }),
			`acdc:Dice Score measured 51.2, the paper's column 0.2-0.6 (median 0.4): 128x`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"pool_without_dino.csv"} {
				b, _ := os.ReadFile(filepath.Join("../../examples/eevee_predict", f))
				os.WriteFile(filepath.Join(dir, f), b, 0o644)
			}
			os.WriteFile(filepath.Join(dir, "bad.csv"), []byte(tc.csv), 0o644)
			n, diags := decode(t, dir, `
matrix   = "pool_without_dino.csv"
tier     = ["iwildcam", "ade20k", "clevr-math", "acdc", "imagenet1k", "mini", "cubirds", "cifar100"]
measured = "bad.csv"
validate = false
splits   = 2
`)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			_, err := n.Run(context.Background(), &nodes.Env{OutDir: t.TempDir(), Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 1}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}
