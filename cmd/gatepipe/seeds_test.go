package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	trainer "github.com/gatepipe/gatepipe/nodes/command"
)

// seedsPipeline trains one MLP on a generated task once per seed of
// var.seeds, and reports the results.
const seedsPipeline = `
variable "seeds" {
  type    = list(number)
  default = [0, 1, 2]
}
dataset "gen" {
  format = "generated"
  generator {
    task  = "shape"
    train = 60
    test  = 30
    size  = 8
  }
  val_fraction = 0.2
}
encoder "mlp" {
  arch   = "mlp"
  hidden = [8]
}
adapter "cls" {}
recipe "quick" {
  batch_size     = 8
  iterations     = 6
  validate_every = 3
  top_k          = 1
  seeds          = var.seeds
}
benchmark "gen" {
  dataset  = dataset.gen.path
  id       = "shape"
  category = "Procedural"
}
train "t" {
  encoder   = encoder.mlp
  adapter   = adapter.cls
  recipe    = recipe.quick
  benchmark = benchmark.gen
}
results "all" {
  metrics = [train.t.metrics]
}
report "r" {
  matrix = results.all.matrix
  runs   = [train.t.out_dir]
}
output "table" {
  value = results.all.table
}
`

// TestSeedsTrainOncePerSeedAndReportMeanStd: recipe { seeds = [0, 1, 2] }
// trains three times; metrics.json, matrix.csv, the results table and the
// report show mean ± std (n=3), the std being the sample std of the
// seeds' own results; adding a fourth seed trains only that one.
func TestSeedsTrainOncePerSeedAndReportMeanStd(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), seedsPipeline)
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`Acc@1 \| [0-9.]+ ± [0-9.]+ \(n=3\)`).MatchString(r.stdout) {
		t.Errorf("the results table does not show Acc@1 as mean ± std (n=3):\n%s", r.stdout)
	}
	out := openPath(t, cache, dir, "train.t")
	var seeds []trainer.Metrics
	for _, s := range []string{"seed-0", "seed-1", "seed-2"} {
		m, err := trainer.ReadMetrics(filepath.Join(out, s, "metrics.json"))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		seeds = append(seeds, *m)
	}
	agg, err := trainer.ReadMetrics(filepath.Join(out, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	acc := agg.Metrics["Acc@1"]
	vals := []float64{seeds[0].Metrics["Acc@1"].Value, seeds[1].Metrics["Acc@1"].Value, seeds[2].Metrics["Acc@1"].Value}
	mean := (vals[0] + vals[1] + vals[2]) / 3
	var ss float64
	for _, v := range vals {
		ss += (v - mean) * (v - mean)
	}
	if acc.N != 3 || acc.Std == nil || math.Abs(acc.Value-mean) > 1e-9 || math.Abs(*acc.Std-math.Sqrt(ss/2)) > 1e-9 {
		t.Errorf("aggregate Acc@1 %+v, want mean %g, sample std %g over n=3 of %v", acc, mean, math.Sqrt(ss/2), vals)
	}
	if vals[0] == vals[1] && vals[1] == vals[2] && seeds[0].Metrics["Loss"].Value == seeds[1].Metrics["Loss"].Value {
		t.Errorf("three seeds gave identical results %v: the seed is not reaching the training", vals)
	}
	matrix, err := os.ReadFile(filepath.Join(openPath(t, cache, dir, "results.all"), "matrix.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(matrix), "category,benchmark,metric,model,value,higher_is_better,std,n\n") ||
		!regexp.MustCompile(`(?m)^Procedural,shape,Acc@1,mlp,[0-9.e-]+,true,[0-9.e-]+,3$`).Match(matrix) {
		t.Errorf("matrix.csv lacks std and n:\n%s", matrix)
	}
	rep := filepath.Dir(openPath(t, cache, dir, "report.r"))
	md, err := os.ReadFile(filepath.Join(rep, "tables.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`\| \**[0-9.]+ ± [0-9.]+ \(n=3\)`).Match(md) {
		t.Errorf("tables.md shows no mean ± std (n=3):\n%s", md)
	}
	csvs, _ := filepath.Glob(filepath.Join(rep, "tables", "*.csv"))
	found := false
	for _, c := range csvs {
		if data, _ := os.ReadFile(c); strings.Contains(string(data), "std mlp,n mlp") {
			found = true
		}
	}
	if !found {
		t.Errorf("no report CSV among %v has the std and n columns", csvs)
	}

	// A fourth seed trains one more run; the first three come from the cache.
	r = gp(t, cache, "apply", "-log-format", "json", "-var", "seeds=[0,1,2,3]", dir)
	if r.code != 0 {
		t.Fatalf("apply with a fourth seed: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.Count(r.stderr, "seed already trained: reused from the cache"); got != 3 {
		t.Errorf("%d seeds reused, want 3:\n%s", got, r.stderr)
	}
	if !strings.Contains(r.stdout, "(n=4)") {
		t.Errorf("the table does not show n=4:\n%s", r.stdout)
	}
	out4 := openPath(t, cache, dir, "train.t", "-var", "seeds=[0,1,2,3]")
	for _, s := range []string{"seed-0", "seed-1", "seed-2"} {
		a, _ := os.ReadFile(filepath.Join(out, s, "metrics.json"))
		b, _ := os.ReadFile(filepath.Join(out4, s, "metrics.json"))
		if string(a) != string(b) || len(a) == 0 {
			t.Errorf("%s: the reused seed's metrics differ:\n%s\n%s", s, a, b)
		}
	}
	ls := gp(t, cache, "cache", "ls")
	if got := strings.Count(ls.stdout, "train.t seed "); got != 4 {
		t.Errorf("cache ls lists %d seed parts, want 4:\n%s", got, ls.stdout)
	}
	var info struct {
		Seeds []uint64 `json:"seeds"`
	}
	data, _ := os.ReadFile(filepath.Join(out4, "run.json"))
	if json.Unmarshal(data, &info) != nil || len(info.Seeds) != 4 {
		t.Errorf("run.json does not list the four seeds: %s", data)
	}
}

// openPath is what `gatepipe open ADDR` prints for a pipeline's node.
func openPath(t *testing.T, cache, dir, addr string, flags ...string) string {
	t.Helper()
	r := gp(t, cache, append(append([]string{"open"}, flags...), addr, dir)...)
	if r.code != 0 {
		t.Fatalf("open %s: %d\n%s", addr, r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// TestKilledSeedResumesAndFinishedSeedsAreKept: kill -9 while the second
// of two seeds trains; the next apply reuses the first seed from the
// cache, resumes the second from its own checkpoint, and ends with the
// metrics of a run that was never interrupted, bit for bit.
func TestKilledSeedResumesAndFinishedSeedsAreKept(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two seeds three times")
	}
	pipeline := strings.Replace(resumePipeline, "  top_k            = 2\n", "  top_k            = 2\n  seeds            = [0, 1]\n", 1)
	if pipeline == resumePipeline {
		t.Fatal("the recipe of resumePipeline changed: seeds were not added")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), pipeline)
	cache := t.TempDir()
	killAfterCheckpoint(t, cache, dir, filepath.Join("seed-1", "train_state.safetensors"))
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply after the kill: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "seed already trained: reused from the cache") || !resumedRE.MatchString(r.stderr) {
		t.Errorf("the apply after the kill neither reused seed 0 nor resumed seed 1:\n%s", r.stderr)
	}
	fresh := t.TempDir()
	if r := gp(t, fresh, "apply", dir); r.code != 0 {
		t.Fatalf("uninterrupted apply: %d\n%s", r.code, r.stderr)
	}
	a, b := openPath(t, cache, dir, "train.gen"), openPath(t, fresh, dir, "train.gen")
	for _, f := range []string{"metrics.json", "seed-0/metrics.json", "seed-1/metrics.json", "seed-1/checkpoint_0.safetensors"} {
		x, y := readFile(filepath.Join(a, f)), readFile(filepath.Join(b, f))
		if x == "" || x != y {
			t.Errorf("%s differs between the resumed and the uninterrupted run (%d and %d bytes)", f, len(x), len(y))
		}
	}
}
