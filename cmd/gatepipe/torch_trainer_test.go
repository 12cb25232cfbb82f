package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/torchtest"
	commandnode "github.com/gatepipe/gatepipe/nodes/command"
)

// torchPython is the Python with PyTorch the torch tests run.
func torchPython() string { return torchtest.Python() }

// withPython puts torchPython into a pipeline's @PYTHON@ placeholders, and
// the GPUs torch blocks run on (torchtest.GPUCount: 0 but under make
// gpu-check) into its @GPUS@ ones.
func withPython(hcl string) string {
	hcl = strings.ReplaceAll(hcl, "@GPUS@", strconv.Itoa(torchtest.GPUCount()))
	return strings.ReplaceAll(hcl, "@PYTHON@", torchPython())
}

// needTorch skips the test (fails it in CI) without torch and torchvision.
func needTorch(t *testing.T) {
	t.Helper()
	torchtest.Need(t, "torch", "torchvision")
}

const torchPipeline = `
module "mini" {
  source     = "stdlib/datasets/mini"
  image_size = [16, 16]
  max_train  = 200
}

module "ade20k" {
  source     = "stdlib/datasets/ade20k"
  image_size = [16, 16]
}

benchmark "mini" {
  dataset = module.mini.dataset.path
  id      = "mini"
}

benchmark "ade20k" {
  dataset  = module.ade20k.dataset.path
  id       = "ade20k"
  category = "Img Seg"
}

module "torch_mini" {
  source         = "stdlib/trainers/torch"
  benchmark      = benchmark.mini
  arch           = "resnet18"
  python         = "@PYTHON@"
  batch_size     = 16
  iterations     = 6
  validate_every = 3
}

module "torch_ade20k" {
  source         = "stdlib/trainers/torch"
  benchmark      = benchmark.ade20k
  arch           = "convnet"
  task           = "segmentation"
  python         = "@PYTHON@"
  batch_size     = 8
  iterations     = 4
  validate_every = 2
}

results "torch" {
  metrics = [module.torch_mini.metrics, module.torch_ade20k.metrics]
}

output "table" { value = results.torch.table }
output "log"   { value = "${module.torch_mini.out_dir}/log.jsonl" }
output "seg"   { value = "${module.torch_ade20k.out_dir}/checkpoint_0.safetensors" }
`

// TestStdlibTorchTrainer runs the stdlib PyTorch trainer with Debian's
// python3-torch on two fixture benchmarks served through a mirror:
// torchvision's ResNet-18 on a classification store and the small CNN
// with the segmentation head on ADE20K masks. Their metrics land in one
// results table with GATE's names, the log streams progress, and a
// second apply runs nothing.
func TestStdlibTorchTrainer(t *testing.T) {
	needTorch(t)
	_, srv := newTierHub(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), withPython(torchPipeline))
	cache := filepath.Join(t.TempDir(), "c")
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + t.TempDir(), "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	r := gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"resnet18", "convnet", "mini", "ade20k", "Acc@1", "mIoU", "Dice Score", "CE Loss ↓"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("results table lacks %q:\n%s", want, r.stdout)
		}
	}
	// The fixture's mini-ImageNet has 5 classes or fewer: top-5 accuracy
	// would be 100 whatever the model, so it is not reported.
	if strings.Contains(r.stdout, "Acc@5") {
		t.Errorf("Acc@5 reported for a benchmark of 5 classes or fewer:\n%s", r.stdout)
	}
	var logPath string
	for _, line := range strings.Split(r.stdout, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "log =") {
			logPath = strings.Trim(strings.TrimSpace(strings.SplitN(line, "=", 2)[1]), `"`)
		}
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var validated bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if _, ok := rec["val"]; ok && rec["total"] == 6.0 {
			validated = true
		}
	}
	if !validated {
		t.Errorf("the log has no validation line:\n%s", data)
	}
	// The convnet's convolutions are in the kept parameters beside the
	// segmentation head: the encoder trains with it.
	seg := regexp.MustCompile(`seg = "([^"]+)"`).FindStringSubmatch(r.stdout)
	if seg == nil {
		t.Fatalf("no seg output:\n%s", r.stdout)
	}
	model, err := safetensors.ReadFile(seg[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"encoder.convs.0.weight", "encoder.convs.0.bias", "encoder.convs.1.weight", "encoder.convs.1.bias", "head.weight"} {
		if model.Tensors[name] == nil {
			t.Errorf("the segmentation model lacks %s: the encoder is not part of what trains", name)
		}
	}
	r = gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "nothing ran") {
		t.Fatalf("second apply: %d\n%s", r.code, r.stderr)
	}
}

