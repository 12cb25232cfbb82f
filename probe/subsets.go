package probe

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// byClass lists the example indices of each class, in order.
func byClass(y []int, classes int) [][]int {
	out := make([][]int, classes)
	for i, c := range y {
		out[c] = append(out[c], i)
	}
	return out
}

// FewShot draws shots examples of every class (all of a class with fewer;
// shots <= 0 keeps every example), seeded by seed only: ELEVATER's
// NUM_SAMPLES_PER_CLASS with RANDOM_SEED_SAMPLING. The indices are sorted.
func FewShot(y []int, classes, shots int, seed uint64) []int {
	if shots <= 0 {
		all := make([]int, len(y))
		for i := range all {
			all[i] = i
		}
		return all
	}
	r := rand.New(rand.NewPCG(seed, 0x5407))
	var out []int
	for _, idx := range byClass(y, classes) {
		perm := r.Perm(len(idx))
		for _, p := range perm[:min(shots, len(idx))] {
			out = append(out, idx[p])
		}
	}
	slices.Sort(out)
	return out
}

// StratifiedSplit splits idx (indices into y) into train and validation
// parts, about frac of each class to validation and at least one example
// of each class on each side: ELEVATER's 80/20 split. A class with fewer
// than two examples is an error.
func StratifiedSplit(idx, y []int, classes int, frac float64, seed uint64) (train, val []int, err error) {
	groups := make([][]int, classes)
	for _, i := range idx {
		groups[y[i]] = append(groups[y[i]], i)
	}
	r := rand.New(rand.NewPCG(seed, 0x5911))
	for c, g := range groups {
		if len(g) == 0 {
			continue
		}
		if len(g) < 2 {
			return nil, nil, fmt.Errorf("class %d has %d example; the train/validation split needs 2 per class", c, len(g))
		}
		perm := r.Perm(len(g))
		nVal := min(max(int(math.Round(frac*float64(len(g)))), 1), len(g)-1)
		for k, p := range perm {
			if k < nVal {
				val = append(val, g[p])
			} else {
				train = append(train, g[p])
			}
		}
	}
	slices.Sort(train)
	slices.Sort(val)
	return train, val, nil
}

// VTAB1k draws VTAB-1k's 1000 training examples (all when fewer) and
// splits them 800/200 for selection, seeded by seed only.
func VTAB1k(n int, seed uint64) (all, train, val []int) {
	r := rand.New(rand.NewPCG(seed, 0x1000))
	perm := r.Perm(n)
	all = perm[:min(1000, n)]
	cut := len(all) * 4 / 5
	train, val = slices.Clone(all[:cut]), slices.Clone(all[cut:])
	all = slices.Clone(all)
	slices.Sort(all)
	slices.Sort(train)
	slices.Sort(val)
	return all, train, val
}

// CheckLabels reports a label outside [0, classes).
func CheckLabels(y []int, classes int) error {
	for i, k := range y {
		if k < 0 || k >= classes {
			return fmt.Errorf("example %d has label %d outside the %d classes", i, k, classes)
		}
	}
	return nil
}
