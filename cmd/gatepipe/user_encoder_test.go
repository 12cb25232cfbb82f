package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// userModule is a researcher's own encoder: a CNN with a block of its
// own, returning pooled and raw features as GATE's encoder interface does.
const userModule = `import torch
from torch import nn


class Mixer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.pw = nn.Conv2d(c, c, 1)

    def forward(self, x):
        return x + SCALE * self.pw(torch.relu(self.dw(x)))


SCALE = 1.0


class MyNet(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, stride=2, padding=1)
        self.mix = Mixer(width)

    def forward(self, images):
        m = self.mix(torch.relu(self.stem(images)))
        return {"features": m.mean(dim=(2, 3)), "raw_features": m}


def Broken(width=16):
    raise ValueError("width must be a power of two")
`

const userEncoderPipeline = shapesDataset + `
encoder "mine" {
  arch = "python:mymodel.py:@CALLABLE@"
  args = { width = 8 }
}
adapter "head" {}
recipe "r" {
  batch_size = 16
  iterations = 10
}
train "gen" {
  encoder   = encoder.mine
  adapter   = adapter.head
  recipe    = recipe.r
  benchmark = benchmark.gen
  @RUNTIME@
}
`

// TestYourOwnEncoder: a module in the user's own file trains on the
// torch runtime (runtime "auto" picks it on a CPU machine); editing the
// file re-runs the train node; a callable that raises makes plan exit 2
// with the file, line and Python error; the Go runtime refuses it, naming
// the torch runtime.
func TestYourOwnEncoder(t *testing.T) {
	needTorch(t)
	dir, cache := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache, "GATEPIPE_PYTHON="+torchPython())
	pipeline := func(callable, runtime string) {
		writeFile(t, filepath.Join(dir, "main.hcl"), strings.NewReplacer("@CALLABLE@", callable, "@RUNTIME@", runtime).Replace(userEncoderPipeline))
	}
	writeFile(t, filepath.Join(dir, "mymodel.py"), userModule)
	pipeline("MyNet", "")
	if r := gpWith(t, env, "apply", dir); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "6 ran") {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(cache, "objects", "*", "*", "run.json"))
	if len(runs) != 1 || !strings.Contains(readFile(runs[0]), `"runtime": "torch"`) {
		t.Errorf("the train node did not run on the torch runtime: %v", runs)
	}
	writeFile(t, filepath.Join(dir, "mymodel.py"), strings.Replace(userModule, "SCALE = 1.0", "SCALE = 0.5", 1))
	if r := gpWith(t, env, "apply", dir); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "2 ran") {
		t.Fatalf("apply after editing mymodel.py: want the encoder and train nodes to re-run\n%s%s", r.stdout, r.stderr)
	}
	pipeline("Broken", "")
	r := gpWith(t, env, "plan", dir)
	said := strings.Join(strings.Fields(r.stderr), " ")
	for _, want := range []string{"main.hcl:", "Encoder does not build", "ValueError: width must be a power of two", "mymodel.py:"} {
		if r.code != exitConfigError || !strings.Contains(said, want) {
			t.Fatalf("plan of a callable that raises: exit %d, want 2 with %q\n%s", r.code, want, r.stderr)
		}
	}
	pipeline("Missing", "")
	if r := gpWith(t, env, "plan", dir); r.code != exitConfigError || !strings.Contains(r.stderr, "has no callable 'Missing'") {
		t.Fatalf("plan of a missing callable: exit %d\n%s", r.code, r.stderr)
	}
	os.Rename(filepath.Join(dir, "mymodel.py"), filepath.Join(dir, "gone.py"))
	pipeline("MyNet", "")
	if r := gpWith(t, env, "validate", dir); r.code != exitConfigError || !strings.Contains(r.stderr, "Encoder file not found") {
		t.Fatalf("validate of a missing file: exit %d\n%s", r.code, r.stderr)
	}
	os.Rename(filepath.Join(dir, "gone.py"), filepath.Join(dir, "mymodel.py"))
	pipeline("MyNet", `runtime = "go"`)
	r = gpWith(t, env, "plan", dir)
	if said := strings.Join(strings.Fields(r.stderr), " "); r.code != exitConfigError || !strings.Contains(said, "your own PyTorch module") || !strings.Contains(said, `runtime = "torch"`) {
		t.Fatalf("plan on the Go runtime: exit %d\n%s", r.code, r.stderr)
	}
}
