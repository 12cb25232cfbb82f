package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// shapesDataset is the generated benchmark both resume tests train on.
const shapesDataset = `
dataset "gen" {
  format   = "generated"
  generator {
    task  = "shape"
    train = 200
    test  = 40
    size  = 16
    seed  = 3
  }
  val_fraction = 0.2
}
benchmark "gen" {
  dataset = dataset.gen.path
  id      = "shape"
}
`

// resumePipeline trains long enough (a few seconds) to be killed midway,
// checkpointing every 50 iterations.
const resumePipeline = shapesDataset + `
encoder "cnn" {
  arch     = "convnet"
  channels = [8]
  hidden   = [16]
}
adapter "head" {}
recipe "r" {
  lr               = 0.001
  batch_size       = 16
  iterations       = 2500
  validate_every   = 50
  checkpoint_every = 50
  top_k            = 2
}
train "gen" {
  encoder   = encoder.cnn
  adapter   = adapter.head
  recipe    = recipe.r
  benchmark = benchmark.gen
}
output "dir" {
  value = train.gen.out_dir
}
`

// killAfterCheckpoint starts an apply of dir and kill -9s it once a file
// matching pattern (under the cache's resume directory) exists, and a
// moment later, so that training is past it and not finished.
func killAfterCheckpoint(t *testing.T, cache, dir, pattern string) {
	t.Helper()
	cmd := exec.Command(binPath, "apply", dir)
	cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(cache, "resume", "*", pattern)); len(m) > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the apply ended (%v) before it checkpointed:\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no checkpoint after 60 s:\n%s", out.String())
		}
	}
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	if err := <-done; err == nil {
		t.Fatalf("the apply finished before it was killed; make the run longer:\n%s", out.String())
	}
}

var resumedRE = regexp.MustCompile(`resumed at iteration (\d+) of 2500`)

// TestKilledTrainResumesAndEndsAsIfUninterrupted: kill -9 of an apply
// mid-train, then apply: the node says where it resumed and its
// checkpoints, metrics and log equal those of a run that was never
// interrupted, bit for bit. A checkpoint of a changed recipe, and a
// truncated one, are not used: a warning, and training starts over.
func TestKilledTrainResumesAndEndsAsIfUninterrupted(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), resumePipeline)
	whole := t.TempDir()
	ref := gp(t, whole, "apply", dir)
	if ref.code != 0 || strings.Contains(ref.stderr, "resumed") {
		t.Fatalf("uninterrupted apply: %d\n%s", ref.code, ref.stderr)
	}

	cache := t.TempDir()
	killAfterCheckpoint(t, cache, dir, "train_state.safetensors")
	r := gp(t, cache, "apply", dir)
	m := resumedRE.FindStringSubmatch(r.stderr)
	if r.code != 0 || m == nil || m[1] == "0" {
		t.Fatalf("apply after kill -9: exit %d, no 'resumed at iteration N of 2500':\n%s", r.code, r.stderr)
	}
	sameOutputs(t, outputDir(t, ref.stdout), outputDir(t, r.stdout))
	if left, _ := filepath.Glob(filepath.Join(cache, "resume", "*")); len(left) != 0 {
		t.Errorf("the finished run left its checkpoints: %v", left)
	}

	// A changed recipe: its checkpoint is from another configuration.
	changed := t.TempDir()
	writeFile(t, filepath.Join(changed, "main.hcl"), strings.Replace(resumePipeline, "lr               = 0.001", "lr               = 0.003", 1))
	killAfterCheckpoint(t, cache, changed, "train_state.safetensors")
	writeFile(t, filepath.Join(changed, "main.hcl"), strings.Replace(resumePipeline, "lr               = 0.001", "lr               = 0.002", 1))
	r = gp(t, cache, "apply", changed)
	if r.code != 0 || resumedRE.MatchString(r.stderr) || !strings.Contains(r.stderr, "was written by another configuration of this block") {
		t.Fatalf("changed recipe: exit %d, want a warning and no resume:\n%s", r.code, r.stderr)
	}

	// A truncated checkpoint.
	trunc, truncCache := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(trunc, "main.hcl"), resumePipeline)
	killAfterCheckpoint(t, truncCache, trunc, "train_state.safetensors")
	states, _ := filepath.Glob(filepath.Join(truncCache, "resume", "*", "train_state.safetensors"))
	info, err := os.Stat(states[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(states[0], info.Size()/2); err != nil {
		t.Fatal(err)
	}
	r = gp(t, truncCache, "apply", trunc)
	if r.code != 0 || resumedRE.MatchString(r.stderr) || !strings.Contains(r.stderr, "is damaged") {
		t.Fatalf("truncated checkpoint: exit %d, want a warning and no resume:\n%s", r.code, r.stderr)
	}
	sameOutputs(t, outputDir(t, ref.stdout), outputDir(t, r.stdout))
}

var outDirRE = regexp.MustCompile(`dir = "([^"]+)"`)

func outputDir(t *testing.T, stdout string) string {
	t.Helper()
	m := outDirRE.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no dir output in:\n%s", stdout)
	}
	return m[1]
}

