package eevee

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tiny builds a matrix from columns spec "category/benchmark/metric" and a
// value function.
func tiny(models int, cols []string, val func(model, col int) float64) *Matrix {
	m := &Matrix{}
	for i := 0; i < models; i++ {
		m.Models = append(m.Models, "m"+string(rune('a'+i)))
	}
	for _, c := range cols {
		p := strings.Split(c, "/")
		m.Columns = append(m.Columns, Column{Category: p[0], Benchmark: p[1], Metric: p[2], HigherIsBetter: true})
	}
	for i := 0; i < models; i++ {
		row := make([]float64, len(cols))
		for j := range row {
			row[j] = val(i, j)
		}
		m.Values = append(m.Values, row)
	}
	return m
}

func TestGroupedWeightsByHand(t *testing.T) {
	m := tiny(6, []string{"A/a/x", "A/a/y", "A/b/x", "B/c/x"}, func(i, j int) float64 { return float64(i*j + j) })
	want := map[string][]float64{
		// group: 2 groups; A has benchmarks a (2 cols) and b; B has c.
		"group":     {1.0 / 8, 1.0 / 8, 1.0 / 4, 1.0 / 2},
		"benchmark": {1.0 / 6, 1.0 / 6, 1.0 / 3, 1.0 / 3},
		"column":    {0.25, 0.25, 0.25, 0.25},
	}
	for weighting, w := range want {
		o := Defaults()
		o.Weighting = weighting
		p, err := NewProblem(m, o)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, p.weights, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
			t.Errorf("%s weights (-want +got):\n%s", weighting, diff)
		}
	}
	// exclude_selected drops the selected benchmark and re-normalises:
	// with a selected, group A holds only b.
	o := Defaults()
	p, _ := NewProblem(m, o)
	w := p.targetWeights(map[int]bool{0: true})
	if diff := cmp.Diff([]float64{0, 0, 0.5, 0.5}, w); diff != "" {
		t.Errorf("exclude_selected weights: %s", diff)
	}
}

// TestOneStepMatchesIndependentFloat64 trains a tiny meta-model for one
// epoch and compares its validation error with a scalar float64
// implementation of the same forward pass, gradient and AdamW step.
func TestOneStepMatchesIndependentFloat64(t *testing.T) {
	m := tiny(6, []string{"A/a/x", "A/b/x", "B/c/x"}, func(i, j int) float64 { return math.Sin(float64(3*i+7*j)) + float64(i) })
	o := Defaults()
	o.Splits, o.Hidden, o.Epochs, o.LayerNorm, o.Activation, o.TestSize = 1, 3, 1, false, "relu", 0.34
	p, err := NewProblem(m, o)
	if err != nil {
		t.Fatal(err)
	}
	combo := []int{0, 2}
	got := p.Score(combo)

	// Independent computation.
	sp := p.splits[0]
	rng := rand.New(rand.NewPCG(o.Seed, uint64(0)<<32|uint64(2)))
	in, H, O := 2, 3, 3
	u := func(n int, bound float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = float64(float32((rng.Float64()*2 - 1) * bound))
		}
		return s
	}
	w1, b1 := u(in*H, 1/math.Sqrt(2)), u(H, 1/math.Sqrt(2))
	w2, b2 := u(H*O, 1/math.Sqrt(3)), u(O, 1/math.Sqrt(3))
	x := func(model int) []float64 { return []float64{p.z[model][0], p.z[model][2]} }
	fwd := func(xi []float64) (z, a, out []float64) {
		z, a, out = make([]float64, H), make([]float64, H), make([]float64, O)
		for h := 0; h < H; h++ {
			z[h] = b1[h]
			for d := 0; d < in; d++ {
				z[h] += xi[d] * w1[d*H+h]
			}
			a[h] = math.Max(z[h], 0)
		}
		for c := 0; c < O; c++ {
			out[c] = b2[c]
			for h := 0; h < H; h++ {
				out[c] += a[h] * w2[h*O+c]
			}
		}
		return
	}
	w := p.weights
	g1, gb1, g2, gb2 := make([]float64, in*H), make([]float64, H), make([]float64, H*O), make([]float64, O)
	n := float64(len(sp.train))
	for _, model := range sp.train {
		xi := x(model)
		z, a, out := fwd(xi)
		dz := make([]float64, H)
		for c := 0; c < O; c++ {
			d := 2 * w[c] * (out[c] - p.z[model][c]) / n
			gb2[c] += d
			for h := 0; h < H; h++ {
				g2[h*O+c] += a[h] * d
				if z[h] > 0 {
					dz[h] += d * w2[h*O+c]
				}
			}
		}
		for h := 0; h < H; h++ {
			gb1[h] += dz[h]
			for d := 0; d < in; d++ {
				g1[d*H+h] += xi[d] * dz[h]
			}
		}
	}
	adam := func(p, g []float64) { // first AdamW step: m/(1-b1) = g, v/(1-b2) = g^2
		for i := range p {
			p[i] = p[i]*(1-o.LR*o.WeightDecay) - o.LR*g[i]/(math.Abs(g[i])+1e-8)
		}
	}
	adam(w1, g1)
	adam(b1, gb1)
	adam(w2, g2)
	adam(b2, gb2)
	var want float64
	for _, model := range sp.val {
		_, _, out := fwd(x(model))
		for c := 0; c < O; c++ {
			d := out[c] - p.z[model][c]
			want += w[c] * d * d
		}
	}
	want /= float64(len(sp.val))
	if math.Abs(got-want) > 1e-5*(1+want) {
		t.Fatalf("score %.8f, independent float64 computation %.8f", got, want)
	}
}

