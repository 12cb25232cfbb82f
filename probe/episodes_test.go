package probe

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestVariableEpisodesFollowMetaDataset checks the sampler's invariants
// over many episodes: ways within [5, min(50, classes)], a balanced query
// of min(10, floor(smallest class / 2)) per class, 1 to n_c - q support
// examples per class, at most 500 in all, support and query disjoint,
// and the same episode for the same seed.
func TestVariableEpisodesFollowMetaDataset(t *testing.T) {
	const classes = 60
	var y []int
	for c := range classes {
		for range 8 + (c*13)%40 { // classes of 8 to 47 examples
			y = append(y, c)
		}
	}
	cfg := DefaultEpisodes()
	waysSeen := map[int]bool{}
	for e := range 300 {
		ep, err := SampleEpisode(y, classes, cfg, rand.New(rand.NewPCG(1, uint64(e))))
		if err != nil {
			t.Fatal(err)
		}
		again, _ := SampleEpisode(y, classes, cfg, rand.New(rand.NewPCG(1, uint64(e))))
		if !slices.Equal(ep.Support, again.Support) || !slices.Equal(ep.Query, again.Query) {
			t.Fatal("the same seed drew a different episode")
		}
		ways := len(ep.Classes)
		waysSeen[ways] = true
		if ways < 5 || ways > 50 {
			t.Fatalf("%d ways", ways)
		}
		smallest := math.MaxInt
		size := map[int]int{}
		for _, c := range ep.Classes {
			n := 8 + (c*13)%40
			size[c] = n
			smallest = min(smallest, n)
		}
		q := min(10, smallest/2)
		sup, qry := map[int]int{}, map[int]int{}
		seen := map[int]bool{}
		for _, i := range ep.Support {
			sup[y[i]]++
			seen[i] = true
		}
		for _, i := range ep.Query {
			qry[y[i]]++
			if seen[i] {
				t.Fatalf("example %d in support and query", i)
			}
		}
		if len(ep.Support) > 500 {
			t.Fatalf("support of %d", len(ep.Support))
		}
		for _, c := range ep.Classes {
			if qry[c] != q {
				t.Fatalf("class %d has %d queries, want %d", c, qry[c], q)
			}
			if sup[c] < 1 || sup[c] > size[c]-q {
				t.Fatalf("class %d has %d support examples of %d (query %d)", c, sup[c], size[c], q)
			}
		}
	}
	if len(waysSeen) < 20 {
		t.Fatalf("only %d distinct ways in 300 episodes", len(waysSeen))
	}
}

func TestFixedEpisodesAndErrors(t *testing.T) {
	y := make([]int, 100)
	for i := range y {
		y[i] = i % 10
	}
	ep, err := SampleEpisode(y, 10, EpisodeConfig{Ways: 5, Shots: 3, Queries: 4}, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Classes) != 5 || len(ep.Support) != 15 || len(ep.Query) != 20 {
		t.Fatalf("episode %d ways, %d support, %d query", len(ep.Classes), len(ep.Support), len(ep.Query))
	}
	if _, err := SampleEpisode(y, 10, EpisodeConfig{Ways: 5, Shots: 8, Queries: 4}, rand.New(rand.NewPCG(2, 2))); err == nil {
		t.Fatal("12 examples per class were drawn from classes of 10")
	}
	four := make([]int, 40)
	for i := range four {
		four[i] = i % 4
	}
	if _, err := SampleEpisode(y, 4, DefaultEpisodes(), rand.New(rand.NewPCG(2, 2))); err == nil {
		t.Fatal("labels outside the classes were accepted")
	}
	if _, err := SampleEpisode(four, 4, DefaultEpisodes(), rand.New(rand.NewPCG(2, 2))); err == nil {
		t.Fatal("a variable-way episode was drawn from 4 classes")
	}
}

// TestCosineGradientMatchesFiniteDifferences checks the cosine
// classifier's gradient.
func TestCosineGradientMatchesFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	s := blobs(r, 12, 5, 3, 1)
	w := make([]float64, 3*5)
	for i := range w {
		w[i] = r.NormFloat64()
	}
	_, g := cosineLossGrad(w, 3, s, s.Y)
	for i := range w {
		const h = 1e-6
		w[i] += h
		up, _ := cosineLossGrad(w, 3, s, s.Y)
		w[i] -= 2 * h
		down, _ := cosineLossGrad(w, 3, s, s.Y)
		w[i] += h
		if num := (up - down) / (2 * h); math.Abs(num-g[i]) > 1e-6*math.Max(1, math.Abs(num)) {
			t.Fatalf("d loss / d w[%d] = %g, finite differences %g", i, g[i], num)
		}
	}
}

// TestAdaptersClassifySeparatedEpisodes: every adapter is near perfect on
// well-separated classes and at chance on pure noise.
func TestAdaptersClassifySeparatedEpisodes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	clean := blobs(r, 400, 16, 10, 3)
	noise := blobs(r, 400, 16, 10, 0)
	cfg := EpisodeConfig{Ways: 5, Shots: 5, Queries: 10}
	for _, name := range AdapterNames() {
		var good, bad []float64
		for e := range 20 {
			ep, err := SampleEpisode(clean.Y, 10, cfg, rand.New(rand.NewPCG(3, uint64(e))))
			if err != nil {
				t.Fatal(err)
			}
			good = append(good, RunEpisode(clean, ep, Adapters[name]))
			bad = append(bad, RunEpisode(noise, ep, Adapters[name]))
		}
		g, _ := MeanCI(good)
		b, ci := MeanCI(bad)
		if g < 95 || b > 20+2*ci+5 {
			t.Errorf("%s: %.1f%% on separated classes, %.1f%% ± %.1f on noise", name, g, b, ci)
		}
		t.Logf("%s: %.1f%% separated, %.1f%% ± %.1f noise", name, g, b, ci)
	}
}

func TestMeanCI(t *testing.T) {
	m, ci := MeanCI([]float64{1, 2, 3, 4})
	// sd = sqrt(5/3); 1.96 sd / 2
	if m != 2.5 || math.Abs(ci-1.96*math.Sqrt(5.0/3)/2) > 1e-12 {
		t.Fatalf("mean %g ci %g", m, ci)
	}
}
