package torchrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/torchtest"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/train"
	"github.com/rs/zerolog"
)

// The torch runtime against a bare PyTorch loop over the same store and
// model (testdata/peers/bare_loops.py at the repository root), on the GPU when the interpreter
// ($GATEPIPE_TEST_PYTHON) sees one, else on CPU torch with the peer in
// its best CPU configuration. Sizes: GATEPIPE_BENCH_IMAGES (default 64;
// 2048 on a GPU), GATEPIPE_BENCH_THREADS (default: every core).

type peerResult struct {
	Images       int     `json:"images"`
	Seconds      float64 `json:"seconds"`
	ImagesPerSec float64 `json:"images_per_sec"`
	Device       string  `json:"device"`
	Threads      int     `json:"threads"`
}

func benchSetup(b *testing.B) (cuda bool, threads, images int) {
	torchtest.Need(b, "torch", "torchvision")
	out, err := exec.Command(torchtest.Python(), "-c", "import torch; print(torch.cuda.is_available())").Output()
	if err != nil {
		b.Fatal(err)
	}
	cuda = strings.TrimSpace(string(out)) == "True"
	threads, images = runtime.NumCPU(), 128
	if cuda {
		images = 2048
	}
	if v, err := strconv.Atoi(os.Getenv("GATEPIPE_BENCH_THREADS")); err == nil && v > 0 {
		threads = v
	}
	if v, err := strconv.Atoi(os.Getenv("GATEPIPE_BENCH_IMAGES")); err == nil && v > 0 {
		images = v
	}
	return cuda, threads, images
}

// imageStore writes a classification store of random 3x224x224 uint8
// images: n in train, 8 in val and test.
func imageStore(b *testing.B, n, classes int) string {
	dir := b.TempDir()
	var seed [32]byte
	seed[0] = 1
	rng := rand.NewChaCha8(seed) // fills gigabytes in seconds (the GPU feed's 20,000 images are 3 GB)
	split := func(n int) *examplestore.Split {
		x := make([]byte, n*3*224*224)
		rng.Read(x)
		ys, idx := make([]int64, n), make([]int64, n)
		for i := range ys {
			ys[i], idx[i] = int64(i%classes), int64(i)
		}
		return &examplestore.Split{X: safetensors.Tensor{DType: safetensors.U8, Shape: []int{n, 3, 224, 224}, Data: x},
			Y: safetensors.I64Tensor("y", []int{n}, ys), Index: idx}
	}
	meta := &examplestore.Meta{Format: "bench", Task: "classification", NumClasses: classes, Shape: []int{3, 224, 224}, DType: "U8",
		Normalize: examplestore.Normalization{Scale: 1.0 / 255, Mean: []float64{0.45, 0.45, 0.45}, Std: []float64{0.225, 0.225, 0.225}}}
	if err := examplestore.Write(dir, meta, map[string]*examplestore.Split{"train": split(n), "val": split(8), "test": split(8)}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// peerEnv is the peer's best CPU configuration (the same for the worker).
func peerEnv(threads int) []string {
	return []string{fmt.Sprintf("OMP_NUM_THREADS=%d", threads), "OPENBLAS_NUM_THREADS=1",
		"MALLOC_MMAP_THRESHOLD_=1000000000", "MALLOC_TRIM_THRESHOLD_=1000000000"}
}

func runPeer(b *testing.B, threads int, args ...string) peerResult {
	cmd := exec.Command(torchtest.Python(), append([]string{filepath.Join("..", "..", "testdata", "peers", "bare_loops.py")}, args...)...)
	cmd.Env = append(os.Environ(), peerEnv(threads)...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			b.Fatalf("bare loop: %v: %s", err, ee.Stderr)
		}
		b.Fatalf("bare loop: %v", err)
	}
	var r peerResult
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("bare loop output %q: %v", out, err)
	}
	return r
}

// benchEnv is a node's: the worker runs in the user's environment
// without the peers' settings, with what gatepipe adds itself
// (torchrt.WorkerEnv, which torchrt.Run gives it).
func benchEnv(b *testing.B, cuda bool, threads int) *nodes.Env {
	unsetPeerSettings(b)
	env := &nodes.Env{OutDir: b.TempDir(), Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: threads}}
	if cuda {
		env.Devices.GPUs = []string{"0"}
	}
	return env
}

