package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// torchvisionNamed writes the train package's ResNeXt parity fixture (a
// bottleneck ResNet with the ImageNet stem, in gatepipe's names) under
// torchvision's names, as a torchvision state_dict saved as safetensors.
func torchvisionNamed(t *testing.T, fixture, path string) {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join("..", "..", "train", "testdata", "parity", fixture))
	if err != nil {
		t.Fatal(err)
	}
	var out []safetensors.Tensor
	for name, tensor := range f.Tensors {
		switch {
		case strings.HasPrefix(name, "parity."):
			continue
		case strings.HasPrefix(name, "head."):
			name = "fc." + strings.TrimPrefix(name, "head.")
		default:
			name = strings.TrimPrefix(name, "encoder.")
		}
		tensor.Name = name
		out = append(out, *tensor)
	}
	if err := safetensors.WriteFile(path, out, nil); err != nil {
		t.Fatal(err)
	}
}

// resnextEncoderBody is the body of pretrainedConfig's encoder block,
// which a test replaces.
const resnextEncoderBody = `  arch            = "resnet"
  channels        = [4, 8]
  blocks          = [2, 1]
  stem            = "imagenet"
  block           = "bottleneck"
  groups          = 2
  width_per_group = 32
  weights         = "w.safetensors"
  preprocess = {
    size     = 16
    channels = 3
    mean     = [0.5, 0.5, 0.5]
    std      = [0.25, 0.25, 0.25]
  }`

const pretrainedConfig = `
dataset "shapes" {
  format = "generated"
  generator {
    task  = "shape"
    train = 60
    test  = 20
    size  = 12
    seed  = 3
  }
  val_fraction = 0.2
}
encoder "resnext" {
` + resnextEncoderBody + `
}
benchmark "shapes" {
  dataset = dataset.shapes.path
  id      = "shapes"
}
features "resnext" {
  encoder   = encoder.resnext
  benchmark = benchmark.shapes
}
output "dim" {
  value = features.resnext.dim
}
`

// TestPretrainedFeaturesFromTorchvisionNames: a features block loads a
// torchvision-named ResNeXt, resizes the 12x12 grey images to the 16x16 RGB
// input its preprocess declares, and is cached on the second apply; a file
// for another architecture is refused naming the tensors.
func TestPretrainedFeaturesFromTorchvisionNames(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	torchvisionNamed(t, "resnext.safetensors", filepath.Join(dir, "w.safetensors"))
	writeFile(t, filepath.Join(dir, "main.hcl"), pretrainedConfig)
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The last stage's width 8 times the bottleneck's expansion 4.
	if !strings.Contains(r.stdout, "dim = 32") {
		t.Errorf("features dim:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, `ignored=["fc.bias","fc.weight"]`) {
		t.Errorf("the classifier should be read and left out:\n%s", r.stderr)
	}
	r = gp(t, cache, "apply", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing ran") {
		t.Fatalf("second apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	torchvisionNamed(t, "convnet.safetensors", filepath.Join(dir, "w.safetensors"))
	r = gp(t, cache, "apply", dir)
	out := r.stdout + r.stderr
	if r.code == 0 || !strings.Contains(out, "missing") || !strings.Contains(out, "encoder.layer1.0.conv1.weight") || !strings.Contains(out, "unused in the file: convs.0.bias") {
		t.Fatalf("weights for another architecture: exit %d\n%s", r.code, out)
	}
}

// TestEncoderConfigErrorsPointAtTheLine: an unknown preset, a malformed
// preprocess and an unknown option are refused at validate with the file
// and line.
func TestEncoderConfigErrorsPointAtTheLine(t *testing.T) {
	const timmConfig = `{"architecture": "resnet50d", "pretrained_cfg": {"input_size": [3, 224, 224], "crop_pct": 0.875, "interpolation": "bicubic", "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}`
	tests := map[string]struct{ body, want, config string }{
		"unknown preset": {body: `preset = "resnet51"`, want: `preset "resnet51" is not known; the closest are resnet50, resnet101`},
		// timm's config.json names an architecture gatepipe lacks: the
		// error names it and the closest presets.
		"unknown architecture in config.json": {body: `weights = "w.safetensors"`, config: timmConfig,
			want: `names the architecture "resnet50d", which gatepipe has no preset for (the closest: resnet50,`},
		"preset and arch": {body: "preset = \"resnet18\"\n  arch = \"vit\"", want: `preset "resnet18" is a resnet, not a vit`},
		"preprocess size": {body: "arch = \"resnet\"\n  preprocess = { size = [1, 2, 3] }", want: "preprocess size must be one number or [H, W]"},
		"preprocess std":  {body: "arch = \"resnet\"\n  preprocess = { size = 8, mean = [0.5], std = [0] }", want: "std [0] must be positive"},
		"activation":      {body: "arch = \"vit\"\n  act = \"relu\"", want: `act "relu" is not supported`},
		"no arch":         {body: `channels = [4]`, want: "an encoder needs arch"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.hcl"), "encoder \"e\" {\n  "+tc.body+"\n}\n")
			if tc.config != "" {
				writeFile(t, filepath.Join(dir, "config.json"), tc.config)
				writeFile(t, filepath.Join(dir, "w.safetensors"), "")
			}
			r := gp(t, t.TempDir(), "validate", dir)
			out := strings.Join(strings.Fields(r.stdout+r.stderr), " ") // unwrapped
			if r.code == 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "main.hcl:") {
				t.Fatalf("exit %d, want an error with %q and the file:line:\n%s", r.code, tc.want, out)
			}
		})
	}
}

