package eevee

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func loadPaper(t testing.TB) *Matrix {
	t.Helper()
	f, err := os.Open("../stdlib/data/gate_table3.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := LoadCSV(f, "gate_table3.csv")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPaperMatrixShape(t *testing.T) {
	m := loadPaper(t)
	if len(m.Models) != 21 || len(m.Columns) != 175 || len(m.Benchmarks()) != 31 {
		t.Fatalf("%d models, %d columns, %d benchmarks", len(m.Models), len(m.Columns), len(m.Benchmarks()))
	}
	if len(m.Missing()) != 0 {
		t.Fatalf("missing cells: %v", m.Missing()[:3])
	}
}

func TestScoreSpeedProbe(t *testing.T) {
	p, err := NewProblem(loadPaper(t), Defaults())
	if err != nil {
		t.Fatal(err)
	}
	combo := []int{0, 3, 5, 7, 9, 11, 13, 15}
	start := time.Now()
	s := p.Score(combo)
	t.Logf("score %g in %v", s, time.Since(start))
	if math.IsNaN(s) || s <= 0 {
		t.Fatalf("score %g", s)
	}
	_ = strings.Join
}