func report(b *testing.B, what string, ours, peer float64, p peerResult, threads int, busy string) {
	b.ReportMetric(ours, "img/s")
	b.ReportMetric(peer, "peer-img/s")
	b.ReportMetric(ours/peer, "ratio")
	fmt.Printf("%s: torch runtime %.1f img/s%s (node env %s), bare PyTorch loop %.1f img/s (%s, %d threads; peer env %s): %.2fx\n",
		what, ours, busy, strings.Join(torchrt.WorkerEnv(threads), " "), peer, p.Device, p.Threads, strings.Join(peerEnv(threads), " "), ours/peer)
}

// unsetPeerSettings takes the peers' settings out of this process's
// environment (restored after b), which the worker inherits.
func unsetPeerSettings(b *testing.B) {
	for _, k := range []string{"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"} {
		b.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// utilisation samples GPU 0's utilisation (nvidia-smi) every 200 ms
// until stop is called, which returns ", GPU busy N% (mean of K samples)"
// (empty without a GPU or nvidia-smi).
func utilisation(cuda bool) (stop func() string) {
	if _, err := exec.LookPath("nvidia-smi"); !cuda || err != nil {
		return func() string { return "" }
	}
	done := make(chan struct{})
	res := make(chan string)
	go func() {
		var sum, n float64
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				if n == 0 {
					res <- ""
				} else {
					res <- fmt.Sprintf(", GPU busy %.0f%% (mean of %.0f samples)", sum/n, n)
				}
				return
			case <-tick.C:
				out, err := exec.Command("nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-i", "0").Output()
				if v, perr := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && perr == nil {
					sum, n = sum+v, n+1
				}
			}
		}
	}()
	return func() string { close(done); return <-res }
}

// BenchmarkTorchRuntimeGPUFeed: does the loader keep a GPU busy? ResNet-50
// in bf16 from a store of GATEPIPE_FEED_IMAGES (default 20,000) 3x224x224
// images on the host: the features job (batch 256) and 156 training steps
// of 128 streamed through the loader's reader threads (device_cache 0: the
// split stays on the host, as ImageNet's must), each beside the bare loop
// with the whole split already on the GPU (bare_loops.py's -resident jobs:
// the model's speed with no feed at all), with nvidia-smi's utilisation
// while each side runs. The training job with the split on the GPU (its
// default for a store that fits) is printed too. GPU only; first in the file, so that the GPU check runs it first.
func BenchmarkTorchRuntimeGPUFeed(b *testing.B) {
	cuda, threads, _ := benchSetup(b)
	if !cuda {
		b.Skip("no CUDA device: the GPU feed needs one")
	}
	images := 20000
	if v, err := strconv.Atoi(os.Getenv("GATEPIPE_FEED_IMAGES")); err == nil && v > 0 {
		images = v
	}
	store := imageStore(b, images, 10)
	enc, err := train.Preset("resnet50")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("features", func(b *testing.B) {
		for range b.N {
			rate, ours := featuresJob(b, cuda, threads, store, enc, 256, "bf16")
			busy := utilisation(cuda)
			peer := runPeer(b, threads, "features-resident", store, "resnet50", "256", "bf16")
			report(b, fmt.Sprintf("feed: features resnet50 bf16 batch 256, %d images from the host store against the split resident on the GPU", images),
				rate, peer.ImagesPerSec, peer, threads, ours+"; peer"+busy())
		}
	})
	iters := 156
	for _, streamed := range []bool{true, false} {
		name := "train-streamed"
		if !streamed {
			name = "train-resident"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				extra := map[string]any{}
				if streamed {
					extra["device_cache"] = 0
				}
				rate, ours := trainJob(b, cuda, threads, store, enc, images, 128, iters, "bf16", extra)
				busy := utilisation(cuda)
				peer := runPeer(b, threads, "train-resident", store, "resnet50", "128", strconv.Itoa(iters-1), "10")
				where := "streamed from the host store by the loader"
				if !streamed {
					where = "the split resident on the GPU"
				}
				report(b, fmt.Sprintf("feed: train resnet50 bf16 batch 128, %d steps, %s, against the split resident on the GPU", iters, where),
					rate, peer.ImagesPerSec, peer, threads, ours+"; peer"+busy())
			}
		})
	}
}

