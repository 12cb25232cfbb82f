package train

// GATE's few-shot episodes: variable ways, shots and queries, as GATE's
// episode sampler draws them (GATE@65192ec gate/data/few_shot/core.py,
// FewShotClassificationMetaDataset.__getitem__), for GATE's ProtoNet
// adapter on the torch runtime.

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// GATE's sampler's constants, the same in every few-shot dataset file of
// GATE@65192ec (gate/data/few_shot/{aircraft,cubirds200,
// describable_textures,fungi,mini_imagenet,omniglot,vggflowers}.py and
// core.py).
const (
	// GATEMinShots is min_num_samples_per_class: the fewest support
	// examples a class of an episode has.
	GATEMinShots = 2
	// GATEMaxShots is core.py's max_per_class_support_set_size.
	GATEMaxShots = 50
	// GATESupportBudget is core.py's max_support_set_size.
	GATESupportBudget = 250
	// GATEMaxQueries is num_queries_per_class.
	GATEMaxQueries = 5
)

// EpisodeSpec is how GATE samples the episodes of one split.
//
// Per episode: the ways are drawn uniformly from Ways (inclusive; GATE's
// range(min_num_classes_per_set, num_classes_per_set)) and capped at the
// split's usable classes; that many distinct classes are drawn; the
// queries per class are q = min(max(floor(a/2), 1), MaxQueries) for a
// the fewest examples among the drawn classes; then class by class (the
// i-th of k) the shots are drawn uniformly from [MinShots, u) with
// u = min(examples of the class, SupportBudget - support so far - (k - i),
// MaxShots) - q, and the class is left out of the episode where that range
// is empty (the budget is spent), as GATE leaves it out. A class's shots
// and queries are distinct examples drawn without replacement.
//
// A zero field takes GATE's value (GATEMinShots, GATEMaxShots,
// GATESupportBudget, GATEMaxQueries).
type EpisodeSpec struct {
	// Split names the split: errors name it, and it chooses the random
	// stream, so the splits' episodes differ under one seed.
	Split string
	// Ways is the range of ways, both ends included.
	Ways [2]int
	// MinShots is the fewest support examples of a class.
	MinShots int
	// MaxShots caps a class's support and query examples together: its
	// shots stay below MaxShots - q.
	MaxShots int
	// SupportBudget caps the support set's examples.
	SupportBudget int
	// MaxQueries caps the queries of a class.
	MaxQueries int
}

// withDefaults fills the fields left zero with GATE's values.
func (s EpisodeSpec) withDefaults() EpisodeSpec {
	for _, f := range []struct {
		dst *int
		v   int
	}{{&s.MinShots, GATEMinShots}, {&s.MaxShots, GATEMaxShots}, {&s.SupportBudget, GATESupportBudget}, {&s.MaxQueries, GATEMaxQueries}} {
		if *f.dst == 0 {
			*f.dst = f.v
		}
	}
	return s
}

// check reports a spec no episode can be drawn from. The support budget
// must leave the first class of the widest episode its fewest shots and
// most queries, so that every episode keeps a class.
func (s EpisodeSpec) check() error {
	switch {
	case s.Ways[0] < 1 || s.Ways[1] < s.Ways[0]:
		return fmt.Errorf("ways [%d, %d]: want 1 <= the first <= the second", s.Ways[0], s.Ways[1])
	case s.MinShots < 1 || s.MaxQueries < 1:
		return fmt.Errorf("min shots %d and max queries %d: want both at least 1", s.MinShots, s.MaxQueries)
	case s.MaxShots <= s.MinShots+s.MaxQueries:
		return fmt.Errorf("max shots %d: want above min shots %d plus max queries %d", s.MaxShots, s.MinShots, s.MaxQueries)
	case s.SupportBudget <= s.Ways[1]+s.MaxQueries+s.MinShots:
		return fmt.Errorf("support budget %d: want above the most ways %d plus max queries %d plus min shots %d",
			s.SupportBudget, s.Ways[1], s.MaxQueries, s.MinShots)
	}
	return nil
}

// queriesFor is the queries per class of an episode whose smallest class
// has a examples (GATE's _calculate_num_query_samples_per_class).
func (s EpisodeSpec) queriesFor(a int) int {
	return min(max(a/2, 1), s.MaxQueries)
}

// usable says whether a class of a examples can be in an episode: as its
// episode's smallest class its shot range is not empty. Every class of
// an episode drawn from usable classes keeps a shot range (the queries
// grow with the smallest class), so only the support budget leaves
// classes out.
func (s EpisodeSpec) usable(a int) bool {
	return min(a, s.MaxShots)-s.queriesFor(a) > s.MinShots
}

// Episode is one of GATE's episodes: its examples (rows of the split),
// support class by class and then queries class by class, each with its
// class within the episode (0 .. Classes()-1, in the order drawn).
type Episode struct {
	// Ways is the ways drawn; Classes() is fewer where the support budget
	// left classes out.
	Ways  int
	Index []int
	Label []int
	Query []bool
}

// Classes is the number of classes in the episode.
func (e Episode) Classes() int {
	c := 0
	for _, l := range e.Label {
		c = max(c, l+1)
	}
	return c
}

// Queries is the number of query examples.
func (e Episode) Queries() int {
	n := 0
	for _, q := range e.Query {
		if q {
			n++
		}
	}
	return n
}

