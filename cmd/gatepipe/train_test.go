package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTransferFromCheckpoint: a train block's best checkpoint feeds the
// next encoder's weights; the transfer run logs the loaded tensors, and a
// second apply is fully cached.
func TestTransferFromCheckpoint(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeToyIDX(t, dir)
	writeFile(t, filepath.Join(dir, "main.hcl"), toyDatasetHCL+`
encoder "scratch" {
  arch     = "resnet"
  channels = [4]
  blocks   = [1]
}
encoder "pretrained" {
  arch     = "resnet"
  channels = [4]
  blocks   = [1]
  weights  = train.pre.checkpoints[0]
}
adapter "cls" {}
recipe "quick" {
  lr             = 0.01
  batch_size     = 8
  iterations     = 20
  validate_every = 10
  top_k          = 1
}
benchmark "toy" {
  dataset  = dataset.toy.path
  category = "Img Class"
}
train "pre" {
  encoder   = encoder.scratch
  adapter   = adapter.cls
  recipe    = recipe.quick
  benchmark = benchmark.toy
}
train "transfer" {
  encoder   = encoder.pretrained
  adapter   = adapter.cls
  recipe    = recipe.quick
  benchmark = benchmark.toy
}
output "acc" {
  value = [train.pre.acc1, train.transfer.acc1]
}
`)
	r := gp(t, cache, "apply", "-log-format", "json", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, `"message":"loaded encoder weights"`) || !strings.Contains(r.stderr, `"tensors":17`) {
		t.Errorf("the transfer run did not report loading 17 tensors (3 convs, 3 batch norms x 4, head x 2):\n%s", r.stderr)
	}
	r = gp(t, cache, "apply", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing ran") {
		t.Fatalf("second apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A weights file that is not safetensors fails the node, naming it.
	bad := filepath.Join(dir, "bad.safetensors")
	if err := os.WriteFile(bad, []byte("not a tensor file"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf, _ := os.ReadFile(filepath.Join(dir, "main.hcl"))
	writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(string(conf), "train.pre.checkpoints[0]", `"bad.safetensors"`, 1))
	r = gp(t, cache, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "bad.safetensors") {
		t.Fatalf("bad weights: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