// BenchmarkTorchRuntimeFeatures: frozen features at 224 px through the
// features job against a bare inference_mode loop, for ResNet-50 and
// ViT-B/16, in fp32 and (on a GPU) tf32 and bf16 autocast: each the same
// arithmetic on both sides (fp32 is TF32 off on both, though PyTorch's
// default lets cuDNN use TF32: the first GPU check compared the runtime's
// strict fp32 with that default, 0.43x on ResNet-50).
func BenchmarkTorchRuntimeFeatures(b *testing.B) {
	cuda, threads, images := benchSetup(b)
	store := imageStore(b, images, 10)
	precisions := []string{"fp32"}
	if cuda {
		precisions = append(precisions, "tf32", "bf16")
	}
	for _, arch := range []string{"resnet50", "vit_b_16"} {
		enc, err := train.Preset(arch)
		if err != nil {
			b.Fatal(err)
		}
		for _, precision := range precisions {
			b.Run(arch+"/"+precision, func(b *testing.B) {
				for range b.N {
					benchFeatures(b, cuda, threads, store, arch, enc, precision)
				}
			})
		}
	}
}

func benchFeatures(b *testing.B, cuda bool, threads int, store, arch string, enc train.EncoderSpec, precision string) {
	rate, gpu := featuresJob(b, cuda, threads, store, enc, 64, precision)
	peer := runPeer(b, threads, "features", store, arch, "64", precision)
	report(b, fmt.Sprintf("features %s 224px %s", arch, precision), rate, peer.ImagesPerSec, peer, threads, gpu)
}

// featuresJob runs the features job of enc over store's train split at
// batch in a node's environment and returns its images a second (after
// the warm-up batch, stats.json) and the GPU's utilisation while it ran.
func featuresJob(b *testing.B, cuda bool, threads int, store string, enc train.EncoderSpec, batch int, precision string) (float64, string) {
	env := benchEnv(b, cuda, threads)
	dir := filepath.Join(env.OutDir, "w")
	os.MkdirAll(dir, 0o755)
	weights := filepath.Join(dir, "weights.safetensors")
	if err := train.WriteWeights(weights, enc, train.Classification, []int{3, 224, 224}, 1, nil, 0); err != nil {
		b.Fatal(err)
	}
	work := filepath.Join(dir, "out")
	cfg := map[string]any{"job": "features", "encoder": enc, "weights": weights, "store": store, "splits": []string{"train"},
		"classes": 0, "precision": precision, "batch_size": batch, "work": work}
	busy := utilisation(cuda)
	if err := torchrt.Run(context.Background(), env, dir, torchrt.Job{Python: torchtest.Python(), Config: cfg}); err != nil {
		b.Fatal(err)
	}
	gpu := busy()
	var st struct{ Images, Seconds float64 }
	data, err := os.ReadFile(filepath.Join(work, "stats.json"))
	if err != nil || json.Unmarshal(data, &st) != nil {
		b.Fatalf("stats: %v", err)
	}
	return st.Images / st.Seconds, gpu
}

// BenchmarkTorchRuntimeTrainResNet18: fine-tuning steps of ResNet-18 at
// 224 px (batch 32) through the train job against a bare AdamW loop.
func BenchmarkTorchRuntimeTrainResNet18(b *testing.B) {
	cuda, threads, images := benchSetup(b)
	iters := max(images/32, 8) // with replacement: any number of steps
	store := imageStore(b, images, 10)
	enc, err := train.Preset("resnet18")
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		rate, gpu := trainJob(b, cuda, threads, store, enc, images, 32, iters, "auto", nil)
		peer := runPeer(b, threads, "train", store, "resnet18", "32", strconv.Itoa(iters-1), "10")
		report(b, "train ResNet-18 224px batch 32", rate, peer.ImagesPerSec, peer, threads, gpu)
	}
}

