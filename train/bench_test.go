package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/blascore"
	"github.com/gatepipe/gatepipe/internal/peer"
	"github.com/gatepipe/gatepipe/train/cblas"
)

// referenceConvNet is the benchmark model:
// conv(1->32,3x3)-relu-maxpool-conv(32->64,3x3)-relu-maxpool-
// fc(3136->128)-relu-fc(10).
var referenceConvNet = EncoderSpec{Arch: "convnet", Channels: []int{32, 64}, Hidden: []int{128}}

func randomImages(n int, seed uint64) *Data {
	r := rand.New(rand.NewPCG(seed, 9))
	d := &Data{Shape: []int{1, 28, 28}, X: make([]float32, n*28*28), Y: make([]int64, n)}
	for i := range d.X {
		d.X[i] = float32(r.NormFloat64())
	}
	for i := range d.Y {
		d.Y[i] = int64(r.IntN(10))
	}
	return d
}

// bestBLAS loads gatepipe's OpenBLAS with the kernels that suit this CPU
// best, as peer.TorchEnv does for PyTorch's (blascore.BestEnv: the
// environment may name others, as OPENBLAS_CORETYPE=Haswell on an AVX-512
// machine), and says which it runs. OpenBLAS is loaded once per process:
// a test that trained before the benchmark has fixed its kernels already.
func bestBLAS() string {
	for _, kv := range blascore.BestEnv() {
		name, value, _ := strings.Cut(kv, "=")
		os.Setenv(name, value)
	}
	blasOnce.Do(func() { cblas.Enable() })
	return cblas.InUse()
}

// pytorchThroughput runs train/reference/throughput_torch.py with Debian's
// python3-torch, or returns 0 when PyTorch is not installed.
// It runs best-configured (peer.TorchEnv).
func pytorchThroughput(b *testing.B, threads, iters int) float64 {
	if !peer.HasTorch() {
		b.Log("python3-torch is not installed: no PyTorch comparison (make deps-bench)")
		return 0
	}
	out, err := peer.Torch(threads, "reference/throughput_torch.py", "--threads", strconv.Itoa(threads), "--iters", strconv.Itoa(iters)).Output()
	if err != nil {
		b.Fatalf("throughput_torch.py: %v", err)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		b.Fatalf("throughput_torch.py printed %q", out)
	}
	return v
}

// BenchmarkTrainThroughput measures training images/s of the reference
// convnet (batch 128, float32, AdamW) on 1 and on 2 threads, and the same
// model in PyTorch with as many threads, and reports the ratio. Both vary
// by 10-15% between runs on a shared machine, so each benchmark iteration
// alternates three rounds of 30 steps of each and reports the medians.
func BenchmarkTrainThroughput(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
			trainThroughput(b, threads)
		})
	}
}

// trainThroughput is one thread count of BenchmarkTrainThroughput.
func trainThroughput(b *testing.B, threads int) {
	blas := bestBLAS()
	const iters, rounds = 30, 3
	rec := Recipe{LR: 1e-3, WeightDecay: 0.01, BatchSize: 128, Iterations: iters, ValidateEvery: iters, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3}
	trainD, small := randomImages(1024, 1), randomImages(128, 2)
	var ours, torch []float64
	for i := 0; i < b.N; i++ {
		ours, torch = ours[:0], torch[:0]
		for r := range rounds {
			res, err := Train(context.Background(), referenceConvNet, nil, 10, rec, trainD, small, small, nil, nil, Resume{})
			if err != nil {
				b.Fatal(err)
			}
			ours = append(ours, res.ImagesPerSec)
			if t := pytorchThroughput(b, threads, iters); t > 0 {
				torch = append(torch, t)
				fmt.Printf("round %d, %d threads: gatepipe %.0f images/s, PyTorch %.0f images/s\n", r+1, threads, res.ImagesPerSec, t)
			}
		}
	}
	ips := median(ours)
	b.ReportMetric(ips, "images/s")
	if len(torch) > 0 {
		t := median(torch)
		b.ReportMetric(t, "pytorch-images/s")
		b.ReportMetric(ips/t, "x-pytorch")
		fmt.Printf("train throughput, %d threads, median of %d alternating rounds: gatepipe %.0f images/s (%s), PyTorch %.0f images/s (%s %s), ratio %.2f\n",
			threads, rounds, ips, blas, t, peer.Describe(peer.TorchEnv(threads)), torchVersion(), ips/t)
	}
}

// torchVersion is PyTorch's version string ("" when unknown).
func torchVersion() string {
	out, err := exec.Command("/usr/bin/python3", "-c", "import torch; print('torch', torch.__version__)").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