// TestFeaturesFromATorchSaveCheckpoint: a torchvision ResNet-18 state dict
// saved with torch.save (a .pth, as torchvision publishes its weights) is
// read without Python: the features block loads every encoder tensor and
// leaves the classifier out.
func TestFeaturesFromATorchSaveCheckpoint(t *testing.T) {
	needTorch(t)
	cache, dir := t.TempDir(), t.TempDir()
	script := "import sys, torch, torchvision\ntorch.manual_seed(0)\ntorch.save(torchvision.models.resnet18().state_dict(), sys.argv[1])\n"
	if out, err := exec.Command(torchPython(), "-c", script, filepath.Join(dir, "resnet18.pth")).CombinedOutput(); err != nil {
		t.Fatalf("writing the checkpoint: %v\n%s", err, out)
	}
	config := strings.NewReplacer(`  arch            = "resnet"
  channels        = [4, 8]
  blocks          = [2, 1]
  stem            = "imagenet"
  block           = "bottleneck"
  groups          = 2
  width_per_group = 32
  weights         = "w.safetensors"`, `  preset  = "resnet18"
  weights = "resnet18.pth"`, "size     = 16", "size     = 32").Replace(pretrainedConfig)
	writeFile(t, filepath.Join(dir, "main.hcl"), config)
	r := gp(t, cache, "apply", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "dim = 512") || !strings.Contains(r.stderr, `"fc.bias","fc.weight"`) || !strings.Contains(r.stderr, "tensors=100") {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestTorchvisionWeightsByName: weights = "torchvision:resnet18.IMAGENET1K_V1"
// validates without the network (the preset and the transform come from
// torchvision's table); apply downloads torchvision's URL (here through a
// mirror) and refuses a file whose SHA-256 does not start with the prefix
// in its name, as torchvision does, without pinning it.
func TestTorchvisionWeightsByName(t *testing.T) {
	needTorch(t)
	dir := t.TempDir()
	pth := filepath.Join(t.TempDir(), "resnet18.pth")
	script := "import sys, torch, torchvision\ntorch.save(torchvision.models.resnet18().state_dict(), sys.argv[1])\n"
	if out, err := exec.Command(torchPython(), "-c", script, pth).CombinedOutput(); err != nil {
		t.Fatalf("writing the checkpoint: %v\n%s", err, out)
	}
	mirror := filepath.Join(t.TempDir(), "mirror")
	data, _ := os.ReadFile(pth)
	writeFile(t, filepath.Join(mirror, "download.pytorch.org", "models", "resnet18-f37072fd.pth"), string(data))
	config := strings.NewReplacer(resnextEncoderBody, `  weights = "torchvision:resnet18.IMAGENET1K_V1"`).Replace(pretrainedConfig)
	writeFile(t, filepath.Join(dir, "main.hcl"), config)
	cache := t.TempDir()
	if r := gp(t, cache, "validate", dir); r.code != 0 {
		t.Fatalf("validate: %d\n%s", r.code, r.stderr)
	}
	// plan names the weights among the sources, before anything runs.
	if r := gp(t, cache, "plan", dir); r.code != 0 || !strings.Contains(r.stdout, "encoder.") || !strings.Contains(r.stdout, "resnet18-f37072fd.pth") {
		t.Errorf("plan does not name the torchvision weights: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := gpEnv(t, cache, []string{"GATEPIPE_MIRROR=" + mirror, "HOME=" + t.TempDir()}, "apply", dir)
	msg := strings.Join(strings.Fields(r.stdout+r.stderr), " ")
	if r.code == 0 || !strings.Contains(msg, "publisher names it by the prefix f37072fd") {
		t.Fatalf("apply with a file that is not torchvision's: %d\n%s", r.code, msg)
	}
	if lock := readFile(filepath.Join(dir, "gatepipe.lock.hcl")); strings.Contains(lock, "resnet18-f37072fd") {
		t.Errorf("the refused file was pinned:\n%s", lock)
	}
}
