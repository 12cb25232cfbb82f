package train

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// classData is a split whose class c has sizes[c] examples, the classes
// interleaved.
func classData(sizes ...int) *Data {
	d := &Data{Task: FewShot}
	left := append([]int(nil), sizes...)
	for more := true; more; {
		more = false
		for c := range left {
			if left[c] > 0 {
				d.Y = append(d.Y, int64(c))
				left[c]--
				more = true
			}
		}
	}
	return d
}

func repeat(n, size int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}

// checkEpisode checks an episode against GATE's bounds: the ways drawn in
// range and at least the classes kept, distinct classes, shots and queries
// in range, the support budget, support then queries, no example twice.
func checkEpisode(t *testing.T, d *Data, s EpisodeSpec, i int, e Episode) {
	t.Helper()
	s = s.withDefaults()
	if e.Ways < s.Ways[0] || e.Ways > s.Ways[1] {
		t.Fatalf("episode %d: %d ways drawn, outside %v", i, e.Ways, s.Ways)
	}
	c := e.Classes()
	if c < 1 || c > e.Ways {
		t.Fatalf("episode %d: %d classes for %d ways", i, c, e.Ways)
	}
	if len(e.Index) != len(e.Label) || len(e.Index) != len(e.Query) {
		t.Fatalf("episode %d: %d rows, %d labels, %d flags", i, len(e.Index), len(e.Label), len(e.Query))
	}
	shots, queries := make([]int, c), make([]int, c)
	truth := map[int]int64{} // label -> the split's class
	owner := map[int64]int{} // the split's class -> label
	seen := map[int]bool{}   // rows
	support, inQueries := 0, false
	for j, r := range e.Index {
		l := e.Label[j]
		if l < 0 || l >= c {
			t.Fatalf("episode %d: label %d of %d classes", i, l, c)
		}
		if seen[r] {
			t.Fatalf("episode %d: row %d twice (support and query must be disjoint)", i, r)
		}
		seen[r] = true
		y := d.Y[r]
		if got, ok := truth[l]; ok && got != y {
			t.Fatalf("episode %d: label %d holds classes %d and %d", i, l, got, y)
		}
		if got, ok := owner[y]; ok && got != l {
			t.Fatalf("episode %d: class %d under labels %d and %d (classes must be distinct)", i, y, got, l)
		}
		truth[l], owner[y] = y, l
		if e.Query[j] {
			inQueries = true
			queries[l]++
		} else {
			if inQueries {
				t.Fatalf("episode %d: a support row after the queries", i)
			}
			shots[l]++
			support++
		}
	}
	if support > s.SupportBudget {
		t.Fatalf("episode %d: %d support examples over the budget %d", i, support, s.SupportBudget)
	}
	q := queries[0]
	if q < 1 || q > s.MaxQueries {
		t.Fatalf("episode %d: %d queries a class, want 1..%d", i, q, s.MaxQueries)
	}
	for l := range c {
		if queries[l] != q {
			t.Fatalf("episode %d: class %d has %d queries, class 0 %d (GATE gives every class the same)", i, l, queries[l], q)
		}
		if shots[l] < s.MinShots || shots[l] >= s.MaxShots-q {
			t.Fatalf("episode %d: class %d has %d shots, want [%d, %d)", i, l, shots[l], s.MinShots, s.MaxShots-q)
		}
	}
	if e.Queries() != q*c {
		t.Fatalf("episode %d: Queries() %d, want %d", i, e.Queries(), q*c)
	}
}

func TestGATEEpisodesBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		d     *Data
		spec  EpisodeSpec
		fewer bool // some wide episode leaves classes out (the budget)
	}{
		// mini-ImageNet's 64 training classes of 600, GATE's [5, 50) ways.
		{"mini", classData(repeat(64, 600)...), EpisodeSpec{Split: "train", Ways: [2]int{5, 49}}, true},
		// aircraft's [5, 10) ways, 100 images a class.
		{"aircraft", classData(repeat(30, 100)...), EpisodeSpec{Split: "val", Ways: [2]int{5, 9}}, false},
		// omniglot: [2, 50) ways, 20 drawings a class.
		{"omniglot", classData(repeat(200, 20)...), EpisodeSpec{Split: "test", Ways: [2]int{2, 49}}, true},
		// the test scale: 3 ways of small classes, uneven.
		{"test scale", classData(9, 11, 10), EpisodeSpec{Split: "val", Ways: [2]int{3, 3}}, false},
		// classes too small to be drawn (4 examples) among usable ones.
		{"small classes", classData(4, 30, 3, 8, 5, 4, 12), EpisodeSpec{Split: "train", Ways: [2]int{2, 4}}, false},
		// a tighter card: 3 queries, 20 per class, a budget of 40.
		{"tight", classData(repeat(12, 40)...), EpisodeSpec{Split: "train", Ways: [2]int{4, 8}, MaxShots: 20, SupportBudget: 40, MaxQueries: 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps, err := GATEEpisodes(tc.d, tc.spec, 300, 7)
			if err != nil {
				t.Fatal(err)
			}
			if len(eps) != 300 {
				t.Fatalf("%d episodes, want 300", len(eps))
			}
			fewer, drawn := false, map[int]bool{}
			for i, e := range eps {
				checkEpisode(t, tc.d, tc.spec, i, e)
				fewer = fewer || e.Classes() < e.Ways
				drawn[e.Ways] = true
				for _, r := range e.Index {
					if n := countOf(tc.d, tc.d.Y[r]); !tc.spec.withDefaults().usable(n) {
						t.Fatalf("episode %d: drew class %d of %d examples", i, tc.d.Y[r], n)
					}
				}
			}
			if tc.fewer && !fewer {
				t.Error("no episode left a class out: the support budget never ran out")
			}
			if w := tc.spec.Ways; w[1]-w[0] >= 4 && len(drawn) < 3 {
				t.Errorf("ways drawn %v: not spread over %v", drawn, w)
			}
		})
	}
}

