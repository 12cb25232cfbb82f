package probe

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// runPython runs script with Debian's python3, in's JSON on its standard
// input, and decodes what it prints into out; it skips (fails in CI) when
// the modules in need are missing.
func runPython(t *testing.T, need, script string, in, out any) {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import "+need).Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 with %s is needed for this reference check", need)
		}
		t.Skipf("python3 with %s is not installed", need)
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Stdin = strings.NewReader(string(data))
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("%v: %s", err, res)
	}
}

func blobs(r *rand.Rand, n, d, classes int, spread float64) Set {
	s := Set{X: make([]float64, n*d), N: n, D: d, Y: make([]int, n)}
	for i := range n {
		c := i % classes
		s.Y[i] = c
		for j := range d {
			s.X[i*d+j] = 3 + r.NormFloat64() + spread*float64((c+j)%classes)
		}
	}
	return s
}

const torchLinear = `
import json, sys, torch
c = json.load(sys.stdin)
torch.set_default_dtype(torch.float64)
X = torch.tensor(c["X"]).reshape(c["N"], c["D"])
Y = torch.tensor(c["Y"])
bn = torch.nn.BatchNorm1d(c["D"], affine=False)
lin = torch.nn.Linear(c["D"], c["C"])
with torch.no_grad():
    lin.weight.copy_(torch.tensor(c["W"]).reshape(c["C"], c["D"]))
    lin.bias.copy_(torch.tensor(c["B"]))
opt = torch.optim.SGD(lin.parameters(), lr=c["LR"], momentum=0.9, nesterov=True, weight_decay=c["WD"])
bn.train()
for order in c["Orders"]:
    for s in range(0, len(order), c["Batch"]):
        idx = order[s:s + c["Batch"]]
        if len(idx) < 2:
            continue
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(lin(bn(X[idx])), Y[idx])
        loss.backward()
        opt.step()
print(json.dumps({"W": lin.weight.detach().flatten().tolist(), "B": lin.bias.detach().tolist(),
                  "Mean": bn.running_mean.tolist(), "Var": bn.running_var.tolist()}))
`

// TestLinearMatchesPyTorch trains the head and PyTorch's BatchNorm1d
// (affine=False) + Linear with SGD (momentum 0.9, Nesterov, weight decay)
// from the same start on the same batches, in float64.
func TestLinearMatchesPyTorch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	train := blobs(r, 45, 6, 3, 1.5) // 45 = 2 batches of 16 + 13
	cfg := LinearConfig{LR: 0.05, WeightDecay: 1e-2, Epochs: 3, Batch: 16}
	start := rand.New(rand.NewPCG(7, 7))
	h := NewLinear(train.D, 3, start)
	in := map[string]any{"X": train.X, "Y": train.Y, "N": train.N, "D": train.D, "C": 3, "W": slices.Clone(h.W), "B": slices.Clone(h.B),
		"LR": cfg.LR, "WD": cfg.WeightDecay, "Batch": cfg.Batch}
	replay := rand.New(rand.NewPCG(7, 7))
	NewLinear(train.D, 3, replay)
	var orders [][]int
	for range cfg.Epochs {
		orders = append(orders, replay.Perm(train.N))
	}
	in["Orders"] = orders
	h.Train(train, cfg, start, nil)
	var want struct{ W, B, Mean, Var []float64 }
	runPython(t, "torch", torchLinear, in, &want)
	for name, pair := range map[string][2][]float64{"weights": {h.W, want.W}, "biases": {h.B, want.B}, "running mean": {h.RunMean, want.Mean}, "running variance": {h.RunVar, want.Var}} {
		for i := range pair[0] {
			if math.Abs(pair[0][i]-pair[1][i]) > 1e-9*math.Max(1, math.Abs(pair[1][i])) {
				t.Fatalf("%s[%d] = %.12g, PyTorch %.12g", name, i, pair[0][i], pair[1][i])
			}
		}
	}
}

