package probe

import (
	"fmt"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
	"math"
	"math/rand/v2"
	"slices"
)

// EpisodeConfig is Meta-Dataset's episode sampler. With Ways, Shots and
// Queries all set it draws fixed N-way K-shot episodes; otherwise
// variable-way, variable-shot ones with the published defaults
// (google-research/meta-dataset, data/sampling.py).
type EpisodeConfig struct {
	Ways, Shots, Queries int

	MinWays                       int     // 5
	MaxWaysUpperBound             int     // 50
	MaxNumQuery                   int     // 10
	MaxSupportSetSize             int     // 500
	MaxSupportSizeContribPerClass int     // 100
	MinLogWeight, MaxLogWeight    float64 // ln 0.5, ln 2
}

// DefaultEpisodes returns the variable-way, variable-shot defaults.
func DefaultEpisodes() EpisodeConfig {
	return EpisodeConfig{MinWays: 5, MaxWaysUpperBound: 50, MaxNumQuery: 10, MaxSupportSetSize: 500,
		MaxSupportSizeContribPerClass: 100, MinLogWeight: math.Log(0.5), MaxLogWeight: math.Log(2)}
}

// Fixed reports whether the configuration draws fixed-size episodes.
func (c EpisodeConfig) Fixed() bool { return c.Ways > 0 && c.Shots > 0 && c.Queries > 0 }

// Episode is one task: its classes (in the set's labels; the episode's
// label of an example is the position of its class here), and the
// indices of its support and query examples.
type Episode struct {
	Classes []int `json:"classes"`
	Support []int `json:"support"`
	Query   []int `json:"query"`
}

// SampleEpisode draws an episode from the examples with labels y.
func SampleEpisode(y []int, classes int, c EpisodeConfig, r *rand.Rand) (Episode, error) {
	if err := CheckLabels(y, classes); err != nil {
		return Episode{}, err
	}
	groups := byClass(y, classes)
	var avail []int
	for k, g := range groups {
		if len(g) >= 2 {
			avail = append(avail, k)
		}
	}
	var ways int
	if c.Fixed() {
		ways = c.Ways
		if len(avail) < ways {
			return Episode{}, fmt.Errorf("%d-way episodes need %d classes with 2 examples or more; there are %d", ways, ways, len(avail))
		}
	} else {
		hi := min(c.MaxWaysUpperBound, len(avail))
		if hi < c.MinWays {
			return Episode{}, fmt.Errorf("variable-way episodes need at least %d classes with 2 examples or more; there are %d", c.MinWays, len(avail))
		}
		ways = c.MinWays + r.IntN(hi-c.MinWays+1)
	}
	perm := r.Perm(len(avail))
	ep := Episode{Classes: make([]int, ways)}
	for i := range ways {
		ep.Classes[i] = avail[perm[i]]
	}
	sizes := make([]int, ways)
	for i, k := range ep.Classes {
		sizes[i] = len(groups[k])
	}
	var query int
	support := make([]int, ways)
	if c.Fixed() {
		query = c.Queries
		for i, n := range sizes {
			if n < c.Shots+c.Queries {
				return Episode{}, fmt.Errorf("class %d has %d examples; a %d-shot episode with %d queries needs %d", ep.Classes[i], n, c.Shots, c.Queries, c.Shots+c.Queries)
			}
			support[i] = c.Shots
		}
	} else {
		query = c.MaxNumQuery
		for _, n := range sizes {
			query = min(query, n/2)
		}
		beta := r.Float64()
		total := 0
		for _, n := range sizes {
			total += int(math.Floor(beta*float64(min(c.MaxSupportSizeContribPerClass, n-query)))) + 1
		}
		total = min(c.MaxSupportSetSize, total)
		weights := make([]float64, ways)
		var sum float64
		for i, n := range sizes {
			u := c.MinLogWeight + (c.MaxLogWeight-c.MinLogWeight)*r.Float64()
			weights[i] = float64(n) * math.Exp(u)
			sum += weights[i]
		}
		for i, n := range sizes {
			support[i] = min(int(math.Floor(weights[i]/sum*float64(total-ways)))+1, n-query)
		}
	}
	for i, k := range ep.Classes {
		g := groups[k]
		p := r.Perm(len(g))
		for j := range support[i] + query {
			if j < support[i] {
				ep.Support = append(ep.Support, g[p[j]])
			} else {
				ep.Query = append(ep.Query, g[p[j]])
			}
		}
	}
	return ep, nil
}