func countOf(d *Data, c int64) int {
	n := 0
	for _, y := range d.Y {
		if y == c {
			n++
		}
	}
	return n
}

// TestGATEEpisodesQueries checks GATE's queries per class: half the
// smallest drawn class, at least 1, at most 5.
func TestGATEEpisodesQueries(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		want  int
	}{{[]int{5, 5, 5}, 2}, {[]int{7, 40, 9}, 3}, {[]int{600, 600, 600}, 5}, {[]int{10, 11, 600}, 5}} {
		eps, err := GATEEpisodes(classData(tc.sizes...), EpisodeSpec{Split: "train", Ways: [2]int{3, 3}}, 20, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range eps {
			if e.Classes() != 3 || e.Queries() != 3*tc.want {
				t.Fatalf("sizes %v episode %d: %d classes, %d queries, want 3 and %d", tc.sizes, i, e.Classes(), e.Queries(), 3*tc.want)
			}
		}
	}
}

func TestGATEEpisodesDeterministic(t *testing.T) {
	d := classData(repeat(20, 30)...)
	spec := EpisodeSpec{Split: "train", Ways: [2]int{5, 9}}
	a, err := GATEEpisodes(d, spec, 20, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GATEEpisodes(d, spec, 20, 3)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed drew different episodes")
	}
	prefix, _ := GATEEpisodes(d, spec, 5, 3)
	if !reflect.DeepEqual(prefix, a[:5]) {
		t.Error("the first 5 episodes depend on how many are drawn")
	}
	other, _ := GATEEpisodes(d, spec, 20, 4)
	if reflect.DeepEqual(a, other) {
		t.Error("seeds 3 and 4 drew the same episodes")
	}
	spec.Split = "val"
	val, _ := GATEEpisodes(d, spec, 20, 3)
	if reflect.DeepEqual(a, val) {
		t.Error("the train and val streams drew the same episodes")
	}
}

func TestGATEEpisodesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    *Data
		spec EpisodeSpec
		want []string
	}{
		{"too few classes", classData(20, 20), EpisodeSpec{Split: "val", Ways: [2]int{3, 3}},
			[]string{"val split", "at least 3 ways", "only 2 of its 2 classes", "5 examples"}},
		{"too few examples", classData(4, 4, 30, 3), EpisodeSpec{Split: "test", Ways: [2]int{2, 5}},
			[]string{"test split", "at least 2 ways", "only 1 of its 4 classes", "5 examples"}},
		{"empty split", &Data{}, EpisodeSpec{Split: "train", Ways: [2]int{5, 49}}, []string{"train split", "only 0 of its 0 classes"}},
		{"ways reversed", classData(20, 20), EpisodeSpec{Split: "train", Ways: [2]int{5, 3}}, []string{"train split", "ways [5, 3]"}},
		{"budget", classData(20, 20), EpisodeSpec{Split: "train", Ways: [2]int{2, 49}, SupportBudget: 50}, []string{"support budget 50"}},
		{"max shots", classData(20, 20), EpisodeSpec{Split: "train", Ways: [2]int{2, 2}, MaxShots: 7}, []string{"max shots 7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := GATEEpisodes(tc.d, tc.spec, 4, 0)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestGATEEpisodeMetrics works two episodes by hand: the metrics are
// means over the episodes (GATE's epoch mean of per-episode values), not
// over the queries pooled.
func TestGATEEpisodeMetrics(t *testing.T) {
	eps := []Episode{
		// 2 classes, support 0 0 1, queries of classes 0 and 1
		{Ways: 2, Index: []int{0, 1, 2, 3, 4}, Label: []int{0, 0, 1, 0, 1}, Query: []bool{false, false, false, true, true}},
		// 3 classes, one query of class 2
		{Ways: 3, Index: []int{5, 6, 7, 8}, Label: []int{0, 1, 2, 2}, Query: []bool{false, false, false, true}},
	}
	probs := []float32{
		0.7, 0.3, // right
		0.6, 0.4, // wrong
		0.1, 0.2, 0.7, // right
	}
	m, err := GATEEpisodeMetrics(eps, probs)
	if err != nil {
		t.Fatal(err)
	}
	nll := func(p float64) float64 { return -math.Log(p + 1e-7) }
	wantLoss := ((nll(0.7)+nll(0.4))/2 + nll(0.7)) / 2
	if math.Abs(m["acc1"]-75) > 1e-9 || math.Abs(m["loss"]-wantLoss) > 1e-6 {
		t.Errorf("metrics %v, want acc1 75 (pooled would be 66.7) and loss %.6f", m, wantLoss)
	}
	if _, err := GATEEpisodeMetrics(eps, probs[:6]); err == nil || !strings.Contains(err.Error(), "episode 1") {
		t.Errorf("short probabilities: %v", err)
	}
	if _, err := GATEEpisodeMetrics(eps, append(probs, 0.5)); err == nil || !strings.Contains(err.Error(), "take 7") {
		t.Errorf("long probabilities: %v", err)
	}
	if _, err := GATEEpisodeMetrics(nil, nil); err == nil {
		t.Error("no episodes: no error")
	}
}