// nodeEnv is the environment a node's worker runs in: the user's, without
// the malloc and thread settings the benchmarks' peers get, plus what
// gatepipe itself sets for its worker (torchrt.WorkerEnv).
func nodeEnv(b *testing.B, threads int) []string {
	unsetPeerSettings(b)
	return append(os.Environ(), torchrt.WorkerEnv(threads)...)
}

// BenchmarkTorchRuntimeFeed: the worker's loader alone (store to
// normalised float32 batches on the CPU, no model) on 1 and 2 reader
// threads, in the environment a node's worker gets, against the bare
// memmap loop (one thread, the peer's best environment), per core; both
// after a pass that warms the page cache. GATEPIPE_BENCH_IMAGES sets the
// store's size (default 3,000 images of 3x224x224).
func BenchmarkTorchRuntimeFeed(b *testing.B) {
	torchtest.Need(b, "torch")
	images := 3000
	if v, err := strconv.Atoi(os.Getenv("GATEPIPE_BENCH_IMAGES")); err == nil && v > 0 {
		images = v
	}
	store := imageStore(b, images, 10)
	worker, err := torchrt.WriteWorker(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, batch := range []int{64, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			for range b.N {
				peer := runPeer(b, 1, "feed", store, strconv.Itoa(batch), "2")
				var one float64
				for _, threads := range []int{1, 2} {
					cmd := exec.Command(torchtest.Python(), filepath.Join("testdata", "feed.py"), store, strconv.Itoa(batch), "2", strconv.Itoa(threads))
					cmd.Env = append(nodeEnv(b, threads), "PYTHONPATH="+worker)
					out, err := cmd.Output()
					if err != nil {
						b.Fatalf("feed.py: %v", err)
					}
					var r peerResult
					if err := json.Unmarshal(out, &r); err != nil {
						b.Fatalf("feed.py printed %q", out)
					}
					if threads == 1 {
						one = r.ImagesPerSec
					}
					perCore := r.ImagesPerSec / float64(threads)
					b.ReportMetric(perCore/peer.ImagesPerSec, fmt.Sprintf("x-bare-per-core-%dt", threads))
					fmt.Printf("feed batch %d, %d reader thread(s): loader %.0f img/s (%.0f per core, node env: %s), bare memmap loop %.0f img/s (1 thread, env %s): %.2fx per core; %.2fx one thread\n",
						batch, threads, r.ImagesPerSec, perCore, strings.Join(torchrt.WorkerEnv(threads), " "), peer.ImagesPerSec, strings.Join(peerEnv(1), " "), perCore/peer.ImagesPerSec, r.ImagesPerSec/one)
				}
			}
		})
	}
}

// mallocSettings are the glibc settings the peers get (peerEnv) and a
// user's shell does not.
var mallocSettings = []string{"MALLOC_MMAP_THRESHOLD_=1000000000", "MALLOC_TRIM_THRESHOLD_=1000000000"}

