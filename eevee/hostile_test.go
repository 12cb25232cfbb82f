package eevee

import (
	"math"
	"strings"
	"testing"
)

const header = "category,benchmark,metric,model,value,higher_is_better\n"

func TestLoadCSVRejectsNonFiniteAndAcceptsBOM(t *testing.T) {
	row := func(v string) string { return "Img,a,acc,m1," + v + ",true\n" }
	for _, v := range []string{"Inf", "-Inf", "+inf", "1e200", "1e400", "-1e13"} {
		_, err := LoadCSV(strings.NewReader(header+row("0.5")+row(v)[:0]+"Img,a,acc,m2,"+v+",true\n"), "m.csv")
		if err == nil || !strings.Contains(err.Error(), "m.csv:3:") || !strings.Contains(err.Error(), "finite") {
			t.Errorf("value %s: err = %v, want a file:line error", v, err)
		}
	}
	m, err := LoadCSV(strings.NewReader("\ufeff"+header+row("0.5")), "bom.csv")
	if err != nil || len(m.Models) != 1 {
		t.Fatalf("a CSV with a UTF-8 BOM: %v", err)
	}
}

func TestTooFewModels(t *testing.T) {
	cols := []string{"g/a/x", "g/b/x", "g/c/x"}
	val := func(m, c int) float64 { return float64(m*3+c) + 0.1*float64(m*m) }
	for _, n := range []int{1, 2, 3} {
		if _, err := NewProblem(tiny(n, cols, val), Defaults()); err == nil || !strings.Contains(err.Error(), "at least 4") {
			t.Errorf("%d models: err = %v", n, err)
		}
	}
	p, err := NewProblem(tiny(4, cols, val), Defaults())
	if err != nil || !strings.Contains(p.Warning, "models train each split") {
		t.Fatalf("4 models: warning %q, err %v", p.Warning, err)
	}
	if p, _ := NewProblem(tiny(12, cols, val), Defaults()); p.Warning != "" {
		t.Errorf("12 models warned: %s", p.Warning)
	}
	if _, err := LeaveOneModelOut(tiny(1, cols, val), Defaults(), []string{"a"}); err == nil {
		t.Error("leave-one-model-out on one model did not fail")
	}
}

// TestDivergingMetaModelScoresInfinite: a learning rate that makes every
// meta-model diverge gives the worst score, not NaN (which crashed the
// search).
func TestDivergingMetaModelScoresInfinite(t *testing.T) {
	cols := []string{"g/a/x", "g/b/x", "g/c/x"}
	m := tiny(12, cols, func(m, c int) float64 { return math.Sin(float64(m*7+c*3)) * float64(c+1) })
	got := optionScore(t, m, func(o *Options) { o.LR = 1e30 }, "a")
	if !math.IsInf(got, 1) {
		t.Fatalf("score with a diverging meta-model = %v, want +Inf", got)
	}
}
