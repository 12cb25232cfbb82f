package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const evaluationsConfig = `
dataset "shapes" {
  format = "generated"
  generator {
    task  = "shape"
    train = 150
    test  = 90
    size  = 10
    seed  = 5
  }
  val_fraction = 0.1
}
benchmark "shapes" {
  dataset = dataset.shapes.path
  id      = "shapes"
}
locals {
  zoo = { small = [8], large = [32], deep = [16, 8] }
}
encoder "mlp" {
  for_each = local.zoo
  arch     = "mlp"
  hidden   = each.value
}
features "f" {
  for_each  = local.zoo
  encoder   = encoder.mlp[each.key]
  benchmark = benchmark.shapes
}
features "p" {
  for_each  = local.zoo
  encoder   = encoder.mlp[each.key]
  benchmark = benchmark.shapes
  output    = "probabilities"
  classes   = 4
}
probe "p" {
  for_each       = local.zoo
  features       = features.f[each.key]
  shots          = [2, 0]
  seeds          = [0, 1]
  vtab1k         = true
  learning_rates = [0.01, 0.1]
  epochs         = 3
  final_epochs   = 5
}
episodes "e" {
  for_each = local.zoo
  features = features.f[each.key]
  split    = "train"
  episodes = 20
  min_ways = 3
}
episodes "fixed" {
  for_each = local.zoo
  features = features.f[each.key]
  split    = "train"
  episodes = 10
  ways     = 3
  shots    = 2
  queries  = 2
  adapters = ["proto_euclidean", "cosine_classifier"]
}
transferability "t" {
  models = {
    for k, v in local.zoo : k => {
      features      = features.f[k]
      probabilities = features.p[k]
      accuracy      = { small = 60, large = 80, deep = 70 }[k]
    }
  }
  static  = ["large", "deep", "small"]
  history = { other = { small = 1, large = 3, deep = 2 } }
}
report "r" {
  transferability = [transferability.t.path]
  probes          = [for k, p in probe.p : p.path]
  episodes        = concat([for k, e in episodes.e : e.path], [for k, e in episodes.fixed : e.path])
}
output "dirs" {
  value = {
    probe    = { for k, p in probe.p : k => p.path }
    episodes = { for k, e in episodes.e : k => e.path }
    transfer = transferability.t.path
    report   = report.r.html
  }
}
`