const numpyMetrics = `
import json, sys
import numpy as np
out = []
for c in json.load(sys.stdin):
    S = np.array(c["S"]).reshape(-1, c["C"]); y = np.array(c["Y"]); C = c["C"]
    pred = S.argmax(1)
    acc = 100 * (pred == y).mean()
    mpc = 100 * np.mean([(pred[y == k] == k).mean() for k in range(C) if (y == k).any()])
    aps = []
    for k in range(C):
        t = (y == k)
        if not t.any():
            continue
        o = np.argsort(-S[:, k], kind="stable")
        tp = np.cumsum(t[o]); prec = tp / np.arange(1, len(y) + 1); rec = tp / t.sum()
        aps.append(np.mean([prec[rec >= r - 1e-12].max() if (rec >= r - 1e-12).any() else 0 for r in np.linspace(0, 1, 11)]))
    def auc(k):
        p = S[y == k, k]; n = S[y != k, k]
        return ((p[:, None] > n[None, :]).sum() + 0.5 * (p[:, None] == n[None, :]).sum()) / (len(p) * len(n))
    a = auc(1) if C == 2 else np.mean([auc(k) for k in range(C) if 0 < (y == k).sum() < len(y)])
    out.append([acc, mpc, 100 * np.mean(aps), 100 * a])
print(json.dumps(out))
`

// TestMetricsMatchNumpy checks the four metrics against numpy code (AUC
// by counting pairs, ties half), with ties in the scores and a class with
// no example.
func TestMetricsMatchNumpy(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	type mc struct {
		S []float64
		C int
		Y []int
	}
	var cases []mc
	for _, c := range []int{2, 4, 5} {
		n := 37
		m := mc{C: c, S: make([]float64, n*c), Y: make([]int, n)}
		for i := range n {
			m.Y[i] = r.IntN(max(c-1, 2)) // with 5 classes, the last has no example
			for k := range c {
				m.S[i*c+k] = math.Round(4*(r.NormFloat64()+btof(k == m.Y[i]))) / 4 // ties
			}
		}
		cases = append(cases, m)
	}
	var want [][4]float64
	runPython(t, "numpy", numpyMetrics, cases, &want)
	for i, c := range cases {
		for k, name := range []string{"accuracy", "mean_per_class", "map11", "roc_auc"} {
			got := Metrics[name](c.S, c.C, c.Y)
			if math.Abs(got-want[i][k]) > 1e-9 {
				t.Errorf("%d classes %s = %.12g, numpy %.12g", c.C, name, got, want[i][k])
			}
		}
	}
}