// GATEEpisodes draws n episodes from d's classes as GATE's sampler does
// (EpisodeSpec), deterministically: episode e comes from a PCG seeded by
// seed and by spec.Split and e, so the same seed gives every encoder the
// same episodes, the first n episodes do not depend on n, and the splits
// differ. Two things differ from GATE's code: its classes are drawn with
// replacement (an episode may hold a class twice, its two draws possibly
// sharing examples between support and query, and one of its labels with
// no example, whose zero prototype still takes part in the logits), here
// distinct; and only the usable classes are drawn (those with enough
// examples for their fewest shots and a query as the episode's smallest
// class), which GATE draws and then leaves out of the episode.
func GATEEpisodes(d *Data, spec EpisodeSpec, n int, seed uint64) ([]Episode, error) {
	s := spec.withDefaults()
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s split: GATE's episodes: %w", s.Split, err)
	}
	byClass := map[int64][]int{}
	var order []int64 // classes in order of first appearance
	for i, y := range d.Y {
		if len(byClass[y]) == 0 {
			order = append(order, y)
		}
		byClass[y] = append(byClass[y], i)
	}
	var classes [][]int // the usable classes' rows
	for _, c := range order {
		if s.usable(len(byClass[c])) {
			classes = append(classes, byClass[c])
		}
	}
	if len(classes) < s.Ways[0] {
		need := s.MinShots + 1
		for !s.usable(need) {
			need++
		}
		return nil, fmt.Errorf("%s split: GATE's episodes draw at least %d ways, but only %d of its %d classes have the %d examples a class needs (%d shots and its queries)",
			s.Split, s.Ways[0], len(classes), len(order), need, s.MinShots)
	}
	h := fnv.New64a()
	h.Write([]byte(s.Split))
	stream := h.Sum64()
	out := make([]Episode, n)
	swaps := map[int]int{}
	for e := range out {
		rng := rand.New(rand.NewPCG(seed, stream^(uint64(e)+1)*0x9e3779b97f4a7c15))
		ways := s.Ways[0] + rng.IntN(s.Ways[1]-s.Ways[0]+1)
		k := min(ways, len(classes))
		pick := partialPerm(rng, len(classes), k, swaps)
		fewest := math.MaxInt
		for _, ci := range pick {
			fewest = min(fewest, len(classes[ci]))
		}
		q := s.queriesFor(fewest)
		ep := Episode{Ways: ways}
		var qIndex, qLabel []int
		support, label := 0, 0
		for i, ci := range pick {
			ex := classes[ci]
			upper := min(len(ex), s.SupportBudget-support-(k-i), s.MaxShots) - q
			if upper <= s.MinShots {
				continue // GATE's empty range: the class is left out
			}
			shots := s.MinShots + rng.IntN(upper-s.MinShots)
			chosen := partialPerm(rng, len(ex), shots+q, swaps)
			for _, r := range chosen[:shots] {
				ep.Index = append(ep.Index, ex[r])
				ep.Label = append(ep.Label, label)
			}
			for _, r := range chosen[shots:] {
				qIndex = append(qIndex, ex[r])
				qLabel = append(qLabel, label)
			}
			support += shots
			label++
		}
		ep.Query = make([]bool, len(ep.Index), len(ep.Index)+len(qIndex))
		ep.Index = append(ep.Index, qIndex...)
		ep.Label = append(ep.Label, qLabel...)
		for range qIndex {
			ep.Query = append(ep.Query, true)
		}
		out[e] = ep
	}
	return out, nil
}

// partialPerm returns m distinct values of [0, n) in random order: the
// first m steps of a Fisher-Yates shuffle of 0..n-1, its swaps kept in
// swaps (cleared first) rather than in an array of n.
func partialPerm(rng *rand.Rand, n, m int, swaps map[int]int) []int {
	clear(swaps)
	at := func(i int) int {
		if v, ok := swaps[i]; ok {
			return v
		}
		return i
	}
	out := make([]int, m)
	for i := range m {
		j := i + rng.IntN(n-i)
		out[i] = at(j)
		swaps[j] = at(i)
	}
	return out
}

// GATEEpisodeMetrics scores GATE's episodes from the query
// probabilities, episode by episode, each episode's queries in order
// (row-major: a query's Classes() probabilities), as GATE's evaluator
// does: Acc@1 (%) and the loss are means over the episodes of each
// episode's mean over its queries (GATE logs each episode's
// accuracy_top_1 and loss and reports their epoch mean).
func GATEEpisodeMetrics(eps []Episode, probs []float32) (map[string]float64, error) {
	if len(eps) == 0 {
		return nil, fmt.Errorf("no episodes")
	}
	var acc, loss float64
	off := 0
	for i, e := range eps {
		c := e.Classes()
		var right, nll float64
		nq := 0
		for j, isQuery := range e.Query {
			if !isQuery {
				continue
			}
			if off+c > len(probs) {
				return nil, fmt.Errorf("%d probabilities for the episodes' queries: episode %d runs past them", len(probs), i)
			}
			row, truth := probs[off:off+c], e.Label[j]
			off += c
			if argmax(row) == truth {
				right++
			}
			nll -= math.Log(float64(row[truth]) + 1e-7)
			nq++
		}
		if nq == 0 {
			return nil, fmt.Errorf("episode %d has no queries", i)
		}
		acc += 100 * right / float64(nq)
		loss += nll / float64(nq)
	}
	if off != len(probs) {
		return nil, fmt.Errorf("%d probabilities for the episodes' queries, which take %d", len(probs), off)
	}
	n := float64(len(eps))
	return map[string]float64{"acc1": acc / n, "loss": loss / n}, nil
}