func TestMutationNeverDuplicates(t *testing.T) {
	p, _ := NewProblem(loadPaper(t), Defaults())
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := 0; trial < 2000; trial++ {
		k := 1 + rng.IntN(len(p.Pool)-1)
		c := p.randomCombo(rng, k)
		m := p.mutate(rng, c)
		seen := map[int]bool{}
		for _, b := range m {
			if seen[b] {
				t.Fatalf("mutation of %v produced a duplicate: %v", c, m)
			}
			seen[b] = true
		}
		if len(m) != k {
			t.Fatalf("mutation changed the size: %v -> %v", c, m)
		}
		diff := 0
		for _, b := range m {
			if !containsInt(c, b) {
				diff++
			}
		}
		if diff != 1 {
			t.Fatalf("mutation must swap exactly one member: %v -> %v", c, m)
		}
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// planted builds a matrix whose benchmarks are noisy functions of three
// latent benchmarks, plus pure-noise benchmarks.
func planted() *Matrix {
	rng := rand.New(rand.NewPCG(42, 42))
	const models = 24
	latent := make([][3]float64, models)
	for i := range latent {
		latent[i] = [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
	}
	var cols []string
	var gen []func(i int) float64
	for l := 0; l < 3; l++ {
		l := l
		cols = append(cols, "G/latent"+string(rune('0'+l))+"/m")
		gen = append(gen, func(i int) float64 { return latent[i][l] })
	}
	for d := 0; d < 9; d++ {
		d := d
		mix := [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		cols = append(cols, "G/derived"+string(rune('a'+d))+"/m")
		gen = append(gen, func(i int) float64 {
			return mix[0]*latent[i][0] + mix[1]*latent[i][1] + mix[2]*latent[i][2] + 0.05*math.Sin(float64(i*(d+3)))
		})
	}
	noise := make([][]float64, 4)
	for n := range noise {
		noise[n] = make([]float64, models)
		for i := range noise[n] {
			noise[n][i] = rng.NormFloat64()
		}
		n := n
		cols = append(cols, "G/noise"+string(rune('a'+n))+"/m")
		gen = append(gen, func(i int) float64 { return noise[n][i] })
	}
	return tiny(models, cols, func(i, j int) float64 { return gen[j](i) })
}

func TestSearchRecoversPlantedStructure(t *testing.T) {
	o := Defaults()
	o.Splits = 5
	o.Epochs = 60
	p, err := NewProblem(planted(), o)
	if err != nil {
		t.Fatal(err)
	}
	e := p.NewEvaluator(2)
	res, err := p.Search(context.Background(), e, SearchOptions{K: []int{3}, Initial: 60, Winners: 10, Children: 5, Generations: 4})
	if err != nil {
		t.Fatal(err)
	}
	best := res[0].Best().Benchmarks
	for _, b := range best {
		if strings.HasPrefix(b, "noise") {
			t.Fatalf("best combination %v contains a noise benchmark", best)
		}
	}
	// The best 3 must span the three latent factors: it should beat
	// every combination that includes a noise benchmark.
	single, _ := p.SingleBenchmarks(context.Background(), e)
	if !strings.HasPrefix(single[len(single)-1].Benchmarks[0], "noise") {
		t.Errorf("the least predictive single benchmark is %v, want a noise one", single[len(single)-1].Benchmarks)
	}
}

func TestScoresIdenticalWhateverTheWorkers(t *testing.T) {
	o := Defaults()
	o.Splits = 3
	p, _ := NewProblem(loadPaper(t), o)
	run := func(workers int) []KResult {
		res, err := p.Search(context.Background(), p.NewEvaluator(workers), SearchOptions{K: []int{4}, Initial: 24, Winners: 6, Children: 3, Generations: 2, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		for i := range res {
			for j := range res[i].History {
				res[i].History[j].Elapsed, res[i].History[j].CandidatesPerSec = 0, 0
			}
		}
		return res
	}
	a, b := run(1), run(3)
	if diff := cmp.Diff(a, b, cmp.AllowUnexported(Candidate{})); diff != "" {
		t.Fatalf("1 worker and 3 workers disagree:\n%s", diff)
	}
}

// optionCase trains on benchmark "in" and predicts the rest.
func optionScore(t *testing.T, m *Matrix, mutate func(*Options), combo ...string) float64 {
	t.Helper()
	o := Defaults()
	o.Splits = 6
	mutate(&o)
	p, err := NewProblem(m, o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Combo(combo)
	if err != nil {
		t.Fatal(err)
	}
	return p.Score(c)
}

func TestOptionsMoveTheScoreAsExpected(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const models = 20
	base := make([]float64, models)
	noise := make([][]float64, 6)
	for i := range base {
		base[i] = rng.NormFloat64()
	}
	for n := range noise {
		noise[n] = make([]float64, models)
		for i := range noise[n] {
			noise[n][i] = rng.NormFloat64()
		}
	}
	// Group P: "in" (the input) and "easy" (4 columns copying it).
	// Group Q: "hard", one pure-noise column. "in" also has a noisy
	// second metric that is not higher-is-better.
	m := tiny(models, []string{"P/in/main", "P/in/aux", "P/easy/a", "P/easy/b", "P/easy/c", "P/easy/d", "Q/hard/x"}, func(i, j int) float64 {
		switch j {
		case 1:
			return noise[0][i]
		case 6:
			return noise[1][i]
		}
		return base[i] + 0.01*float64(j)
	})
	m.Columns[1].HigherIsBetter = false
	def := optionScore(t, m, func(o *Options) {}, "in")

	// column weighting: 4 easy columns dominate 1 hard one -> lower error.
	if col := optionScore(t, m, func(o *Options) { o.Weighting = "column" }, "in"); col >= def {
		t.Errorf("column weighting %.4f should be below group weighting %.4f here", col, def)
	}
	// benchmark weighting: hard is 1 of 3 benchmarks instead of 1 of 2 groups.
	if bw := optionScore(t, m, func(o *Options) { o.Weighting = "benchmark" }, "in"); bw >= def {
		t.Errorf("benchmark weighting %.4f should be below group weighting %.4f here", bw, def)
	}
	// exclude_selected: the selected benchmark's columns, which the
	// meta-model sees as inputs and predicts well, stop counting.
	allEasy := optionScore(t, m, func(o *Options) {}, "easy")
	if ex := optionScore(t, m, func(o *Options) { o.Targets = "exclude_selected" }, "easy"); ex <= allEasy {
		t.Errorf("exclude_selected %.4f should be above all targets %.4f here", ex, allEasy)
	}
	// primary columns drop in's noisy aux metric from inputs and targets.
	if pr := optionScore(t, m, func(o *Options) { o.Columns = "primary" }, "in"); pr >= def {
		t.Errorf("primary columns %.4f should be below all columns %.4f here", pr, def)
	}
	if hb := optionScore(t, m, func(o *Options) { o.Columns = "higher_is_better" }, "in"); hb >= def {
		t.Errorf("higher_is_better columns %.4f should be below all columns %.4f here", hb, def)
	}
	// one hidden unit cannot carry the signal as well as 64.
	if h1 := optionScore(t, m, func(o *Options) { o.Hidden = 1 }, "in"); h1 <= def {
		t.Errorf("hidden=1 %.4f should be above hidden=64 %.4f", h1, def)
	}
	// best_val stops at the epoch that did best on held-out models; on
	// pure-noise targets, long training overfits, and it should win.
	nm := tiny(models, []string{"P/in/main", "Q/n1/x", "Q/n2/x", "R/n3/x"}, func(i, j int) float64 { return noise[2+j][i] })
	long := func(o *Options) { o.Epochs, o.LR = 200, 0.05 }
	final := optionScore(t, nm, long, "in")
	best := optionScore(t, nm, func(o *Options) { long(o); o.Epoch = "best_val" }, "in")
	t.Logf("noise targets: final %.4f, best_val %.4f", final, best)
	if best >= final {
		t.Errorf("best_val %.4f should be below final %.4f after overtraining", best, final)
	}
	for name, mut := range map[string]func(*Options){
		"relu":      func(o *Options) { o.Activation = "relu" },
		"tanh":      func(o *Options) { o.Activation = "tanh" },
		"no LN":     func(o *Options) { o.LayerNorm = false },
		"test size": func(o *Options) { o.TestSize = 0.5 },
	} {
		if s := optionScore(t, m, mut, "in"); s == def {
			t.Errorf("%s did not change the score (%.6f)", name, s)
		}
	}
}

func TestExactBenchmarkIDs(t *testing.T) {
	p, _ := NewProblem(loadPaper(t), Defaults())
	a, _ := p.Combo([]string{"clevr"})
	b, _ := p.Combo([]string{"clevr-math"})
	if a[0] == b[0] {
		t.Fatal("clevr and clevr-math resolved to the same benchmark")
	}
	if _, err := p.Combo([]string{"clev"}); err == nil {
		t.Fatal("a prefix must not match a benchmark")
	}
	inCols := func(b int) []string {
		var out []string
		for _, c := range p.benchCols[b] {
			out = append(out, p.Matrix.Columns[c].Name())
		}
		sort.Strings(out)
		return out
	}
	for _, c := range inCols(a[0]) {
		if !strings.HasPrefix(c, "clevr:") {
			t.Fatalf("clevr selects column %s", c)
		}
	}
}

func TestMissingCellsAreNeverFilled(t *testing.T) {
	m := tiny(5, []string{"A/a/x", "A/b/x"}, func(i, j int) float64 { return float64(i + j) })
	m.Values[2][1] = math.NaN()
	if _, err := NewProblem(m, Defaults()); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("NewProblem with a missing cell: %v", err)
	}
	if got := m.DropMissing(true); len(got.Models) != 4 || len(got.Columns) != 2 {
		t.Fatalf("drop models: %d models %d cols", len(got.Models), len(got.Columns))
	}
	if got := m.DropMissing(false); len(got.Models) != 5 || len(got.Columns) != 1 {
		t.Fatalf("drop columns: %d models %d cols", len(got.Models), len(got.Columns))
	}
}

// TestPublishedSubsetsRankNearTop is issue evidence: under the default
// (authors') scoring, the paper's best-k sets for k = 2..22 beat almost
// every random set of the same size. It takes about two minutes.
func TestPublishedSubsetsRankNearTop(t *testing.T) {
	longTest(t, "scores 2 x 21 x 201 candidates")
	f, err := os.Open("../stdlib/data/gate_combinations.csv")
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := LoadPublished(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	sel := PublishedRange(pubs, 2, 22)
	if len(sel) != 21 {
		t.Fatalf("%d published sets for k=2..22", len(sel))
	}
	var total float64
	for _, seed := range []uint64{0, 1} {
		o := Defaults()
		o.Exclude, o.Seed = []string{"cityscapes"}, seed
		p, err := NewProblem(loadPaper(t), o)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.CheckPublished(context.Background(), p.NewEvaluator(0), sel, 200, seed)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, r := range res {
			sum += r.Share
		}
		t.Logf("seed %d: mean share of random sets beating the published one: %.4f", seed, sum/21)
		total += sum / 21
	}
	if mean := total / 2; mean > 0.05 {
		t.Fatalf("mean share over two seeds %.4f, want at most 0.05", mean)
	}
}

// TestBestK8OverlapsPublished is issue evidence: with the default scoring,
// a 10-generation k = 8 search on the paper matrix finds, on two seeds, a
// set containing clevr-math, acdc and iwildcam that scores better than the
// paper's published small tier under the same scoring (about a minute per
// seed on two cores). The overlap with the published set is logged: 4 of 8
// on seed 0, 3 of 8 on seed 1. Over seeds 0-9 it is 4 3 3 6 3 3 4 3 5 4:
// nine of the ten best sets hold hmdb51 and kinetics (Video Class) in place
// of some of the published set's image-classification benchmarks, among
// sets that score alike.
func TestBestK8OverlapsPublished(t *testing.T) {
	longTest(t, "two full k=8 searches")
	published := map[string]bool{"cifar100": true, "cubirds": true, "mini": true, "imagenet1k": true, "acdc": true, "clevr-math": true, "ade20k": true, "iwildcam": true}
	for _, seed := range []uint64{0, 1} {
		o := Defaults()
		o.Exclude, o.Seed = []string{"cityscapes"}, seed
		p, err := NewProblem(loadPaper(t), o)
		if err != nil {
			t.Fatal(err)
		}
		so := DefaultSearch(8)
		so.Seed = seed
		res, err := p.Search(context.Background(), p.NewEvaluator(0), so)
		if err != nil {
			t.Fatal(err)
		}
		best := res[0].Best()
		shared := 0
		has := map[string]bool{}
		for _, b := range best.Benchmarks {
			has[b] = true
			if published[b] {
				shared++
			}
		}
		pub, _ := p.Combo([]string{"cifar100", "cubirds", "mini", "imagenet1k", "acdc", "clevr-math", "ade20k", "iwildcam"})
		pubScore := p.Score(pub)
		t.Logf("seed %d: best %v score %.4f (published set scores %.4f), %d shared", seed, best.Benchmarks, best.Score, pubScore, shared)
		if shared < 3 || !has["clevr-math"] || !has["acdc"] || !has["iwildcam"] {
			t.Errorf("seed %d: best %v shares %d with the published set or lacks clevr-math/acdc/iwildcam", seed, best.Benchmarks, shared)
		}
		if best.Score > pubScore {
			t.Errorf("seed %d: the search's best %.4f is worse than the published set's %.4f under the same scoring", seed, best.Score, pubScore)
		}
	}
}
