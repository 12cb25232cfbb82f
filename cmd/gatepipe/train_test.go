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

// TestGeneratedBenchmarksTrain: each procedural task trains through its
// head and reports the GATE matrix's metric names; the results table
// lists them, ↓ on lower-is-better ones.
func TestGeneratedBenchmarksTrain(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
locals {
  tasks = {
    shape   = "classification"
    count   = "regression"
    colours = "multilabel"
    segment = "segmentation"
    video      = "video"
    video_count = "video_regression"
    relational = "relational"
    captions   = "retrieval"
    fewshot    = "fewshot"
    sketch     = "classification"
  }
}
dataset "gen" {
  for_each = local.tasks
  format   = "generated"
  generator {
    task  = each.key
    train = 120
    test  = 40
    size  = 16
    seed  = 3
  }
  val_fraction = 0.2
}
encoder "cnn" {
  arch     = "convnet"
  channels = [4]
  hidden   = [8]
}
# Declared for RGB 8x8 inputs: one-channel 16x16 sketches go through the
# adapter's stem.
encoder "rgb8" {
  arch        = "convnet"
  channels    = [4]
  hidden      = [8]
  input_shape = [3, 8, 8]
}
adapter "head" {
  for_each        = local.tasks
  task            = each.value
  layers   = 1
  dim      = 8
  heads    = 2
  ways     = 3
  shots    = 2
  queries  = 2
}
recipe "quick" {
  batch_size     = 8
  iterations     = 10
  validate_every = 5
  top_k          = 1
}
benchmark "gen" {
  for_each = local.tasks
  dataset  = dataset.gen[each.key].path
  id       = each.key
}
train "gen" {
  for_each  = local.tasks
  encoder   = each.key == "sketch" ? encoder.rgb8 : encoder.cnn
  adapter   = adapter.head[each.key]
  recipe    = recipe.quick
  benchmark = benchmark.gen[each.key]
}
results "gen" {
  metrics = [for k, t in train.gen : t.metrics]
}
output "table" {
  value = results.gen.table
}
`)
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"| shape | Acc@1 |", "| count | MAE Score ↓ |", "| colours | APS Macro |", "| segment | mIoU |", "| segment | Dice Score |", "| video | Acc@1 |", "| video_count | MAE Score ↓ |", "| relational | Acc@1 |", "| captions | Img2Txt Acc@1 |", "| captions | Txt2Img Loss ↓ |", "| fewshot | Acc@1 |", "| sketch | Acc@1 |"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("results table lacks %q:\n%s", want, r.stdout)
		}
	}
	// An adapter that does not fit the dataset's task fails that node only.
	conf, _ := os.ReadFile(filepath.Join(dir, "main.hcl"))
	writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(string(conf), "adapter   = adapter.head[each.key]", `adapter   = adapter.head[each.key == "count" ? "shape" : each.key]`, 1))
	r = gp(t, cache, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "the adapter's task is classification but the benchmark dataset is a regression task") {
		t.Fatalf("mismatched adapter: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestLinearProbesShareCachedFeatures: a features block runs the frozen
// encoder once; two linear heads (an mlp with no hidden layer) with
// different learning rates train on its cached store; a recipe with mode
// linear_probe on the image benchmark trains too; all is cached on the
// second apply.
func TestLinearProbesShareCachedFeatures(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
dataset "shapes" {
  format = "generated"
  generator {
    task  = "shape"
    train = 300
    test  = 100
    size  = 16
    seed  = 2
  }
  val_fraction = 0.2
}
encoder "cnn" {
  arch     = "convnet"
  channels = [8]
  hidden   = []
}
encoder "linear" {
  arch   = "mlp"
  hidden = []
}
adapter "cls" {}
benchmark "images" {
  dataset = dataset.shapes.path
  id      = "shapes"
}
features "cnn" {
  encoder   = encoder.cnn
  benchmark = benchmark.images
}
benchmark "cnn_features" {
  dataset = features.cnn.path
  id      = "shapes"
}
recipe "probe" {
  for_each       = { slow = 0.001, fast = 0.01 }
  lr             = each.value
  batch_size     = 16
  iterations     = 20
  validate_every = 10
  top_k          = 1
}
recipe "frozen" {
  mode           = "linear_probe"
  batch_size     = 16
  iterations     = 20
  validate_every = 10
  top_k          = 1
}
train "probe" {
  for_each  = toset(["slow", "fast"])
  encoder   = encoder.linear
  adapter   = adapter.cls
  recipe    = recipe.probe[each.key]
  benchmark = benchmark.cnn_features
  model     = "cnn-probe-${each.key}"
}
train "frozen" {
  encoder   = encoder.cnn
  adapter   = adapter.cls
  recipe    = recipe.frozen
  benchmark = benchmark.images
}
output "dim" {
  value = features.cnn.dim
}
`)
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// 8 channels on an 8x8 map after one pooling stage.
	if !strings.Contains(r.stdout, "dim = 512") {
		t.Errorf("features dim:\n%s", r.stdout)
	}
	if n := strings.Count(r.stderr, `node=features.cnn took=`); n != 1 {
		t.Errorf("the features node finished %d times, want once:\n%s", n, r.stderr)
	}
	r = gp(t, cache, "apply", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing ran") {
		t.Fatalf("second apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestForEachEncodersAreNamedByKey: the instances of an encoder block
// with for_each are told apart in results (enc[small], enc[wide]), where
// they were all named after the block.
func TestForEachEncodersAreNamedByKey(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
dataset "gen" {
  format = "generated"
  generator {
    task  = "shape"
    train = 40
    test  = 20
    size  = 8
  }
  val_fraction = 0.2
}
locals {
  widths = { small = [4], wide = [8] }
}
encoder "enc" {
  for_each = local.widths
  arch     = "mlp"
  hidden   = each.value
}
adapter "cls" {}
recipe "quick" {
  batch_size     = 8
  iterations     = 2
  validate_every = 2
  top_k          = 1
}
benchmark "gen" {
  dataset = dataset.gen.path
  id      = "shape"
}
train "t" {
  for_each  = local.widths
  encoder   = encoder.enc[each.key]
  adapter   = adapter.cls
  recipe    = recipe.quick
  benchmark = benchmark.gen
}
results "all" {
  metrics = [for k, t in train.t : t.metrics]
}
output "table" {
  value = results.all.table
}
`)
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"enc[small]", "enc[wide]"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("results lack the model %s:\n%s", want, r.stdout)
		}
	}
}
