package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPMFEvalGolden runs the masked-ratio protocol on the GATE matrix with
// a short chain and two seeds: the table is deterministic for a seed, and
// the CSV, JSON and figures are written.
func TestPMFEvalGolden(t *testing.T) {
	out := filepath.Join(t.TempDir(), "eval")
	r := gp(t, t.TempDir(), "pmf", "eval", "-seeds", "2", "-ratios", "20,90", "-warmup", "60", "-draws", "20",
		"-methods", "global_mean,mean_of_means,pmf,ptf", "-workers", "2", "-out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	checkGolden(t, "pmf_eval.txt", strings.ReplaceAll(r.stdout, out, "<out>"))
	for _, f := range []string{"masked_ratio.csv", "masked_ratio.json", "masked_ratio.svg", "masked_ratio.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestPMFActive(t *testing.T) {
	out := filepath.Join(t.TempDir(), "active")
	r := gp(t, t.TempDir(), "pmf", "active", "-seeds", "2", "-rounds", "2", "-batch", "10", "-warmup", "60", "-draws", "20", "-out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"rule  ", "\nrandom ", "\nuncertainty ", "\nuncertainty_raw ", "\nvariance ", "\noracle ", "vs random", "Best rule without the truth:",
		"uncertainty ranks the posterior std in units of each column's std", "uncertainty_raw ranks it in each column's own units"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "active.png")); err != nil {
		t.Error(err)
	}
}

func TestPMFBadInput(t *testing.T) {
	dir := t.TempDir()
	holey := filepath.Join(dir, "holey.csv")
	writeFile(t, holey, "category,benchmark,metric,model,value,higher_is_better\nC,a,acc,m1,1,true\nC,a,acc,m2,,true\n")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pmf"}, exitConfigError, "Usage"},
		{[]string{"pmf", "evl"}, exitConfigError, `unknown subcommand "evl"`},
		{[]string{"pmf", "eval", "-ratios", "20,abc"}, exitConfigError, `"abc" is not a number`},
		{[]string{"pmf", "eval", "-ratios", "120"}, exitRunFailure, "not between 0 and 1"},
		{[]string{"pmf", "eval", "-methods", "nuts"}, exitConfigError, `unknown method "nuts"`},
		{[]string{"pmf", "eval", "-matrix", holey}, exitConfigError, "needs a complete matrix"},
		{[]string{"pmf", "eval", "-columns", "some"}, exitConfigError, "-columns must be"},
		{[]string{"pmf", "eval", "-latent", "0"}, exitConfigError, "latent dimension"},
		{[]string{"pmf", "eval", "-profiles", holey}, exitConfigError, "want a header model"},
		{[]string{"pmf", "active", "-rules", "greedy"}, exitConfigError, `unknown rule "greedy"`},
		{[]string{"pmf", "active", "-method", "global_mean"}, exitConfigError, "must be a sampler"},
		{[]string{"pmf", "active", "-start", "0"}, exitRunFailure, "start share"},
	} {
		r := gp(t, t.TempDir(), tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
}
