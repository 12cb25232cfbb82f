package train

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/internal/peer"
)

// pytorchFeatures runs reference/features_torch.py best-configured and
// returns images/s and its peak RSS in MB (0, 0 without torchvision).
func pytorchFeatures(b *testing.B, model string, threads int) (float64, float64) {
	out, err := peer.Torch(threads, "reference/features_torch.py", "--model", model, "--threads", strconv.Itoa(threads)).Output()
	if err != nil {
		b.Fatalf("features_torch.py: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		b.Fatalf("features_torch.py printed %q", out)
	}
	ips, _ := strconv.ParseFloat(f[0], 64)
	rss, _ := strconv.ParseFloat(f[1], 64)
	return ips, rss
}

// resetPeakRSS returns the heap's free memory to the system and resets
// the process's peak resident set (VmHWM) to what it holds now (Linux's
// clear_refs 5), so that each benchmark reports its own peak, not the
// largest of those before it.
func resetPeakRSS() {
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMB is this process's peak resident set since resetPeakRSS
// (VmHWM), in MB.
func peakRSSMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkFrozenFeatures measures frozen feature extraction (eval mode,
// batch 32, 224x224, random weights and inputs; both models run the
// direct passes, resnetForward and vitForward) of resnet50 and vit_b_16
// with 1 and 2 threads (GOMAXPROCS), and 8 and 16 where the machine has
// them, against torchvision's models on PyTorch with as many threads,
// best-configured, alternating five rounds of one batch each and
// reporting the medians. The peak RSS is this benchmark's own (reset
// before it starts, model and weights included); PyTorch's is its
// process's.
func BenchmarkFrozenFeatures(b *testing.B) {
	haveTorch := peer.HasTorchvision()
	if !haveTorch {
		b.Log("python3-torchvision is not installed: no PyTorch comparison (make deps-bench)")
	}
	for _, model := range []string{"resnet50", "vit_b_16"} {
		for _, threads := range []int{1, 2, 8, 16} {
			if threads > 2 && threads > runtime.NumCPU() {
				continue
			}
			b.Run(fmt.Sprintf("%s/threads=%d", model, threads), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
				frozenFeatures(b, model, threads, haveTorch)
			})
		}
	}
}

// frozenFeatures is one model and thread count of BenchmarkFrozenFeatures.
func frozenFeatures(b *testing.B, model string, threads int, haveTorch bool) {
	const batch, rounds = 32, 5
	resetPeakRSS()
	blas := bestBLAS()
	enc, err := Preset(model)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	d := &Data{Shape: []int{3, 224, 224}, X: make([]float32, batch*3*224*224), Y: make([]int64, batch)}
	for i := range d.X {
		d.X[i] = float32(r.NormFloat64())
	}
	// Built once and warmed up with one batch, as the PyTorch
	// reference constructs its model and runs one batch untimed.
	x, err := newExtractor(enc, nil, d.Shape, batch)
	if err != nil {
		b.Fatal(err)
	}
	defer x.close()
	if _, err := x.run(d); err != nil {
		b.Fatal(err)
	}
	var ours, torch, torchRSS []float64
	for i := 0; i < b.N; i++ {
		ours, torch, torchRSS = ours[:0], torch[:0], torchRSS[:0]
		for round := range rounds {
			start := time.Now()
			if _, err := x.run(d); err != nil {
				b.Fatal(err)
			}
			ours = append(ours, batch/time.Since(start).Seconds())
			if haveTorch {
				t, rss := pytorchFeatures(b, model, threads)
				torch, torchRSS = append(torch, t), append(torchRSS, rss)
				fmt.Printf("%s round %d, %d threads: gatepipe %.2f images/s, PyTorch %.2f images/s\n", model, round+1, threads, ours[len(ours)-1], t)
			}
		}
	}
	ips := median(ours)
	b.ReportMetric(ips, "images/s")
	b.ReportMetric(peakRSSMB(), "peak-rss-MB")
	if len(torch) > 0 {
		t := median(torch)
		// The ratio is the median of each round's own ratio: the two
		// sides of a round run back to back, so the machine's drift
		// between rounds (10-20% here) cancels in it.
		ratios := make([]float64, len(torch))
		for k := range torch {
			ratios[k] = ours[k] / torch[k]
		}
		ratio := median(ratios)
		b.ReportMetric(t, "pytorch-images/s")
		b.ReportMetric(ratio, "x-pytorch")
		rss, trss := peakRSSMB(), median(torchRSS)
		b.ReportMetric(rss/trss, "x-pytorch-rss")
		fmt.Printf("frozen features %s, batch %d, 224x224, %d threads, median of %d alternating rounds: gatepipe %.2f images/s (%s, peak RSS %.0f MB), PyTorch %.2f images/s (peak RSS %.0f MB; %s %s), ratio (median of the rounds' ratios) %.2f, memory %.2fx\n",
			model, batch, threads, rounds, ips, blas, rss, t, trss, peer.Describe(peer.TorchEnv(threads)), torchVersion(), ratio, rss/trss)
	}
}
