package eevee

import "sort"

// Stability is how the best combination for one k depends on the scoring
// seed (the seed of the model splits and meta-model initialisations).
type Stability struct {
	K     int      `json:"k"`
	Seeds []uint64 `json:"seeds"`
	// Best[i] is the best combination under Seeds[i].
	Best [][]string `json:"best"`
	// Frequency is the share of seeds whose best combination holds each
	// benchmark (only benchmarks selected at least once).
	Frequency map[string]float64 `json:"frequency"`
	// Consensus is the k benchmarks selected most often; ties go to the
	// larger mean importance (score increase when removed) over the
	// seeds that selected it, then to the name.
	Consensus []string `json:"consensus"`
	// Agreement is the mean Jaccard similarity of the seeds' best sets
	// to the consensus (1: every seed chose the consensus).
	Agreement float64 `json:"agreement"`
}

// StabilityOf summarises searches repeated with different scoring seeds:
// runs[i] are the results of the search under seeds[i]. Each run must
// hold the same k values in the same order.
func StabilityOf(seeds []uint64, runs [][]KResult) []Stability {
	if len(runs) == 0 {
		return nil
	}
	var out []Stability
	for ki, first := range runs[0] {
		st := Stability{K: first.K, Seeds: seeds, Frequency: map[string]float64{}}
		importance := map[string]float64{}
		for _, run := range runs {
			r := run[ki]
			best := r.Best().Benchmarks
			st.Best = append(st.Best, best)
			for _, b := range best {
				st.Frequency[b]++
			}
			for _, imp := range r.Importance {
				importance[imp.Benchmark] += imp.Increase
			}
		}
		names := make([]string, 0, len(st.Frequency))
		for b := range st.Frequency {
			importance[b] /= st.Frequency[b]
			st.Frequency[b] /= float64(len(runs))
			names = append(names, b)
		}
		sort.Slice(names, func(i, j int) bool {
			a, b := names[i], names[j]
			if st.Frequency[a] != st.Frequency[b] {
				return st.Frequency[a] > st.Frequency[b]
			}
			if importance[a] != importance[b] {
				return importance[a] > importance[b]
			}
			return a < b
		})
		st.Consensus = names[:min(first.K, len(names))]
		for _, best := range st.Best {
			st.Agreement += jaccard(best, st.Consensus)
		}
		st.Agreement /= float64(len(st.Best))
		out = append(out, st)
	}
	return out
}

func jaccard(a, b []string) float64 {
	in := map[string]bool{}
	for _, x := range a {
		in[x] = true
	}
	inter, union := 0, len(a)
	for _, x := range b {
		if in[x] {
			inter++
		} else {
			union++
		}
	}
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}
