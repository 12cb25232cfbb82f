package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/pmf"
)

func TestPredictorTableSaysWhereABaselineWins(t *testing.T) {
	rows := []pmf.EvalRow{
		{Method: "global_mean", Ratio: 0.2, RMSE: pmf.Stat{Mean: 1.0, Std: 0.1}},
		{Method: "bpmf", Ratio: 0.2, RMSE: pmf.Stat{Mean: 0.6, Std: 0.05}},
		{Method: "global_mean", Ratio: 0.9, RMSE: pmf.Stat{Mean: 1.2, Std: 0.1}},
		{Method: "bpmf", Ratio: 0.9, RMSE: pmf.Stat{Mean: 1.3, Std: 0.1}},
	}
	var b bytes.Buffer
	predictorHTML(&b, []Predictor{{Model: "mine", Method: "bpmf", MaskedRatio: rows}})
	page := b.String()
	for _, want := range []string{
		"<th>20%</th><td>1.000 ± 0.100</td><td class=\"best\">0.600 ± 0.050</td>",
		"<th>90%</th><td class=\"best\">1.200 ± 0.100</td><td>1.300 ± 0.100</td>",
		"A baseline beats bpmf at 90% hidden",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("predictor table lacks %q:\n%s", want, page)
		}
	}
}

// TestLeaveOneOutTableShowsEveryBaseline: an EEVEE predict block's report
// shows the meta-model beside both baselines, marks the best figure of
// each column, and says when the strongest baseline does as well.
func TestLeaveOneOutTableShowsEveryBaseline(t *testing.T) {
	rows := []eevee.LOMORow{
		{Method: "eevee meta-model", MAE: 0.584, MedAE: 0.169, RMSE: 13.718, RankRho: 0.968, PositionError: 1.0},
		{Method: "pool mean", MAE: 1.169, MedAE: 0.923, RMSE: 13.757, RankRho: 0.768, PositionError: 4.76},
		{Method: "mean rank on tier", MAE: 0.598, MedAE: 0.139, RMSE: 13.724, RankRho: 0.969, PositionError: 1.10},
	}
	var b bytes.Buffer
	rows[0].MetricRho, rows[2].MetricRho = 0.784, 0.739
	predictorHTML(&b, []Predictor{{Model: "dino", Method: "eevee", LeaveOneOut: rows, LOOCommand: "gatepipe eevee loo -tier a,b -columns all"}})
	page := b.String()
	for _, want := range []string{
		`<tr><th>eevee meta-model</th><td class="best">0.584</td><td>0.169</td><td class="best">13.718</td><td>0.968</td><td class="best">0.784</td><td class="best">1.00</td></tr>`,
		`<th>rank ρ</th><th>metric ρ</th><th>position error</th>`,
		"The same computation from the command line: <code>gatepipe eevee loo -tier a,b -columns all</code>.",
		`<tr><th>mean rank on tier</th><td>0.598</td><td class="best">0.139</td><td>13.724</td><td class="best">0.969</td>`,
		`<tr><th>pool mean</th>`,
		`<p class="warning">The meta-model does not clearly beat the strongest trivial baseline (mean rank on tier)`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("leave-one-out table lacks %q:\n%s", want, page)
		}
	}
}