// TestSmallTierOnTheTorchTrainer: trainer = "torch" trains the small
// tier's encoder on the torch runtime for every benchmark (segmentation
// and few-shot here) into the same results, prediction and report. With
// seeds = [0, 1] each benchmark trains once per seed, and the table shows
// n=2.
func TestSmallTierOnTheTorchTrainer(t *testing.T) {
	needTorch(t)
	hub, srv := newTierHub(t)
	hub.token = "hf_tier"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), withPython(strings.Replace(tierPipeline, `scale   = "test"`,
		`scale   = "test"
  trainer = "torch"
  gpus    = min(@GPUS@, 1)
  seeds   = [0, 1]
  python  = "@PYTHON@"`, 1)))
	cache := filepath.Join(t.TempDir(), "c")
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + t.TempDir(), "HF_TOKEN=hf_tier", "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	r := gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Every benchmark trained the tier's encoder on the torch runtime.
	for _, want := range []string{`train.run[\"ade20k\"]`, `train.run[\"mini\"]`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no %s in the log", want)
		}
	}
	runs := 0
	filepath.WalkDir(cache, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Name() == "run.json" && strings.Contains(p, "seed-") {
			if info := readFile(p); !strings.Contains(info, `"runtime": "torch"`) {
				t.Errorf("%s: not trained on the torch runtime:\n%s", p, info)
			}
			runs++
		}
		return nil
	})
	if runs < 4 { // each seed's run is in the cache as a part and in its block's output
		t.Errorf("%d seed runs, want at least 2 benchmarks x 2 seeds", runs)
	}
	for _, want := range []string{"mIoU", "Acc@1", " of 22", "report.html"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, r.stdout)
		}
	}
	// Both results are means over the two seeds.
	for _, want := range []string{"| ade20k | mIoU |", "| mini | Acc@1 |"} {
		if i := strings.Index(r.stdout, want); i < 0 || !strings.Contains(strings.SplitN(r.stdout[i:], "\n", 2)[0], "(n=2)") {
			t.Errorf("the row %q is not a mean over 2 seeds:\n%s", want, r.stdout)
		}
	}

	// torch_arch trains torchvision's ResNet-18 on every benchmark
	// instead of the encoder, through the same train blocks.
	writeFile(t, filepath.Join(dir, "main.hcl"), withPython(strings.Replace(tierPipeline, `scale   = "test"`,
		`scale   = "test"
  trainer    = "torch"
  torch_arch = "resnet18"
  python     = "@PYTHON@"`, 1)))
	r = gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply with torch_arch: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var archs []string
	filepath.WalkDir(cache, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Name() == "checkpoint_0.safetensors" && !strings.Contains(p, "seed-") {
			if f, err := safetensors.ReadFile(p); err == nil {
				archs = append(archs, f.Metadata["arch"])
			}
		}
		return nil
	})
	if n := strings.Count(strings.Join(archs, " "), "torchvision:resnet18"); n < 2 {
		t.Errorf("torch_arch: %d benchmarks trained torchvision:resnet18 (archs %v), want both", n, archs)
	}
}

// writeResNetWeights saves a randomly initialised torchvision ResNet-18
// as safetensors with gatepipe's "encoder." prefix on every name, as the
// built-in trainer's checkpoints name encoder tensors.
const writeResNetWeights = `
import json, struct, sys, torch, torchvision
torch.manual_seed(0)
sd = torchvision.models.resnet18(num_classes=7).state_dict()
header, blobs, off = {}, [], 0
for k, v in sd.items():
    if v.dtype != torch.float32:
        continue
    if len(sys.argv) > 2 and k == sys.argv[2]:  # poison one value
        v = v.clone()
        v.view(-1)[5] = float("nan")
    b = v.contiguous().numpy().tobytes()
    header["encoder." + k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
`