// BenchmarkTorchRuntimeFeaturesEnv: the features job over a store of
// GATEPIPE_BENCH_IMAGES (default 3,000) 3x224x224 images, gatepipe's
// convnet at batch 256 on 1 CPU, as a node runs it (the user's
// environment and what gatepipe adds, torchrt.WorkerEnv) and the same
// with the peers' malloc settings: the ratio of the two times.
func BenchmarkTorchRuntimeFeaturesEnv(b *testing.B) {
	torchtest.Need(b, "torch")
	images := 3000
	if v, err := strconv.Atoi(os.Getenv("GATEPIPE_BENCH_IMAGES")); err == nil && v > 0 {
		images = v
	}
	store := imageStore(b, images, 10)
	enc := train.EncoderSpec{Arch: "convnet", Channels: []int{16, 32}, Hidden: []int{64}}
	run := func(b *testing.B, extra []string) (float64, string) {
		unsetPeerSettings(b)
		for _, kv := range extra {
			k, v, _ := strings.Cut(kv, "=")
			b.Setenv(k, v)
		}
		added := strings.Join(torchrt.WorkerEnv(1), " ")
		env := &nodes.Env{OutDir: b.TempDir(), Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 1}}
		dir := filepath.Join(env.OutDir, "w")
		work := filepath.Join(dir, "out")
		os.MkdirAll(dir, 0o755)
		weights := filepath.Join(dir, "weights.safetensors")
		if err := train.WriteWeights(weights, enc, train.Classification, []int{3, 224, 224}, 1, nil, 0); err != nil {
			b.Fatal(err)
		}
		cfg := map[string]any{"job": "features", "encoder": enc, "weights": weights, "store": store, "splits": []string{"train"},
			"classes": 0, "precision": "fp32", "batch_size": 256, "work": work}
		start := time.Now()
		if err := torchrt.Run(context.Background(), env, dir, torchrt.Job{Python: torchtest.Python(), Config: cfg}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start).Seconds(), added
	}
	for range b.N {
		node, added := run(b, nil)
		tuned, _ := run(b, mallocSettings)
		b.ReportMetric(node, "s-node-env")
		b.ReportMetric(tuned, "s-malloc-env")
		b.ReportMetric(node/tuned, "x-slower")
		fmt.Printf("features job, %d images, convnet, batch 256, 1 CPU: %.1f s in a node's environment (gatepipe adds %s), %.1f s with the user's environment setting %s: %.2fx\n",
			images, node, added, tuned, strings.Join(mallocSettings, " "), node/tuned)
	}
}

// trainJob runs the train job (classification into 10 classes) of enc on
// store's n training images for iters steps of batch, with the config's
// extra keys, in a node's environment, and returns its images a second
// and the GPU's utilisation while it ran.
func trainJob(b *testing.B, cuda bool, threads int, store string, enc train.EncoderSpec, n, batch, iters int, precision string, extra map[string]any) (float64, string) {
	env := benchEnv(b, cuda, threads)
	dir := filepath.Join(env.OutDir, "w")
	work := filepath.Join(dir, "out")
	os.MkdirAll(work, 0o755)
	weights := filepath.Join(dir, "init.safetensors")
	if err := train.WriteWeights(weights, enc, train.Classification, []int{3, 224, 224}, 10, nil, 0); err != nil {
		b.Fatal(err)
	}
	draws := writeDraws(b, dir, n, batch, iters)
	recipe := train.Recipe{LR: 1e-3, WeightDecay: 0.01, BatchSize: batch, Iterations: iters, ValidateEvery: iters, TopK: 1,
		PlateauFactor: 0.5, PlateauPatience: 5, PlateauThreshold: 1e-4}
	cfg := map[string]any{"job": "train", "task": "classification", "encoder": enc, "weights": weights, "store": store,
		"outputs": 10, "recipe": recipe, "draws": draws, "precision": precision, "work": work}
	for k, v := range extra {
		cfg[k] = v
	}
	busy := utilisation(cuda)
	if err := torchrt.Run(context.Background(), env, dir, torchrt.Job{Python: torchtest.Python(), Config: cfg}); err != nil {
		b.Fatal(err)
	}
	gpu := busy()
	var res struct {
		ImagesPerSec float64 `json:"images_per_sec"`
	}
	data, err := os.ReadFile(filepath.Join(work, "result.json"))
	if err != nil || json.Unmarshal(data, &res) != nil {
		b.Fatalf("result: %v", err)
	}
	return res.ImagesPerSec, gpu
}

// writeDraws writes the train job's batches (gatepipe draws them) for
// iters steps of batch rows out of n, and returns the file's path.
func writeDraws(b *testing.B, dir string, n, batch, iters int) string {
	batches := train.DrawBatches(n, batch, iters, 0)
	raw := make([]byte, 4*len(batches))
	for i, v := range batches {
		raw[4*i], raw[4*i+1], raw[4*i+2], raw[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	draws := filepath.Join(dir, "draws.safetensors")
	if err := safetensors.WriteFile(draws, []safetensors.Tensor{{Name: "batches", DType: safetensors.I32, Shape: []int{iters, batch}, Data: raw}}, nil); err != nil {
		b.Fatal(err)
	}
	return draws
}