// TestEvaluationBlocksEndToEnd runs probe, episodes and transferability
// blocks on three encoders' cached features: the index lists are the same
// for every encoder, every metric is judged beside both baselines, the
// report has the three sections, and a second apply runs nothing.
func TestEvaluationBlocksEndToEnd(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), evaluationsConfig)
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`dirs = (\{.*\})`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no dirs output:\n%s", r.stdout)
	}
	var dirs struct {
		Probe, Episodes map[string]string
		Transfer        string
		Report          string
	}
	if err := json.Unmarshal([]byte(m[1]), &dirs); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		t.Helper()
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, file := range []string{"subsets/2_seed0.json", "subsets/2_seed1.json", "subsets/full_seed0.json", "subsets/vtab1k_seed1.json"} {
		if a, b := read(filepath.Join(dirs.Probe["small"], file)), read(filepath.Join(dirs.Probe["large"], file)); a != b {
			t.Errorf("%s differs between encoders", file)
		}
	}
	if read(filepath.Join(dirs.Probe["small"], "subsets/2_seed0.json")) == read(filepath.Join(dirs.Probe["small"], "subsets/2_seed1.json")) {
		t.Error("seeds 0 and 1 drew the same few-shot subset")
	}
	if a, b := read(filepath.Join(dirs.Episodes["small"], "episode_indices.json")), read(filepath.Join(dirs.Episodes["deep"], "episode_indices.json")); a != b {
		t.Error("episodes differ between encoders")
	}
	checkProbeJSON(t, read(filepath.Join(dirs.Probe["deep"], "probe.json")))
	checkTransferabilityRows(t, read(filepath.Join(dirs.Transfer, "transferability.json")))
	page := read(dirs.Report)
	for _, want := range []string{`id="transferability"`, `id="probes"`, `id="episodes"`, "against training examples per class", "Group means over sources"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if !strings.Contains(page, "static ranking") || !(strings.Contains(page, "Not better than the static ranking") || strings.Contains(page, "Every metric beats the static ranking")) {
		t.Error("report does not say which metrics beat the static ranking")
	}
	r = gp(t, cache, "apply", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing ran") {
		t.Fatalf("second apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// checkProbeJSON checks a probe node's probe.json: three subsets (the
// last VTAB-1k), two seeds each, each seed's learning rate searched over
// the grid.
func checkProbeJSON(t *testing.T, data string) {
	t.Helper()
	var probe struct {
		Subsets []struct {
			Name  string
			Seeds []struct {
				LR     float64 `json:"lr"`
				Trials []any   `json:"trials"`
			}
		}
		Parameters int `json:"trainable_parameters"`
	}
	if err := json.Unmarshal([]byte(data), &probe); err != nil {
		t.Fatal(err)
	}
	if len(probe.Subsets) != 3 || probe.Subsets[2].Name != "vtab1k" || len(probe.Subsets[0].Seeds) != 2 || probe.Parameters == 0 {
		t.Fatalf("probe.json: %+v", probe)
	}
	for _, s := range probe.Subsets[0].Seeds {
		if (s.LR != 0.01 && s.LR != 0.1) || len(s.Trials) < 2*7 {
			t.Fatalf("seed searched lr %g with %d trials", s.LR, len(s.Trials))
		}
	}
}

// checkTransferabilityRows checks that transferability.json has a row per
// metric and baseline, each metric judged against both baselines.
func checkTransferabilityRows(t *testing.T, data string) {
	t.Helper()
	var tr struct {
		Rows []struct {
			Name        string
			Baseline    bool
			BeatsStatic *bool `json:"beats_static"`
			BeatsMean   *bool `json:"beats_mean_rank"`
			Error       string
		}
	}
	if err := json.Unmarshal([]byte(data), &tr); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, row := range tr.Rows {
		names[row.Name] = true
		if !row.Baseline && row.Error == "" && (row.BeatsStatic == nil || row.BeatsMean == nil) {
			t.Errorf("%s is not judged against both baselines", row.Name)
		}
	}
	for _, want := range []string{"logme", "leep", "nce", "nleep", "hscore", "transrate", "gbc", "sfda", "static ranking", "mean rank"} {
		if !names[want] {
			t.Errorf("transferability has no %s row: %v", want, names)
		}
	}
}

// TestProbabilitiesClassesFromAReference: classes may come from a block
// that has not run at validate time (unknown then), without an error.
func TestProbabilitiesClassesFromAReference(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), "dataset \"d\" {\n  format = \"generated\"\n  generator {\n    task = \"shape\"\n    train = 10\n    test = 5\n  }\n}\nbenchmark \"b\" {\n  dataset = dataset.d.path\n}\nencoder \"e\" {\n  arch = \"mlp\"\n}\nfeatures \"p\" {\n  encoder = encoder.e\n  benchmark = benchmark.b\n  output = \"probabilities\"\n  classes = dataset.d.num_classes\n}\n")
	if r := gp(t, t.TempDir(), "validate", dir); r.code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestEvaluationConfigErrorsPointAtTheLine: bad evaluation settings are
// refused at validate with the file and line.
func TestEvaluationConfigErrorsPointAtTheLine(t *testing.T) {
	head := "dataset \"d\" {\n  format = \"generated\"\n  generator {\n    task = \"shape\"\n    train = 10\n    test = 5\n  }\n}\nbenchmark \"b\" {\n  dataset = dataset.d.path\n}\nencoder \"e\" {\n  arch = \"mlp\"\n}\nfeatures \"f\" {\n  encoder = encoder.e\n  benchmark = benchmark.b\n}\n"
	tests := map[string]struct{ body, want string }{
		"probe metric":       {"probe \"p\" {\n  features = features.f\n  metric = \"f1\"\n}", `metric must be one of`},
		"probe not features": {"probe \"p\" {\n  features = encoder.e\n}", "features must be a features block"},
		"partial episode":    {"episodes \"e\" {\n  features = features.f\n  ways = 5\n}", "need ways, shots and queries together"},
		"unknown adapter":    {"episodes \"e\" {\n  features = features.f\n  adapters = [\"maml\"]\n}", "adapters must be among"},
		"two models":         {"transferability \"t\" {\n  models = { a = { features = features.f, accuracy = 1 }, b = { features = features.f, accuracy = 2 } }\n}", "at least 3 models"},
		"leep without probs": {"transferability \"t\" {\n  metrics = [\"leep\"]\n  models = { a = { features = features.f, accuracy = 1 }, b = { features = features.f, accuracy = 2 }, c = { features = features.f, accuracy = 3 } }\n}", "leep needs probabilities"},
		"probabilities":      {"features \"g\" {\n  encoder = encoder.e\n  benchmark = benchmark.b\n  output = \"probabilities\"\n}", "needs classes"},
		"classes":            {"features \"g\" {\n  encoder = encoder.e\n  benchmark = benchmark.b\n  output = \"probabilities\"\n  classes = 1.5\n}", "classes must be whole numbers of at least 2"},
		"empty report":       {"report \"r\" {\n  title = \"x\"\n}", "A report needs a matrix"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.hcl"), head+tc.body+"\n")
			r := gp(t, t.TempDir(), "validate", dir)
			out := r.stdout + r.stderr
			if r.code == 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "main.hcl:") {
				t.Fatalf("exit %d, want an error with %q and the file:line:\n%s", r.code, tc.want, out)
			}
		})
	}
}
