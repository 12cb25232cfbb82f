package results

import (
	"strings"
	"testing"
)

func TestMarkdownTable(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	models := []string{"cnn", "vit"}
	cells := []Cell{
		{Benchmark: "colours", Metric: "0 APS", Model: "cnn", Value: v(90), HigherIsBetter: true},
		{Benchmark: "colours", Metric: "0 APS", Model: "vit", Value: v(99), HigherIsBetter: true},
		{Benchmark: "count", Metric: "MAE Score", Model: "cnn", Value: v(0.123456), HigherIsBetter: false},
		{Benchmark: "count", Metric: "MAE Score", Model: "vit"},
		{Benchmark: "shape", Metric: "Acc@1", Model: "cnn", Value: v(90.0238), HigherIsBetter: true},
		{Benchmark: "shape", Metric: "Acc@1", Model: "vit", Value: v(4.4991), HigherIsBetter: true},
	}
	got := markdownTable(cells, models)
	want := "| benchmark | metric | cnn | vit |\n|---|---|---:|---:|\n| count | MAE Score ↓ | 0.123 | – |\n| shape | Acc@1 | 90.0 | 4.50 |\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(got, "0 APS") {
		t.Error("per-class metrics belong in the CSV only")
	}
}