// TestTorchTrainerResNetOnGreyImagesWithEncoderWeights runs the paths the
// other torch tests leave out: a torchvision ResNet on one-channel images
// (ACDC slices) with the segmentation head, starting from weights whose
// names carry gatepipe's "encoder." prefix; the worker logs how many
// tensors it loaded and leaves the new head (and the grey stem) fresh.
func TestTorchTrainerResNetOnGreyImagesWithEncoderWeights(t *testing.T) {
	needTorch(t)
	_, srv := newTierHub(t)
	dir := t.TempDir()
	weights := filepath.Join(dir, "resnet18.safetensors")
	if out, err := exec.Command(torchPython(), "-c", writeResNetWeights, weights).CombinedOutput(); err != nil {
		t.Fatalf("writing the weights: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), withPython(`
module "acdc" {
  source     = "stdlib/datasets/acdc"
  image_size = [32, 32]
}

benchmark "acdc" {
  dataset  = module.acdc.dataset.path
  id       = "acdc"
  category = "Medical Seg"
}

module "torch_acdc" {
  source         = "stdlib/trainers/torch"
  benchmark      = benchmark.acdc
  arch           = "resnet18"
  task           = "segmentation"
  weights        = abspath("resnet18.safetensors")
  python         = "@PYTHON@"
  batch_size     = 8
  iterations     = 2
  validate_every = 2
}

output "table" { value = results.t.table }
output "dir"   { value = module.torch_acdc.out_dir }
results "t" {
  metrics = [module.torch_acdc.metrics]
}
`))
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + t.TempDir(), "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	r := gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "mIoU") || !strings.Contains(r.stdout, "resnet18") {
		t.Errorf("results table lacks mIoU or the model:\n%s", r.stdout)
	}
	out := regexp.MustCompile(`dir = "([^"]+)"`).FindStringSubmatch(r.stdout)
	if out == nil {
		t.Fatalf("no out_dir in the outputs:\n%s", r.stdout)
	}
	log := readFile(filepath.Join(out[1], commandnode.TrainerLogFile))
	m := regexp.MustCompile(`(\d+) tensors loaded, (\d+) left as initialised`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the worker did not log the weights it loaded:\n%s", log)
	}
	// ResNet-18 has 102 float tensors: all but the three-channel stem
	// (the images are grey) and the classifier (fc, replaced by the
	// segmentation head) fit. Without the prefix dropped none would.
	if loaded, _ := strconv.Atoi(m[1]); loaded != 99 {
		t.Errorf("%s tensors of the encoder loaded, want 99 of its 102 (not conv1 on grey images, not fc)", m[1])
	}
	if strings.Contains(log, "Warning") {
		t.Errorf("the trainer warned:\n%s", log)
	}
	encoderIsTrained(t, weights, filepath.Join(out[1], "checkpoint_0.safetensors"))

	// One NaN in the weights: refused when they are loaded, naming the
	// tensor and the count, instead of a run that trains around it.
	if out, err := exec.Command(torchPython(), "-c", writeResNetWeights, weights, "layer2.0.conv1.weight").CombinedOutput(); err != nil {
		t.Fatalf("writing the weights: %v\n%s", err, out)
	}
	r = gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "layer2.0.conv1.weight holds 1 NaN and 0 infinite of 73728 values") {
		t.Fatalf("apply with a NaN in the weights: %d\n%s", r.code, r.stderr)
	}
}

// encoderIsTrained checks that the parameters a torch segmentation run
// kept hold every float tensor of the encoder it started from under
// torchvision's names (encoder.*; not fc, which the head replaces, nor
// conv1, rebuilt for grey images with the same name) and that
// fine-tuning changed them.
func encoderIsTrained(t *testing.T, initPath, modelPath string) {
	t.Helper()
	init, err := safetensors.ReadFile(initPath)
	if err != nil {
		t.Fatal(err)
	}
	model, err := safetensors.ReadFile(modelPath)
	if err != nil {
		t.Fatalf("the run kept no parameters: %v", err)
	}
	for name, before := range init.Tensors {
		if strings.HasPrefix(name, "encoder.fc.") {
			continue
		}
		after := model.Tensors[name]
		if after == nil {
			t.Errorf("the kept parameters lack %s", name)
			continue
		}
		if name == "encoder.layer1.0.conv1.weight" && bytes.Equal(before.Data, after.Data) {
			t.Errorf("layer1.0.conv1.weight did not change in training")
		}
	}
	if model.Tensors["head.weight"] == nil {
		t.Errorf("the kept parameters lack the segmentation head")
	}
}

// TestTorchTrainerSaysWhatIsMissing: a Python without torch, and a timm:
// model where timm is missing, fail the node with one line that names
// the node, the interpreter and what to install, not a traceback.
func TestTorchTrainerSaysWhatIsMissing(t *testing.T) {
	needTorch(t)
	dir := t.TempDir()
	// The interpreter without its site packages: no torch.
	bare := filepath.Join(dir, "bare-python")
	writeFile(t, bare, "#!/bin/sh\nexec "+torchPython()+" -S \"$@\"\n")
	os.Chmod(bare, 0o755)
	pipeline := func(python, arch string) string {
		return strings.NewReplacer("@PY@", python, "@ARCH@", arch).Replace(`
dataset "gen" {
  format = "generated"
  generator {
    task  = "shape"
    train = 20
    test  = 10
    size  = 8
  }
  val_fraction = 0.2
}
benchmark "gen" {
  dataset = dataset.gen.path
  id      = "shape"
}
module "torch" {
  source     = "stdlib/trainers/torch"
  benchmark  = benchmark.gen
  arch       = "@ARCH@"
  python     = "@PY@"
  iterations = 1
}
`)
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), pipeline(bare, "convnet"))
	r := gp(t, t.TempDir(), "apply", dir)
	if all := strings.Join(strings.Fields(r.stdout+r.stderr), " "); r.code == 0 || !strings.Contains(all, "module.torch.train.run") || !strings.Contains(all, "cannot import torch") ||
		!strings.Contains(all, "python3-torch") {
		t.Fatalf("no torch: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "Traceback") {
		t.Errorf("a traceback instead of one line:\n%s", r.stderr)
	}
	if exec.Command(torchPython(), "-c", "import timm").Run() == nil {
		return // timm is there: the missing-timm message cannot be shown
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), pipeline(torchPython(), "timm:resnet50"))
	r = gp(t, t.TempDir(), "apply", dir)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "cannot import timm: pip install timm") {
		t.Fatalf("no timm: exit %d\n%s", r.code, r.stderr)
	}
}
