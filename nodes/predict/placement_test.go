package predict

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
)

// smallTierNoVideo is the tiers' predict tier: the small tier without
// iWildCam (Video Reg), whose metrics are all lower-is-better.
var smallTierNoVideo = []string{"ade20k", "clevr-math", "acdc", "imagenet1k", "mini", "cubirds", "cifar100"}

// runTierLikePrediction predicts DINO, held out of the pool, as the tiers
// do (higher-is-better columns, iWildCam measured but not in the tier),
// with a benchmark of its own the pool lacks, and returns the output
// directory and prediction.json.
func runTierLikePrediction(t *testing.T) (string, Report) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"pool_without_dino.csv", "dino_small_tier.csv"} {
		b, err := os.ReadFile(filepath.Join("../../examples/eevee_predict", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "dino_small_tier.csv" {
			b = append(b, "Img Class,fashion-mnist,Acc@1,dino,91.5,true\n"...)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	n, diags := decode(t, dir, `
matrix   = "pool_without_dino.csv"
tier     = ["`+strings.Join(smallTierNoVideo, `", "`)+`"]
measured = "dino_small_tier.csv"
columns  = "higher_is_better"
partial  = true
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	out := t.TempDir()
	v, err := n.Run(context.Background(), &nodes.Env{OutDir: out, Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal([]byte(readFileT(t, filepath.Join(out, "prediction.json"))), &rep); err != nil {
		t.Fatal(err)
	}
	iv := v.GetAttr("interval").AsValueSlice()
	if best, _ := iv[0].AsBigFloat().Int64(); int(best) != rep.Interval.Best {
		t.Errorf("value's interval %v, prediction.json's %+v", iv, rep.Interval)
	}
	return out, rep
}

// TestPlacementHasAnInterval: the placement's interval holds its position,
// and is no point: the meta-models disagree about the predicted cells.
func TestPlacementHasAnInterval(t *testing.T) {
	_, rep := runTierLikePrediction(t)
	pl, iv := rep.Placement, rep.Interval
	t.Logf("position %d of %d, interval %d-%d", pl.Position, pl.Of, iv.Best, iv.Worst)
	if !(1 <= iv.Best && iv.Best <= pl.Position && pl.Position <= iv.Worst && iv.Worst <= pl.Of) || iv.Best == iv.Worst {
		t.Fatalf("interval %+v around position %d of %d", iv, pl.Position, pl.Of)
	}
}

// TestMeasuredBenchmarksSayWhyTheyAreLeftOut: prediction.json lists every
// measured benchmark; iWildCam (lower-is-better metrics only) and a
// benchmark the pool lacks are left out of the placement with their
// reasons, the tier's are ranked and predicted from, and a loss of a
// tier benchmark is measured but not ranked.
func TestMeasuredBenchmarksSayWhyTheyAreLeftOut(t *testing.T) {
	_, rep := runTierLikePrediction(t)
	byName := map[string]Benchmark{}
	for _, b := range rep.Measured {
		byName[b.Benchmark] = b
	}
	for _, tc := range []struct {
		bench         string
		placed, input bool
		reason        []string
	}{
		{"iwildcam", false, false, []string{`the prediction ranks the pool's higher-is-better columns only (columns = "higher_is_better")`, "MAE Score ↓", "lower-is-better", "not in the predict block's tier"}},
		{"fashion-mnist", false, false, []string{"fashion-mnist is not a benchmark of the pool matrix"}},
		{"cifar100", true, true, []string{"Loss ↓ measured but not ranked"}},
		{"ade20k", true, true, []string{"CE Loss ↓, Focal Loss ↓ measured but not ranked"}},
	} {
		t.Run(tc.bench, func(t *testing.T) {
			b, ok := byName[tc.bench]
			if !ok {
				t.Fatalf("%s is not in prediction.json's measured list: %+v", tc.bench, rep.Measured)
			}
			if b.Placed != tc.placed || b.Input != tc.input {
				t.Errorf("placed %v, input %v; want %v, %v", b.Placed, b.Input, tc.placed, tc.input)
			}
			for _, want := range tc.reason {
				if !strings.Contains(b.Reason, want) {
					t.Errorf("reason %q lacks %q", b.Reason, want)
				}
			}
		})
	}
	if len(rep.Measured) != 9 {
		t.Errorf("%d measured benchmarks, want the 8 of the small tier and fashion-mnist", len(rep.Measured))
	}
}

// TestPredictionsHoldEveryMeasuredCell: predictions.csv holds the
// lower-is-better cells the prediction leaves out with their measured
// values (and no prediction), so that a report shows them.
func TestPredictionsHoldEveryMeasuredCell(t *testing.T) {
	out, _ := runTierLikePrediction(t)
	rows, err := csv.NewReader(strings.NewReader(readFileT(t, filepath.Join(out, "predictions.csv")))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cifar100:Loss": "1.6", "iwildcam:MAE Score": "1.5", "iwildcam:MSE Loss": "5"}
	for _, r := range rows[1:] {
		if m, ok := want[r[1]+":"+r[2]]; ok {
			if r[3] != "" || r[4] != "" || r[5] != m || r[6] != "false" {
				t.Errorf("%s:%s: %v, want measured %s and no prediction", r[1], r[2], r, m)
			}
			delete(want, r[1]+":"+r[2])
		}
	}
	if len(want) > 0 {
		t.Errorf("predictions.csv lacks %v", want)
	}
}

// TestValidationIsEEVEELoo: prediction.json's leave-one-model-out rows
// are eevee.LeaveOneModelOut's on the pool with the block's options, and
// its command line says so.
func TestValidationIsEEVEELoo(t *testing.T) {
	_, rep := runTierLikePrediction(t)
	f, err := os.Open("../../examples/eevee_predict/pool_without_dino.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pool, err := eevee.LoadCSV(f, "pool")
	if err != nil {
		t.Fatal(err)
	}
	o := eevee.Defaults()
	o.Columns = "higher_is_better"
	rows, err := eevee.LeaveOneModelOut(pool, o, smallTierNoVideo)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rows, rep.Validation) {
		t.Errorf("prediction.json's rows\n%+v\nwant\n%+v", rep.Validation, rows)
	}
	if rows[0].MAE > 1 {
		t.Errorf("meta-model MAE %.3f column std units: the held-out row is not aligned with the selected columns", rows[0].MAE)
	}
	if !strings.HasSuffix(rep.LOOCommand, "pool_without_dino.csv -tier "+strings.Join(smallTierNoVideo, ",")+" -columns higher_is_better") {
		t.Errorf("loo command %q", rep.LOOCommand)
	}
}

func TestLOOCommand(t *testing.T) {
	o := eevee.Defaults()
	for _, tc := range []struct {
		name   string
		matrix string
		edit   func(*eevee.Options)
		want   string
	}{
		{"defaults", "stdlib/data/gate_table3.csv", func(*eevee.Options) {},
			"gatepipe eevee loo -matrix stdlib/data/gate_table3.csv -tier a,b -columns all"},
		{"columns, seed and exclude", "/data/my pool.csv", func(o *eevee.Options) { o.Columns, o.Seed, o.Exclude = "primary", 7, []string{"a"} },
			"gatepipe eevee loo -matrix '/data/my pool.csv' -tier a,b -columns primary -seed 7"},
		{"an option with no flag", "m.csv", func(o *eevee.Options) { o.Hidden = 10 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oo := o
			tc.edit(&oo)
			if got := looCommand(tc.matrix, oo, []string{"a", "b"}); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
