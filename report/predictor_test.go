package report

import (
	"bytes"
	"strings"
	"testing"

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
