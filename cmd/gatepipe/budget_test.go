package main

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/rs/zerolog"
)

// budgetPipeline is 3 models x 4 benchmarks of fake experiments whose
// score is model quality + benchmark difficulty.
func budgetPipeline(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "trainer.sh"), `q=$1; d=$2
echo "{\"model\":\"m\",\"benchmark\":\"b\",\"metrics\":{\"Acc@1\":{\"value\":$((q + d)),\"higher_is_better\":true}}}" > "$GATEPIPE_OUT_DIR/metrics.json"
`)
	writeFile(t, filepath.Join(dir, "main.hcl"), `
locals {
  models     = { a = 10, b = 20, c = 30 }
  benchmarks = { x = 1, y = 2, z = 3, w = 4 }
  cells = merge([for m, q in local.models : { for b, d in local.benchmarks : "${m}-${b}" => { model = m, benchmark = b, q = q, d = d } }]...)
}
command "prepare" {
  run = ["true"]
}
command "eval" {
  for_each   = local.cells
  run        = ["sh", "trainer.sh", each.value.q, each.value.d]
  inputs     = ["trainer.sh"]
  experiment = { model = each.value.model, benchmark = each.value.benchmark }
}
`)
	return dir
}

// TestApplyBudget: -budget 5 runs exactly 5 of the 12 experiments, in
// batches chosen by the rule (the second by PMF on the first's results),
// holds the rest without failing, and still runs the non-experiment node;
// a plain apply afterwards runs the 7 held ones.
func TestApplyBudget(t *testing.T) {
	dir, cache := budgetPipeline(t), t.TempDir()
	r := gp(t, cache, "apply", "-budget", "5", "-budget-batch", "3", "-fail-fast", dir) // held is not a failure
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"Budget round 1: running 3 experiment(s) chosen by random", // nothing observed yet
		"Budget round 2: running 2 experiment(s) chosen by variance",
		"Budget round 3: budget spent (5 of 5",
		"7 held by the budget",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	ran := 0
	for _, m := range regexp.MustCompile(`(\d+) ran`).FindAllStringSubmatch(r.stdout, -1) {
		ran += int(m[1][0] - '0')
	}
	if ran != 6 { // 5 experiments and command.prepare
		t.Errorf("%d instances ran over the rounds, want 6:\n%s", ran, r.stdout)
	}
	r = gp(t, cache, "apply", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "7 ran, 6 cached") {
		t.Errorf("the plain apply after the budget: exit %d\n%s", r.code, r.stdout)
	}
	for _, args := range [][]string{
		{"apply", "-budget", "2", "-budget-rule", "oracle", dir},
		{"apply", "-budget", "2", "-budget-method", "global_mean", dir},
		{"apply", "-budget", "-1", dir},
	} {
		if r := gp(t, cache, args...); r.code != exitConfigError {
			t.Errorf("%v: exit %d, want %d\n%s", args, r.code, exitConfigError, r.stderr)
		}
	}
}

// TestBudgetMatrixJoinsPriorAndResults: the matrix -budget completes holds
// the prior's models and the experiments' (a new row), and a round holds
// every pending experiment it did not choose, including those whose cell
// is not known yet.
func TestBudgetMatrixJoinsPriorAndResults(t *testing.T) {
	dir := t.TempDir()
	prior := filepath.Join(dir, "prior.csv")
	var sb strings.Builder
	sb.WriteString("category,benchmark,metric,model,value,higher_is_better\n")
	for m := 0; m < 6; m++ {
		for b, name := range []string{"x", "y", "z"} {
			fmt.Fprintf(&sb, "C,%s,Acc@1,p%d,%d,true\n", name, m, 10*m+b)
		}
	}
	writeFile(t, prior, sb.String())
	b := &budget{n: 2, batch: 2, rule: "uncertainty", method: "bpmf", prior: prior}
	exps := []engine.Experiment{
		{Addr: "a1", Model: "new", Benchmark: "x", Known: true},
		{Addr: "a2", Model: "new", Benchmark: "y", Known: true},
		{Addr: "a3", Model: "new", Benchmark: "z", Known: true},
		{Addr: "a4", Known: false},
	}
	d, rows, cols, err := b.matrix(exps)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 7 || rows[6] != "new" || len(cols) != 3 {
		t.Fatalf("rows %v cols %v", rows, cols)
	}
	for j := range cols {
		if !math.IsNaN(d.Values[6][j]) || d.Values[5][j] != float64(50+j) {
			t.Errorf("column %s: new %v, p5 %v", cols[j], d.Values[6][j], d.Values[5][j])
		}
	}
	ch, err := b.next(t.Context(), exps, zerolog.Nop(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.chosen) != 2 || ch.rule != "uncertainty" {
		t.Fatalf("chosen %+v by %s", ch.chosen, ch.rule)
	}
	held := 0
	for _, x := range exps {
		if ch.hold(x.Addr) {
			held++
		}
	}
	if held != 2 { // the unchosen cell and the unknown one
		t.Errorf("%d held, want 2", held)
	}
}

// TestKeepRuns: the cache keeps the newest keep_runs run records
// (GATEPIPE_KEEP_RUNS first), and a bad value is a diagnostic.
func TestKeepRuns(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), "gatepipe {\n  keep_runs = 2\n}\ncommand \"c\" {\n  run = [\"true\"]\n}\n")
	for range 4 {
		if r := gp(t, cache, "apply", dir); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(cache, "runs", "*.json"))
	if len(runs) != 2 {
		t.Errorf("%d run records kept, want 2", len(runs))
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), "gatepipe {\n  keep_runs = 0\n}\n")
	if r := gp(t, cache, "validate", dir); r.code != exitConfigError || !strings.Contains(r.stderr, "keep_runs must be a whole number of at least 1") {
		t.Errorf("keep_runs = 0: exit %d\n%s", r.code, r.stderr)
	}
}
