package train

// Few-shot episodes and prototypical networks.

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// FewShot: prototypical networks on episodes (Meta-Dataset style). An
// episode samples Ways classes of the split, Shots support and Queries
// query examples of each; the encoder embeds them, each class's prototype
// is the mean of its support embeddings, and the logits of a query are the
// negative squared distances to the prototypes. Training episodes come from
// the training split's classes; validation and test episodes from their
// own splits' classes (held out when the dataset splits by class). The
// head has no parameters.
const FewShot Task = "fewshot"

// episodeShape returns the ways, shots and queries of the head (defaults 5,
// 5, 5).
func (h HeadSpec) episodeShape() (ways, shots, queries int) {
	ways, shots, queries = h.Ways, h.Shots, h.Queries
	if ways <= 0 {
		ways = 5
	}
	if shots <= 0 {
		shots = 5
	}
	if queries <= 0 {
		queries = 5
	}
	return ways, shots, queries
}

// prototypeLogits returns query logits [ways*queries, ways] for features
// feat [ways*(shots+queries), F] laid out as all support examples (class
// by class) then all queries (class by class).
func (b *builder) prototypeLogits(feat *G.Node, f, ways, shots, queries int) *G.Node {
	support := b.must(G.Slice(feat, G.S(0, ways*shots)))
	query := b.must(G.Slice(feat, G.S(ways*shots, ways*(shots+queries))))
	protos := b.must(G.HadamardProd(b.sum(b.must(G.Reshape(support, tensor.Shape{ways, shots, f})), 1), b.scalar(float32(1)/float32(shots))))
	// -|q - p|^2 = 2 q.p - |q|^2 - |p|^2
	qp := b.must(G.HadamardProd(b.must(G.Mul(query, b.must(G.Transpose(protos)))), b.scalar(2)))
	qq := b.must(G.Reshape(b.must(G.Sum(b.must(G.Square(query)), 1)), tensor.Shape{ways * queries, 1}))
	pp := b.must(G.Sum(b.must(G.Square(protos)), 1))
	z := b.must(G.BroadcastSub(qp, qq, nil, []byte{1}))
	return b.must(G.BroadcastSub(z, pp, nil, []byte{0}))
}

// episodes samples n episodes from d's classes: for each, the example
// indices (support class by class, then queries class by class). Classes
// with fewer than shots+queries examples are not drawn.
func (d *Data) episodes(rng *rand.Rand, n, ways, shots, queries int) ([][]int, error) {
	byClass := map[int64][]int{}
	var classes []int64
	for i, y := range d.Y {
		if len(byClass[y]) == 0 {
			classes = append(classes, y)
		}
		byClass[y] = append(byClass[y], i)
	}
	var usable []int64
	for _, c := range classes {
		if len(byClass[c]) >= shots+queries {
			usable = append(usable, c)
		}
	}
	if len(usable) < ways {
		return nil, fmt.Errorf("few-shot episodes need %d classes with at least %d examples each; the split has %d", ways, shots+queries, len(usable))
	}
	out := make([][]int, n)
	for e := range out {
		picked := rng.Perm(len(usable))[:ways]
		sup := make([]int, 0, ways*(shots+queries))
		var qry []int
		for _, ci := range picked {
			ex := byClass[usable[ci]]
			perm := rng.Perm(len(ex))
			for j := 0; j < shots; j++ {
				sup = append(sup, ex[perm[j]])
			}
			for j := shots; j < shots+queries; j++ {
				qry = append(qry, ex[perm[j]])
			}
		}
		out[e] = append(sup, qry...)
	}
	return out, nil
}

// fillEpisode writes an episode's examples into xb and the queries'
// one-hot episode classes into yb.
func fillEpisode(xb, yb *tensor.Dense, d *Data, ep []int, ways, queries int) error {
	if err := d.readInputs(xb.Data().([]float32), ep); err != nil {
		return err
	}
	ys := yb.Data().([]float32)
	clear(ys)
	for c := 0; c < ways; c++ {
		for j := 0; j < queries; j++ {
			ys[(c*queries+j)*ways+c] = 1
		}
	}
	return nil
}

// evalEpisodes is the number of evaluation episodes per shot setting.
const evalEpisodes = 60

// evaluateEpisodes runs the same seeded episodes for every parameter set
// (the top-k ensemble averages their query probabilities): 1-shot and the
// head's shots, with its ways and queries. Acc@1 and the loss average both
// settings; "acc1_<k>shot" reports each.
func evaluateEpisodes(enc EncoderSpec, params []*param, d *Data, sets []map[string][]float32) (map[string]float64, error) {
	ways, shots, queries := enc.Head.episodeShape()
	settings := []int{1}
	if shots != 1 {
		settings = append(settings, shots)
	}
	out := map[string]float64{}
	var accSum, lossSum float64
	for _, k := range settings {
		eps, err := d.episodes(rand.New(rand.NewPCG(uint64(k), 0xe7a1)), evalEpisodes, ways, k, queries)
		if err != nil {
			return nil, err
		}
		spec := enc
		spec.Head.Ways, spec.Head.Shots, spec.Head.Queries = ways, k, queries
		b := ways * (k + queries)
		probs := make([][]float32, len(eps)) // per episode: queries x ways
		for _, vals := range sets {
			m, err := build(spec, FewShot, params, d.Shape, ways, b, vals, false)
			if err != nil {
				return nil, err
			}
			vm := G.NewTapeMachine(m.g)
			xb := tensor.New(tensor.WithShape(append([]int{b}, d.Shape...)...), tensor.Of(tensor.Float32))
			yb := newTargets(m)
			for e, ep := range eps {
				if err := fillEpisode(xb, yb, d, ep, ways, queries); err != nil {
					vm.Close()
					return nil, err
				}
				if err := m.setInputs(xb, nil, yb); err != nil {
					vm.Close()
					return nil, err
				}
				if err := vm.RunAll(); err != nil {
					vm.Close()
					return nil, err
				}
				p := m.probs.Value().Data().([]float32)
				if probs[e] == nil {
					probs[e] = make([]float32, len(p))
				}
				for i, v := range p {
					probs[e][i] += v / float32(len(sets))
				}
				vm.Reset()
			}
			vm.Close()
		}
		acc, loss := episodeScores(probs, ways, queries)
		out[fmt.Sprintf("acc1_%dshot", k)] = acc
		accSum += acc
		lossSum += loss
	}
	out["acc1"], out["loss"] = accSum/float64(len(settings)), lossSum/float64(len(settings))
	return out, nil
}

// episodeScores is the top-1 accuracy (%) and mean cross-entropy of the
// queries of episodes' probabilities (per episode: ways*queries rows of
// ways, the queries grouped by class).
func episodeScores(probs [][]float32, ways, queries int) (acc1, loss float64) {
	var acc float64
	n := 0
	for _, p := range probs {
		for q := 0; q < ways*queries; q++ {
			row, truth := p[q*ways:(q+1)*ways], q/queries
			if argmax(row) == truth {
				acc++
			}
			loss -= math.Log(float64(row[truth]) + 1e-7)
			n++
		}
	}
	return 100 * acc / float64(n), loss / float64(n)
}