// sameOutputs compares two train outputs: every checkpoint's tensors
// byte for byte, metrics.json, and the iterations and losses of log.jsonl.
func sameOutputs(t *testing.T, a, b string) {
	t.Helper()
	ckpts, _ := filepath.Glob(filepath.Join(a, "checkpoint_*.safetensors"))
	if len(ckpts) == 0 {
		t.Fatalf("no checkpoints in %s", a)
	}
	for _, ca := range ckpts {
		fa, err := safetensors.ReadFile(ca)
		if err != nil {
			t.Fatal(err)
		}
		fb, err := safetensors.ReadFile(filepath.Join(b, filepath.Base(ca)))
		if err != nil {
			t.Fatal(err)
		}
		if fa.Metadata["iteration"] != fb.Metadata["iteration"] || len(fa.Tensors) != len(fb.Tensors) {
			t.Fatalf("%s: iteration %s vs %s", filepath.Base(ca), fa.Metadata["iteration"], fb.Metadata["iteration"])
		}
		for name, ta := range fa.Tensors {
			if tb := fb.Tensors[name]; tb == nil || !bytes.Equal(ta.Data, tb.Data) {
				t.Fatalf("%s: tensor %s differs from the uninterrupted run's", filepath.Base(ca), name)
			}
		}
	}
	for _, f := range []string{"metrics.json", "log.jsonl"} {
		da, _ := os.ReadFile(filepath.Join(a, f))
		db, _ := os.ReadFile(filepath.Join(b, f))
		if f == "log.jsonl" {
			da, db = stripVarying(da), stripVarying(db)
		}
		if len(da) == 0 || !bytes.Equal(da, db) {
			t.Fatalf("%s differs from the uninterrupted run's:\n%s\nvs\n%s", f, da, db)
		}
	}
}

// stripVarying drops the fields of log lines that depend on the clock,
// and the torch runtime's note of a resume (a line of its own).
var (
	varyingRE = regexp.MustCompile(`,?"(images_per_sec|energy_joules)":[^,}]*`)
	resumeRE  = regexp.MustCompile(`(?m)^\{"resumed": true[^\n]*\n`)
)

func stripVarying(b []byte) []byte { return varyingRE.ReplaceAll(resumeRE.ReplaceAll(b, nil), nil) }

// torchResumePipeline trains the stdlib PyTorch trainer's small CNN for
// a few seconds, checkpointing every 50 iterations.
const torchResumePipeline = shapesDataset + `
module "torch" {
  source           = "stdlib/trainers/torch"
  benchmark        = benchmark.gen
  arch             = "convnet"
  python           = "@PYTHON@"
  lr               = 0.001
  batch_size       = 16
  iterations       = 500
  validate_every   = 50
  checkpoint_every = 50
}
output "dir" {
  value = module.torch.out_dir
}
`

