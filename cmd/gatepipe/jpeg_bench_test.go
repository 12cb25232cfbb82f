package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	commandnode "github.com/gatepipe/gatepipe/nodes/command"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/train"
)

// BenchmarkJPEGStore stores 3,000 ImageNet-like photographs (500 x 375
// JPEGs, ten classes told apart by their background's colour) at 224 x
// 224 raw and as JPEGs of quality 90, then measures: the stores' sizes;
// the JPEG store read back into normalised float32 batches by the Go
// runtime (train.OpenSplitFor, one goroutine) and by the torch worker's
// loader (one reader thread, the node's environment: making the CPU's
// input, and filling the staging ring as for a GPU), in images a CPU
// second, beside one PIL process decoding the same stored JPEGs; and a
// short Go-runtime training (a small convnet, three seeds) on each store,
// whose accuracy must agree within the seeds' spread.
func BenchmarkJPEGStore(b *testing.B) {
	if err := exec.Command("/usr/bin/python3", "-c", "import PIL").Run(); err != nil {
		b.Skip("python3-pil is missing (make deps-bench installs it)")
	}
	dir := b.TempDir()
	files := imagenetLike(b, filepath.Join(dir, "imgs"), 3000, "classes")
	raw := storeApply(b, dir, files, "image_folder", "1")
	jpg := storeApplyWith(b, dir, files, "image_folder", "1", `  store = "jpeg"`)
	b.Logf("%-10s %10s %14s %10s", "store", "MB", "apply img/CPU-s", "peak RSS MB")
	b.Logf("%-10s %10.1f %14.1f %10.0f", "raw", raw.storeMB, raw.cpuRate, raw.rssMB)
	b.Logf("%-10s %10.1f %14.1f %10.0f", "jpeg q90", jpg.storeMB, jpg.cpuRate, jpg.rssMB)
	b.Logf("the JPEG store is %.2fx smaller", raw.storeMB/jpg.storeMB)
	b.ReportMetric(raw.storeMB/jpg.storeMB, "x-smaller")
	b.Run("reads", func(b *testing.B) {
		for range b.N {
			jdir, err := storeDir(jpg.cache)
			if err != nil {
				b.Fatal(err)
			}
			rdir, err := storeDir(raw.cache)
			if err != nil {
				b.Fatal(err)
			}
			pil := pilJPEGRate(b, jdir)
			goJPEG, goRaw := goReadRate(b, jdir), goReadRate(b, rdir)
			b.Logf("reads of the train split into normalised float32, images a CPU second (%s):", cpuModel())
			b.Logf("  PIL, one process, decoding the stored JPEGs (%s): %.0f", strings.Join(pilEnv, " "), pil)
			b.Logf("  Go runtime, JPEG store: %.0f (%.2fx PIL); raw store: %.0f", goJPEG, goJPEG/pil, goRaw)
			b.ReportMetric(goJPEG/pil, "go-x-PIL")
			if rate, env, ok := torchFeedRate(b, jdir, "device"); ok {
				// What a reader thread does when a GPU computes: the
				// decoded pixels into the staging ring, as PIL's arrays.
				b.Logf("  torch worker's reader for a GPU, 1 thread, JPEG store decoded into the staging ring (node env: %s): %.0f (%.2fx PIL decoding)", env, rate, rate/pil)
				b.ReportMetric(rate/pil, "torch-gpu-feed-x-PIL")
			}
			if rate, env, ok := torchFeedRate(b, jdir); ok {
				// The loader's output is the model's input; so is this
				// peer's: PIL, then torchvision's ToTensor and Normalize.
				norm := pilPeer(b, "testdata/pil_jpeg_rows.py", filepath.Join(jdir, "train.safetensors"), filepath.Join(jdir, "train"+examplestore.JPEGSuffix), "normalise")
				b.Logf("  PIL, then torchvision's ToTensor and Normalize, one process (%s): %.0f", strings.Join(pilEnv, " "), norm)
				b.Logf("  torch worker's loader, 1 reader thread, JPEG store (node env: %s): %.0f (%.2fx PIL decoding, %.2fx PIL with ToTensor and Normalize)", env, rate, rate/pil, rate/norm)
				b.ReportMetric(rate/pil, "torch-x-PIL")
				b.ReportMetric(rate/norm, "torch-x-PIL-normalised")
			}
		}
	})
	b.Run("training", func(b *testing.B) {
		for range b.N {
			rawAcc, jpgAcc := trainSeeds(b, raw), trainSeeds(b, jpg)
			rm, rs := meanSD(rawAcc)
			jm, js := meanSD(jpgAcc)
			b.Logf("short training (convnet, 3 seeds), test Acc@1: raw %.1f ± %.1f %v, JPEG %.1f ± %.1f %v", rm, rs, rawAcc, jm, js, jpgAcc)
			if math.Abs(rm-jm) > 2*math.Max(math.Max(rs, js), 1) {
				b.Errorf("the JPEG store's accuracy %.1f is not within the seeds' spread of the raw store's %.1f", jm, rm)
			}
		}
	})
}