func btof(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestSearchWDFollowsTheToolkit: on a score peaked at index 37, the
// search tries the 7 coarse points, then the peak +- 8, 4, 2, 1, moving
// only on a better score, and ends at 37.
func TestSearchWDFollowsTheToolkit(t *testing.T) {
	cfg := DefaultTune(Accuracy)
	peak, best, tried := searchWD(cfg, func(i int) float64 { return 100 - math.Abs(float64(i-37)) })
	want := []int{0, 16, 32, 48, 64, 80, 96, 24, 40, 36, 44, 34, 38, 35, 37}
	if peak != 37 || best != 100 || !slices.Equal(tried, want) {
		t.Fatalf("peak %d (score %g), tried %v; want 37, tried %v", peak, best, tried, want)
	}
	if got := cfg.WDs[16]; math.Abs(got-1e-4) > 1e-16 {
		t.Fatalf("weight decay grid point 16 = %g, want 1e-4 (logspace(-6, 6, 97))", got)
	}
}

// TestSearchWDTiesKeepTheEarlierPeak: a coarse point whose score beats
// the first only by rounding (1e-14 relative) does not move the peak; one
// better by 1e-6 does. Both runtimes then choose alike on equal scores.
func TestSearchWDTiesKeepTheEarlierPeak(t *testing.T) {
	cfg := DefaultTune(Accuracy)
	for _, tc := range []struct {
		gain float64
		want int
	}{{1e-14, 0}, {1e-6, 16}} {
		score := func(i int) float64 {
			switch i {
			case 0:
				return 72.22222222222221
			case 16:
				return 72.22222222222221 * (1 + tc.gain)
			}
			return 10
		}
		if peak, _, _ := searchWD(cfg, score); peak != tc.want {
			t.Errorf("gain %g: peak %d, want %d", tc.gain, peak, tc.want)
		}
	}
}

// TestSubsetsDependOnLabelsAndSeedOnly: few-shot subsets have the shots
// per class, the same for the same labels and seed and different for
// another seed; the stratified split keeps a class on both sides.
func TestSubsetsDependOnLabelsAndSeedOnly(t *testing.T) {
	y := make([]int, 300)
	for i := range y {
		y[i] = (i * 7) % 3
	}
	a, b, c := FewShot(y, 3, 5, 1), FewShot(y, 3, 5, 1), FewShot(y, 3, 5, 2)
	if !slices.Equal(a, b) || slices.Equal(a, c) || len(a) != 15 {
		t.Fatalf("few-shot subsets: %v %v %v", a, b, c)
	}
	count := map[int]int{}
	for _, i := range a {
		count[y[i]]++
	}
	if count[0] != 5 || count[1] != 5 || count[2] != 5 {
		t.Fatalf("shots per class %v", count)
	}
	tr, val, err := StratifiedSplit(a, y, 3, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 12 || len(val) != 3 {
		t.Fatalf("split %d/%d, want 12/3", len(tr), len(val))
	}
	if _, _, err := StratifiedSplit([]int{0, 1, 2}, y, 3, 0.2, 1); err == nil {
		t.Fatal("a class of one example was split")
	}
	all, vt, vv := VTAB1k(5000, 3)
	if len(all) != 1000 || len(vt) != 800 || len(vv) != 200 {
		t.Fatalf("VTAB-1k sizes %d %d %d", len(all), len(vt), len(vv))
	}
}

// TestAutotuneLearnsOverlappingClasses: the search picks grid values,
// tries 7 to 15 weight decays per learning rate, keeps the best
// validation score with the toolkit's tie rule (the smallest learning
// rate reaching it, then the first weight decay tried), and its final
// head classifies overlapping classes far above chance.
func TestAutotuneLearnsOverlappingClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	data := blobs(r, 400, 8, 4, 0.6)
	test := blobs(r, 400, 8, 4, 0.6)
	tr, val, err := StratifiedSplit(FewShot(data.Y, 4, 0, 0), data.Y, 4, 0.2, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultTune(Accuracy)
	cfg.Workers = 2
	got, err := Autotune(context.Background(), data.Subset(tr), data.Subset(val), test, 4, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.LRs, got.LR) || !slices.Contains(cfg.WDs, got.WD) {
		t.Fatalf("chose lr %g wd %g outside the grid", got.LR, got.WD)
	}
	perLR := map[float64]int{}
	var first *Trial
	for i, tr := range got.Trials {
		perLR[tr.LR]++
		if tr.Score > got.ValScore {
			t.Fatalf("trial %+v beats the chosen validation score %g", tr, got.ValScore)
		}
		if first == nil && tr.Score == got.ValScore {
			first = &got.Trials[i]
		}
	}
	for lr, n := range perLR {
		if n < 7 || n > 15 {
			t.Fatalf("%d weight decays tried at lr %g", n, lr)
		}
	}
	if first.LR != got.LR || first.WD != got.WD {
		t.Fatalf("chose lr %g wd %g; the first trial reaching %g was %+v", got.LR, got.WD, got.ValScore, *first)
	}
	if got.TestScore < 60 || got.Params != 4*8+4 {
		t.Fatalf("test accuracy %.1f, %d parameters (lr %g, wd %g)", got.TestScore, got.Params, got.LR, got.WD)
	}
	t.Logf("lr %g wd %g val %.1f test %.1f, %d trials", got.LR, got.WD, got.ValScore, got.TestScore, len(got.Trials))
}