// TestKilledTorchTrainResumes: the stdlib PyTorch trainer module (a train
// block on the torch runtime), killed with its apply, goes on from its
// last checkpoint on the next apply (gatepipe says where) and ends with
// the metrics and kept parameters of a run that never stopped (CPU torch
// is deterministic); a checkpoint of a changed configuration is refused
// with a warning.
func TestKilledTorchTrainResumes(t *testing.T) {
	needTorch(t)
	resumed := regexp.MustCompile(`resumed at iteration (\d+) of 500`)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), withPython(torchResumePipeline))
	ref := gp(t, t.TempDir(), "apply", dir)
	if ref.code != 0 {
		t.Fatalf("uninterrupted apply: %d\n%s", ref.code, ref.stderr)
	}
	cache := t.TempDir()
	killAfterCheckpoint(t, cache, dir, "torch-state.safetensors")
	r := gp(t, cache, "apply", dir)
	if m := resumed.FindStringSubmatch(r.stderr); r.code != 0 || m == nil || m[1] == "0" {
		t.Fatalf("apply after kill -9: exit %d, no 'resumed at iteration N of 500':\n%s", r.code, r.stderr)
	}
	a, b := outputDir(t, ref.stdout), outputDir(t, r.stdout)
	if ma, mb := readFile(filepath.Join(a, "metrics.json")), readFile(filepath.Join(b, "metrics.json")); ma != mb {
		t.Errorf("metrics differ from the uninterrupted run's:\n%s\nvs\n%s", ma, mb)
	}
	fa, errA := safetensors.ReadFile(filepath.Join(a, "checkpoint_0.safetensors"))
	fb, errB := safetensors.ReadFile(filepath.Join(b, "checkpoint_0.safetensors"))
	if errA != nil || errB != nil {
		t.Fatalf("models: %v %v", errA, errB)
	}
	for name, ta := range fa.Tensors {
		if tb := fb.Tensors[name]; tb == nil || !bytes.Equal(ta.Data, tb.Data) {
			t.Errorf("model tensor %s differs from the uninterrupted run's", name)
		}
	}

	changed := strings.Replace(torchResumePipeline, "lr               = 0.001", "lr               = 0.003", 1)
	writeFile(t, filepath.Join(dir, "main.hcl"), withPython(changed))
	killAfterCheckpoint(t, cache, dir, "torch-state.safetensors")
	writeFile(t, filepath.Join(dir, "main.hcl"), withPython(strings.Replace(changed, "0.003", "0.002", 1)))
	r = gp(t, cache, "apply", dir)
	if r.code != 0 || resumed.MatchString(r.stderr) || !strings.Contains(r.stderr, "was written by another configuration of this block") {
		t.Fatalf("changed configuration: exit %d, want a warning and no resume:\n%s", r.code, r.stderr)
	}
}

// TestKilledTrainOnTorchRuntimeResumes: the train block on the torch
// runtime, killed with its apply, goes on from its checkpoint (gatepipe
// says where) and ends with the checkpoints, metrics and log of a run
// that never stopped, bit for bit (deterministic = true: CPU torch is
// deterministic anyway, CUDA's kernels are not by default; the first GPU
// check found its checkpoints differing without it); a checkpoint of a
// changed recipe is not used.
func TestKilledTrainOnTorchRuntimeResumes(t *testing.T) {
	needTorch(t)
	pipeline := withPython(strings.Replace(resumePipeline, "  benchmark = benchmark.gen\n}", "  benchmark = benchmark.gen\n  runtime   = \"torch\"\n  deterministic = true\n  resources { gpus = min(@GPUS@, 1) }\n}", 1))
	if pipeline == resumePipeline {
		t.Fatal("the pipeline did not change")
	}
	env := append(os.Environ(), "GATEPIPE_PYTHON="+torchPython())
	t.Setenv("GATEPIPE_PYTHON", torchPython()) // for killAfterCheckpoint's apply
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), pipeline)
	ref := gpWith(t, append(env, "GATEPIPE_CACHE_DIR="+t.TempDir()), "apply", dir)
	if ref.code != 0 {
		t.Fatalf("uninterrupted apply: %d\n%s", ref.code, ref.stderr)
	}
	cache := t.TempDir()
	killAfterCheckpoint(t, cache, dir, "torch-state.safetensors")
	r := gpWith(t, append(env, "GATEPIPE_CACHE_DIR="+cache), "apply", dir)
	if m := resumedRE.FindStringSubmatch(r.stderr); r.code != 0 || m == nil || m[1] == "0" {
		t.Fatalf("apply after kill -9: exit %d, no 'resumed at iteration N of 2500':\n%s", r.code, r.stderr)
	}
	sameOutputs(t, outputDir(t, ref.stdout), outputDir(t, r.stdout))

	changed := strings.Replace(pipeline, "lr               = 0.001", "lr               = 0.003", 1)
	writeFile(t, filepath.Join(dir, "main.hcl"), changed)
	killAfterCheckpoint(t, cache, dir, "torch-state.safetensors")
	writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(changed, "0.003", "0.002", 1))
	r = gpWith(t, append(env, "GATEPIPE_CACHE_DIR="+cache), "apply", dir)
	if r.code != 0 || resumedRE.MatchString(r.stderr) || !strings.Contains(r.stderr, "was written by another configuration of this block") {
		t.Fatalf("changed recipe: exit %d, want a warning and no resume:\n%s", r.code, r.stderr)
	}
}
