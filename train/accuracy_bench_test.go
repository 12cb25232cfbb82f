package train

import (
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/idx"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/peer"
)

// fashionMNISTDir is where Debian's dataset-fashion-mnist installs the
// real Fashion-MNIST IDX files (make demo installs it).
const fashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// loadFashionMNIST reads one split ("train" or "t10k"), pixels scaled to
// [0, 1] as the PyTorch reference scales them.
func loadFashionMNIST(b *testing.B, split string) *Data {
	read := func(name string) *idx.Array {
		f, err := os.Open(filepath.Join(fashionMNISTDir, name))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		a, err := idx.Read(z, name)
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	img, lab := read(split+"-images-idx3-ubyte.gz"), read(split+"-labels-idx1-ubyte.gz")
	d := &Data{Shape: []int{1, img.Dims[1], img.Dims[2]}, X: make([]float32, len(img.Bytes)), Y: make([]int64, len(lab.Bytes))}
	for i, v := range img.Bytes {
		d.X[i] = float32(v) / 255
	}
	for i, v := range lab.Bytes {
		d.Y[i] = int64(v)
	}
	return d
}

// writeStart writes the weights Train starts from with seed and the
// example indices of its iters batches (drawn as Train draws them) for
// PyTorch to start from and sample alike.
func writeStart(b *testing.B, path string, shape []int, n, iters, batch int, seed uint64) {
	params, err := newParams(referenceConvNet, Classification, shape, 10, seed)
	if err != nil {
		b.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, p := range params {
		ts = append(ts, safetensors.F32Tensor(p.name, p.shape, p.init))
	}
	rng := rand.New(rand.NewPCG(seed, trainSamplingStream))
	var idx []int64
	for range iters {
		for _, k := range drawExamples(rng, n, batch) {
			idx = append(idx, int64(k))
		}
	}
	ts = append(ts, safetensors.I64Tensor("batches", []int{iters, batch}, idx))
	if err := safetensors.WriteFile(path, ts, nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTrainAccuracy trains the reference convnet on the real
// Fashion-MNIST for 400 steps (batch 128, AdamW lr 1e-3, weight decay
// 0.01) with five seeds, alternating with PyTorch doing the same from the
// same initial weights on the same batches (reference/accuracy_torch.py
// --start, best-configured), so that the two runs differ only in float
// rounding, and reports the median test accuracy of each and their
// difference: the speed of BenchmarkTrainThroughput counts only at the
// same accuracy.
func BenchmarkTrainAccuracy(b *testing.B) {
	if _, err := os.Stat(filepath.Join(fashionMNISTDir, "t10k-labels-idx1-ubyte.gz")); err != nil {
		b.Skipf("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist): %v", err)
	}
	bestBLAS()
	const iters, seeds, batch = 400, 5, 128
	threads := runtime.GOMAXPROCS(0)
	trainD, test := loadFashionMNIST(b, "train"), loadFashionMNIST(b, "t10k")
	val := &Data{Shape: trainD.Shape, X: trainD.X[:1000*28*28], Y: trainD.Y[:1000]}
	var ours, torch []float64
	for i := 0; i < b.N; i++ {
		ours, torch = ours[:0], torch[:0]
		for seed := uint64(1); seed <= seeds; seed++ {
			rec := Recipe{LR: 1e-3, WeightDecay: 0.01, BatchSize: batch, Iterations: iters, ValidateEvery: iters, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3, Seed: seed}
			res, err := Train(context.Background(), referenceConvNet, nil, 10, rec, trainD, val, test, nil, nil, Resume{})
			if err != nil {
				b.Fatal(err)
			}
			ours = append(ours, res.Metrics["acc1"])
			if !peer.HasTorch() {
				continue
			}
			start := filepath.Join(b.TempDir(), "start.safetensors")
			writeStart(b, start, trainD.Shape, trainD.Len(), iters, batch, seed)
			out, err := peer.Torch(threads, "reference/accuracy_torch.py", "--dir", fashionMNISTDir,
				"--iters", strconv.Itoa(iters), "--start", start).Output()
			if err != nil {
				b.Fatalf("accuracy_torch.py: %v", err)
			}
			t, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
			if err != nil {
				b.Fatalf("accuracy_torch.py printed %q", out)
			}
			torch = append(torch, t)
			fmt.Printf("seed %d, same start and batches: gatepipe %.2f%%, PyTorch %.2f%% Fashion-MNIST test accuracy\n", seed, res.Metrics["acc1"], t)
		}
	}
	acc := median(ours)
	b.ReportMetric(acc, "test-acc-%")
	if len(torch) > 0 {
		t := median(torch)
		b.ReportMetric(t, "pytorch-test-acc-%")
		fmt.Printf("train accuracy, reference convnet, Fashion-MNIST, %d steps, median of %d seeds (each side from the same weights on the same batches): gatepipe %.2f%%, PyTorch %.2f%% (%s), difference %+.2f points\n",
			iters, seeds, acc, t, peer.Describe(peer.TorchEnv(threads)), acc-t)
	}
}