// goReadRate reads store's train split through train.OpenSplitFor a
// batch of 64 at a time on one goroutine, after a pass that warms the
// page cache, and returns images a CPU second of this process.
func goReadRate(b *testing.B, store string) float64 {
	b.Helper()
	meta, err := examplestore.ReadMeta(store)
	if err != nil {
		b.Fatal(err)
	}
	d, _, err := train.OpenSplitFor(store, "train", meta, train.Classification, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	size := 1
	for _, v := range meta.Shape {
		size *= v
	}
	buf := make([]float32, 64*size)
	pass := func() {
		for first := 0; first < d.Len(); first += 64 {
			idx := make([]int, min(64, d.Len()-first))
			for i := range idx {
				idx[i] = first + i
			}
			if err := d.Source.Read(buf[:len(idx)*size], idx); err != nil {
				b.Fatal(err)
			}
		}
	}
	pass()
	before := cpuTime()
	pass()
	return float64(d.Len()) / (cpuTime() - before).Seconds()
}

// cpuTime is this process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pilJPEGRate is one PIL process's images a CPU second decoding the
// JPEGs of store's train split.
func pilJPEGRate(b *testing.B, store string) float64 {
	return pilPeer(b, "testdata/pil_jpeg_rows.py", filepath.Join(store, "train.safetensors"), filepath.Join(store, "train"+examplestore.JPEGSuffix))
}

// torchFeedRate runs the worker's loader over store's train split with
// one reader thread in a node's environment (feed.py, with mode: "device"
// for a reader's work when a GPU computes) and returns its images a CPU
// second, the environment, and false without torch.
func torchFeedRate(b *testing.B, store string, mode ...string) (float64, string, bool) {
	b.Helper()
	if err := exec.Command(torchPython(), "-c", "import torch").Run(); err != nil {
		return 0, "", false
	}
	worker, _ := filepath.Abs("../../nodes/torchrt/py")
	cmd := exec.Command(torchPython(), append([]string{"../../nodes/torchrt/testdata/feed.py", store, "64", "3", "1"}, mode...)...)
	env := torchrt.WorkerEnv(1)
	cmd.Env = append(append(os.Environ(), env...), "PYTHONPATH="+worker)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("feed.py: %v", err)
	}
	var r struct {
		PerCPU float64 `json:"images_per_cpu_sec"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("feed.py printed %q", out)
	}
	return r.PerCPU, strings.Join(env, " "), true
}

// trainSeeds trains a small convnet on the store of run (its pipeline
// with a train block added) for three seeds and returns each seed's test
// Acc@1.
func trainSeeds(b *testing.B, run storeRun) []float64 {
	b.Helper()
	appendBlocks(b, run.work, `
encoder "convnet" {
  arch     = "convnet"
  channels = [8, 16]
  hidden   = [32]
}
adapter "cls" {}
recipe "short" {
  lr             = 1e-3
  batch_size     = 32
  iterations     = 100
  validate_every = 25
  top_k          = 1
  seeds          = [1, 2, 3]
}
benchmark "imagenet" {
  dataset  = dataset.imagenet.path
  id       = "imagenet1k"
  category = "Img Class"
}
train "convnet" {
  encoder   = encoder.convnet
  adapter   = adapter.cls
  recipe    = recipe.short
  benchmark = benchmark.imagenet
  runtime   = "go"
}
`)
	timedApply(b, run.work, run.cache)
	var accs []float64
	filepath.Walk(run.cache, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.Name() != commandnode.MetricsFile || accs != nil {
			return nil
		}
		m, err := commandnode.ReadMetrics(p)
		if err == nil && len(m.Seeds) == 3 {
			accs = m.Metrics["Acc@1"].Values
		}
		return nil
	})
	if len(accs) != 3 {
		b.Fatalf("no three seeds' Acc@1 under %s", run.cache)
	}
	return accs
}

// meanSD is the mean and sample standard deviation of v.
func meanSD(v []float64) (float64, float64) {
	var s, q float64
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	for _, x := range v {
		q += (x - m) * (x - m)
	}
	return m, math.Sqrt(q / float64(max(1, len(v)-1)))
}
