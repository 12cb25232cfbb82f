package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEvalWritesThePipelineAndAppliesIt: `gatepipe eval -encoder convnet
// -tier small -scale test` against the test mirror writes the equivalent
// pipeline, applies it (the results table and the report come out), and
// the written pipeline re-applies from the cache.
func TestEvalWritesThePipelineAndAppliesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the small tier's benchmarks")
	}
	hub, srv := newTierHub(t)
	hub.token = "hf_tier"
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + t.TempDir(), "HF_TOKEN=hf_tier", "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	cache := filepath.Join(t.TempDir(), "c")
	out := filepath.Join(t.TempDir(), "ev")
	r := gpEnv(t, cache, env, "eval", "-encoder", "convnet", "-tier", "small", "-scale", "test", "-adapters", "compact", "-out", out)
	if r.code != 0 {
		t.Fatalf("eval: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"| cifar100 | Acc@1 |", "| ade20k | mIoU |", "report.html", " of 22"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("eval output lacks %q:\n%s", want, r.stdout)
		}
	}
	hcl := readFile(filepath.Join(out, "main.hcl"))
	for _, want := range []string{evalMarker, `arch = "convnet"`, `source   = "stdlib/tiers/small"`, `scale    = "test"`, `adapters = "compact"`} {
		if !strings.Contains(hcl, want) {
			t.Errorf("main.hcl lacks %q:\n%s", want, hcl)
		}
	}
	r = gpEnv(t, cache, env, "apply", out)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "nothing ran") {
		t.Errorf("re-applying the written pipeline: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestEvalRefusesBadCommandLines: each mistake gets one line and exit 2,
// and a main.hcl that eval did not write is never replaced.
func TestEvalRefusesBadCommandLines(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	writeFile(t, filepath.Join(mine, "main.hcl"), "# my own pipeline\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "-tier", "small"}, "-encoder is required"},
		{[]string{"eval", "-encoder", "resnet5O"}, "the closest are resnet50"},
		{[]string{"eval", "-encoder", "timm:"}, `names no model`},
		{[]string{"eval", "-encoder", "python:" + filepath.Join(dir, "none.py") + ":MyNet"}, "none.py is not a file"},
		{[]string{"eval", "-encoder", "python:mymodel.py"}, "write python:PATH:CALLABLE"},
		{[]string{"eval", "-encoder", "convnet", "-tier", "huge"}, `-tier "huge": want small, base or big`},
		{[]string{"eval", "-encoder", "convnet", "-runtime", "jax"}, `-runtime "jax"`},
		{[]string{"eval", "-encoder", "convnet", "-runtime", "go", "-gpus", "1"}, "-gpus is 0 or 1, with -runtime torch or auto"},
		{[]string{"eval", "-encoder", "convnet", "-gpus", "2"}, "-gpus is 0 or 1"},
		{[]string{"eval", "-encoder", "convnet", "-seeds", "0,0"}, "seed 0 appears twice"},
		{[]string{"eval", "-encoder", "convnet", "-weights", filepath.Join(dir, "none.safetensors")}, "not a file"},
		{[]string{"eval", "-encoder", "convnet", "-out", mine}, "was not written by eval"},
	} {
		r := gp(t, t.TempDir(), c.args...)
		if r.code != exitConfigError || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
	if got := readFile(filepath.Join(mine, "main.hcl")); got != "# my own pipeline\n" {
		t.Errorf("eval replaced a user's main.hcl: %q", got)
	}
}

// TestEvalYourOwnEncoderOnTheSmallTier: `gatepipe eval -encoder
// python:mymodel.py:MyNet -tier small -scale test` (the tier's fixtures
// served as a mirror) measures all eight benchmarks with a module from the
// user's own file, on the torch runtime that auto picks on a CPU machine.
func TestEvalYourOwnEncoderOnTheSmallTier(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the small tier's benchmarks")
	}
	needTorch(t)
	hub, srv := newTierHub(t)
	hub.token = "hf_tier"
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mymodel.py"), userModule)
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + t.TempDir(), "HF_TOKEN=hf_tier",
		"KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123", "GATEPIPE_PYTHON=" + torchPython()}
	cache := filepath.Join(t.TempDir(), "c")
	out := filepath.Join(t.TempDir(), "ev")
	r := gpEnv(t, cache, env, "eval", "-encoder", "python:"+filepath.Join(work, "mymodel.py")+":MyNet", "-tier", "small", "-scale", "test", "-out", out)
	if r.code != 0 {
		t.Fatalf("eval: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"| cifar100 | Acc@1 |", "| ade20k | mIoU |", "| acdc |", "| iwildcam |", "| clevr-math |", "| imagenet1k |", "| mini |", "| cubirds |", "report.html", " of 22"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("eval output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "Runtime: torch") {
		t.Errorf("eval did not say it runs on torch:\n%s", r.stderr)
	}
	if hcl := readFile(filepath.Join(out, "main.hcl")); !strings.Contains(hcl, `arch = "python:`+filepath.Join(work, "mymodel.py")+`:MyNet"`) {
		t.Errorf("main.hcl does not name the module by its absolute path:\n%s", hcl)
	}
}

// TestEvalSmokeOfflineWithYourOwnEncoder is issue 67's first check:
// `gatepipe eval -encoder python:mymodel.py:MyNet -tier small -scale smoke`
// on a fresh cache, with no mirror and no network, measures all eight
// benchmarks on gatepipe's own fixtures and says the numbers are mechanics
// only; an edit of mymodel.py re-runs the encoder and its train nodes (not
// the datasets); a callable that raises makes plan exit 2 with the file
// and the Python error's message.
func TestEvalSmokeOfflineWithYourOwnEncoder(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the small tier's benchmarks")
	}
	needTorch(t)
	work := t.TempDir()
	model := filepath.Join(work, "mymodel.py")
	writeFile(t, model, userModule)
	env := []string{"HOME=" + t.TempDir(), "GATEPIPE_PYTHON=" + torchPython(), "GATEPIPE_OFFLINE=0"}
	cache := filepath.Join(t.TempDir(), "c")
	out := filepath.Join(t.TempDir(), "ev")
	start := time.Now()
	r := gpEnv(t, cache, env, "eval", "-encoder", "python:"+model+":MyNet", "-tier", "small", "-scale", "smoke", "-out", out)
	if r.code != 0 {
		t.Fatalf("eval: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("eval -scale smoke of the small tier: %s", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{`measured = ["acdc","ade20k","cifar100","clevr-math","cubirds","imagenet1k","iwildcam","mini"]`, `not_run = []`,
		"(smoke: mechanics only, not comparable with the paper)", "> Scale smoke: mechanics only"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("eval output lacks %q:\n%s", want, r.stdout)
		}
	}
	writeFile(t, model, strings.Replace(userModule, "SCALE = 1.0", "SCALE = 0.5", 1))
	r = gpEnv(t, cache, env, "apply", out)
	if r.code != 0 || !strings.Contains(r.stdout, "12 ran, 32 cached") {
		t.Errorf("apply after editing mymodel.py: want the encoder, its 8 train nodes and the 3 collecting nodes to re-run, the rest cached:\n%s%s", r.stdout, r.stderr)
	}
	writeFile(t, filepath.Join(out, "main.hcl"), strings.Replace(readFile(filepath.Join(out, "main.hcl")), ":MyNet", ":Broken", 1))
	r = gpEnv(t, cache, env, "plan", out)
	if said := strings.Join(strings.Fields(r.stderr), " "); r.code != exitConfigError || !strings.Contains(said, "mymodel.py") || !strings.Contains(said, "ValueError: width must be a power of two") {
		t.Errorf("plan of a callable that raises: exit %d, want 2 with the file and the error\n%s", r.code, r.stderr)
	}
}