// Adapter classifies an episode's query examples from its support set;
// it returns scores, len(query) x ways.
type Adapter func(support Set, supportY []int, ways int, query Set) []float64

// Adapters are the episode adapters by the names blocks use.
var Adapters = map[string]Adapter{
	"proto_euclidean":   ProtoEuclidean,
	"proto_cosine":      ProtoCosine,
	"cosine_classifier": CosineClassifier,
	"linear":            LinearAdapter,
}

// AdapterNames lists the adapters, sorted.
func AdapterNames() []string {
	out := make([]string, 0, len(Adapters))
	for k := range Adapters {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func prototypes(s Set, y []int, ways int) []float64 {
	p := make([]float64, ways*s.D)
	n := make([]float64, ways)
	for i, c := range y {
		n[c]++
		for j := range s.D {
			p[c*s.D+j] += s.X[i*s.D+j]
		}
	}
	for c := range ways {
		for j := range s.D {
			p[c*s.D+j] /= max(n[c], 1)
		}
	}
	return p
}

// ProtoEuclidean is a prototypical network's classifier (Snell et al.,
// 2017): the logits are minus the squared Euclidean distances to the
// classes' mean support embeddings.
func ProtoEuclidean(support Set, y []int, ways int, query Set) []float64 {
	p := prototypes(support, y, ways)
	out := make([]float64, query.N*ways)
	for i := range query.N {
		for c := range ways {
			dist := floats.Distance(query.X[i*query.D:(i+1)*query.D], p[c*query.D:(c+1)*query.D], 2)
			out[i*ways+c] = -dist * dist
		}
	}
	return out
}

// ProtoCosine is the prototype classifier with cosine similarity.
func ProtoCosine(support Set, y []int, ways int, query Set) []float64 {
	return cosineScores(prototypes(support, y, ways), ways, query, 1)
}

func cosineScores(w []float64, ways int, s Set, scale float64) []float64 {
	out := make([]float64, s.N*ways)
	for i := range s.N {
		x := s.X[i*s.D : (i+1)*s.D]
		nx := max(floats.Norm(x, 2), 1e-12)
		for c := range ways {
			wc := w[c*s.D : (c+1)*s.D]
			out[i*ways+c] = scale * floats.Dot(x, wc) / (nx * max(floats.Norm(wc, 2), 1e-12))
		}
	}
	return out
}

// adam is Adam with PyTorch's defaults (betas 0.9, 0.999, eps 1e-8).
type adam struct {
	lr   float64
	m, v []float64
	t    int
}

func (a *adam) step(p, g []float64) {
	if a.m == nil {
		a.m, a.v = make([]float64, len(p)), make([]float64, len(p))
	}
	a.t++
	c1 := 1 - math.Pow(0.9, float64(a.t))
	c2 := 1 - math.Pow(0.999, float64(a.t))
	for i := range p {
		a.m[i] = 0.9*a.m[i] + 0.1*g[i]
		a.v[i] = 0.999*a.v[i] + 0.001*g[i]*g[i]
		p[i] -= a.lr * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + 1e-8)
	}
}

// CosineScale is the cosine classifier's fixed logit scale.
const CosineScale = 10

// cosineLossGrad returns the mean cross-entropy of the cosine classifier
// w (ways x D, logits CosineScale * cos(w_c, x)) on s and its gradient.
func cosineLossGrad(w []float64, ways int, s Set, y []int) (float64, []float64) {
	d := s.D
	g := make([]float64, len(w))
	scores := cosineScores(w, ways, s, CosineScale)
	var loss float64
	norms := make([]float64, ways)
	for c := range ways {
		norms[c] = max(floats.Norm(w[c*d:(c+1)*d], 2), 1e-12)
	}
	for i := range s.N {
		row := scores[i*ways : (i+1)*ways]
		softmaxInPlace(row)
		loss -= math.Log(max(row[y[i]], 1e-300)) / float64(s.N)
		row[y[i]]--
		x := s.X[i*d : (i+1)*d]
		nx := max(floats.Norm(x, 2), 1e-12)
		for c := range ways {
			wc := w[c*d : (c+1)*d]
			cos := floats.Dot(x, wc) / (nx * norms[c])
			k := row[c] * CosineScale / float64(s.N)
			for j := range d {
				// d cos / d w = x / (|x| |w|) - cos w / |w|^2
				g[c*d+j] += k * (x[j]/(nx*norms[c]) - cos*wc[j]/(norms[c]*norms[c]))
			}
		}
	}
	return loss, g
}

// CosineClassifier is Meta-Dataset's transfer baseline head: a cosine
// classifier (logit scale 10) started from the prototypes and fine-tuned
// on the whole support set as one batch, Adam, constant learning rate
// 0.01, 100 steps.
func CosineClassifier(support Set, y []int, ways int, query Set) []float64 {
	w := prototypes(support, y, ways)
	opt := &adam{lr: 0.01}
	for range 100 {
		_, g := cosineLossGrad(w, ways, support, y)
		opt.step(w, g)
	}
	return cosineScores(w, ways, query, CosineScale)
}

// LinearAdapter is a linear probe on the support set: softmax regression
// from zero weights on the support features standardised by their own
// statistics, Adam, learning rate 0.01, 100 full-batch steps.
func LinearAdapter(support Set, y []int, ways int, query Set) []float64 {
	d := support.D
	mean := make([]float64, d)
	std := make([]float64, d)
	for i := range support.N {
		for j := range d {
			mean[j] += support.X[i*d+j] / float64(support.N)
		}
	}
	for i := range support.N {
		for j := range d {
			v := support.X[i*d+j] - mean[j]
			std[j] += v * v / float64(support.N)
		}
	}
	for j := range std {
		std[j] = math.Sqrt(std[j]) + 1e-6
	}
	standard := func(s Set) Set {
		out := Set{X: make([]float64, len(s.X)), N: s.N, D: d, Y: s.Y}
		for i := range s.N {
			for j := range d {
				out.X[i*d+j] = (s.X[i*d+j] - mean[j]) / std[j]
			}
		}
		return out
	}
	sup, qry := standard(support), standard(query)
	h := &Linear{D: d, C: ways, W: make([]float64, ways*d), B: make([]float64, ways)} // logits only: no batch norm
	ow, ob := &adam{lr: 0.01}, &adam{lr: 0.01}
	p := make([]float64, ways)
	for range 100 {
		gw := make([]float64, len(h.W))
		gb := make([]float64, ways)
		for i := range sup.N {
			x := sup.X[i*d : (i+1)*d]
			h.logits(x, p)
			softmaxInPlace(p)
			p[y[i]]--
			for c := range ways {
				k := p[c] / float64(sup.N)
				gb[c] += k
				for j := range d {
					gw[c*d+j] += k * x[j]
				}
			}
		}
		ow.step(h.W, gw)
		ob.step(h.B, gb)
	}
	out := make([]float64, qry.N*ways)
	for i := range qry.N {
		h.logits(qry.X[i*d:(i+1)*d], out[i*ways:(i+1)*ways])
	}
	return out
}

// EpisodeResult is one adapter's accuracy over the episodes of a source.
type EpisodeResult struct {
	Adapter  string    `json:"adapter"`
	Mean     float64   `json:"mean"`
	CI95     float64   `json:"ci95"`
	Episodes int       `json:"episodes"`
	Accuracy []float64 `json:"accuracy"`
}

// MeanStd returns the mean and the sample standard deviation (0 for
// fewer than two values).
func MeanStd(v []float64) (mean, sd float64) {
	if len(v) == 0 {
		return 0, 0
	}
	mean = stat.Mean(v, nil)
	if len(v) < 2 {
		return mean, 0
	}
	return mean, stat.StdDev(v, nil)
}

// MeanCI returns the mean and the half-width of its 95% normal
// confidence interval, 1.96 sd / sqrt(n) (sample sd).
func MeanCI(v []float64) (mean, ci float64) {
	mean, sd := MeanStd(v)
	return mean, 1.96 * sd / math.Sqrt(float64(max(len(v), 1)))
}

// RunEpisode adapts on the episode's support set and returns the query
// accuracy in percent.
func RunEpisode(s Set, ep Episode, a Adapter) float64 {
	local := make(map[int]int, len(ep.Classes))
	for i, c := range ep.Classes {
		local[c] = i
	}
	relabel := func(idx []int) (Set, []int) {
		sub := s.Subset(idx)
		y := make([]int, len(idx))
		for k, i := range idx {
			y[k] = local[s.Y[i]]
		}
		return sub, y
	}
	sup, sy := relabel(ep.Support)
	qry, qy := relabel(ep.Query)
	return Accuracy(a(sup, sy, len(ep.Classes), qry), len(ep.Classes), qy)
}
