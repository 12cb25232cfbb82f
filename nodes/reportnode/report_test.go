package reportnode

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/stdlib"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

const predictionJSON = `{
  "model": "mine", "method": "eevee", "tier": ["cifar100"], "columns": "higher_is_better",
  "placement": {"mean_rank": 9.5, "position": 12, "of": 22, "group_positions": {}},
  "placement_interval": {"best": 9, "worst": 15},
  "measured": [
    {"benchmark": "cifar100", "category": "Img Class", "placed": true, "input": true,
     "metrics": [{"metric": "Acc@1", "value": 71.5, "higher_is_better": true, "placed": true}]},
    {"benchmark": "iwildcam", "category": "Video Reg", "placed": false, "input": false, "reason": "lower-is-better only",
     "metrics": [{"metric": "MAE Score", "value": 2.71, "higher_is_better": false, "placed": false}]}
  ],
  "leave_one_model_out": [
    {"method": "eevee meta-model", "mae_z": 0.298, "position_error": 1.62},
    {"method": "pool mean", "mae_z": 0.962, "position_error": 4.76}
  ],
  "loo_command": "gatepipe eevee loo -tier cifar100 -columns higher_is_better"
}`

const predictionsCSV = `category,benchmark,metric,predicted,spread,measured,higher_is_better
Img Class,cifar100,Acc@1,70,1,71.5,true
Video Reg,iwildcam,MAE Score,,,2.71,false
`

// TestReportReadsThePlacement: the block's protocol, scale and caveat
// reach the report's options, and a predict block's output its
// placement, measured benchmarks, leave-one-out rows and command line,
// and every measured cell, of either direction.
func TestReportReadsThePlacement(t *testing.T) {
	dir := t.TempDir()
	pred := filepath.Join(dir, "pred")
	os.MkdirAll(pred, 0o755)
	os.WriteFile(filepath.Join(pred, "prediction.json"), []byte(predictionJSON), 0o644)
	os.WriteFile(filepath.Join(pred, "predictions.csv"), []byte(predictionsCSV), 0o644)
	src := `
matrix      = "stdlib/data/gate_table3.csv"
predictions = ["pred"]
protocol    = "table3"
scale       = "test"
caveat      = "scale test: mechanics only"
`
	f, diags := hclsyntax.ParseConfig([]byte(src), "r.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cfg, diags := hcldec.Decode(f.Body, spec, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	node, diags := Kind{Stdlib: stdlib.FS()}.Decode(cfg, nodes.Decl{Body: f.Body, Dir: dir})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	n := node.(*Node)
	if o := n.options; o.Protocol != "table3" || o.Scale != "test" || o.Caveat != "scale test: mechanics only" {
		t.Errorf("options %+v", o)
	}
	in, _, err := n.Input()
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Placements) != 1 || len(in.Predictors) != 1 {
		t.Fatalf("placements %+v, predictors %+v", in.Placements, in.Predictors)
	}
	p := in.Placements[0]
	if p.Position != 12 || p.Of != 22 || p.Best != 9 || p.Worst != 15 || p.PositionError != 1.62 || p.Columns != "higher_is_better" ||
		len(p.Measured) != 2 || p.Measured[1].Placed || p.Measured[1].Reason != "lower-is-better only" || p.Measured[1].Metrics[0].Value != 2.71 {
		t.Errorf("placement %+v", p)
	}
	if in.Predictors[0].LOOCommand != "gatepipe eevee loo -tier cifar100 -columns higher_is_better" || in.Predictors[0].LeaveOneOut[0].MAE != 0.298 {
		t.Errorf("predictor %+v", in.Predictors[0])
	}
	mine := len(in.Matrix.Models) - 1
	for j, c := range in.Matrix.Columns {
		if c.Name() == "iwildcam:MAE Score" && (in.Matrix.Values[mine][j] != 2.71 || in.Predicted["mine"][j]) {
			t.Errorf("iwildcam's measured MAE: %v", in.Matrix.Values[mine][j])
		}
		if c.Name() == "food101:Acc@1" && !math.IsNaN(in.Matrix.Values[mine][j]) {
			t.Errorf("food101 was neither measured nor predicted: %v", in.Matrix.Values[mine][j])
		}
	}
}
