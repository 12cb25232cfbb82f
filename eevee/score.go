package eevee

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Score trains the meta-model of every split on the selected benchmarks'
// columns (combo holds indices into p.Benchmarks) and returns the mean
// validation error over splits (lower is better).
func (p *Problem) Score(combo []int) float64 {
	return p.newScorer().score(combo)
}

// scorer owns reusable buffers; one per worker goroutine.
type scorer struct {
	p          *Problem
	nets       map[int]*mlp // by input width
	x, y       []float32
	xv, yv     []float32
	xi, yi     []float32
	w32        []float32
	sortedBuf  []int
	excludeBuf map[int]bool
}

func (p *Problem) newScorer() *scorer {
	return &scorer{p: p, nets: map[int]*mlp{}, excludeBuf: map[int]bool{}}
}

func (s *scorer) score(combo []int) float64 {
	p := s.p
	s.sortedBuf = append(s.sortedBuf[:0], combo...)
	sort.Ints(s.sortedBuf)
	var inCols []int
	for _, b := range s.sortedBuf {
		inCols = append(inCols, p.benchCols[b]...)
	}
	w := p.weights
	if p.Opts.Targets == "exclude_selected" {
		clear(s.excludeBuf)
		for _, b := range s.sortedBuf {
			s.excludeBuf[b] = true
		}
		w = p.targetWeights(s.excludeBuf)
	}
	s.w32 = s.w32[:0]
	for _, v := range w {
		s.w32 = append(s.w32, float32(v))
	}
	C := len(p.colBench)
	n := len(p.z)
	net := s.nets[len(inCols)]
	if net == nil {
		net = newMLP(len(inCols), p.Opts.Hidden, C, n, p.Opts.Activation, p.Opts.LayerNorm)
		s.nets[len(inCols)] = net
	}
	inits := p.inits.get(len(inCols), len(p.splits), len(net.params), func(si int) []float32 {
		net.reset(s.initRand(si, len(inCols)))
		return append([]float32(nil), net.params...)
	})
	var total float64
	for si, sp := range p.splits {
		train := sp.train
		if p.Opts.Epoch == "best_val" {
			train = sp.outer
		}
		s.x, s.y = s.gather(s.x, s.y, train, inCols)
		s.xv, s.yv = s.gather(s.xv, s.yv, sp.val, inCols)
		if p.Opts.Epoch == "best_val" {
			s.xi, s.yi = s.gather(s.xi, s.yi, sp.inner, inCols)
		}
		if inits != nil {
			net.start(inits[si])
		} else {
			net.reset(s.initRand(si, len(inCols)))
		}
		best, bestVal := math.Inf(1), 0.0
		for e := 1; e <= p.Opts.Epochs; e++ {
			net.forward(s.x, len(train))
			net.loss(s.y, len(train), s.w32, true)
			net.backward(s.x, len(train))
			net.adamw(e, p.Opts.LR, p.Opts.WeightDecay)
			if p.Opts.Epoch == "best_val" {
				net.forward(s.xi, len(sp.inner))
				inner := net.loss(s.yi, len(sp.inner), s.w32, false)
				if inner < best {
					best = inner
					net.forward(s.xv, len(sp.val))
					bestVal = net.loss(s.yv, len(sp.val), s.w32, false)
				}
			}
		}
		if p.Opts.Epoch == "best_val" {
			total += bestVal
			continue
		}
		net.forward(s.xv, len(sp.val))
		total += net.loss(s.yv, len(sp.val), s.w32, false)
	}
	loss := total / float64(len(p.splits))
	if math.IsNaN(loss) {
		// A meta-model that diverged predicts nothing: the worst score,
		// so the search goes on with the other candidates.
		return math.Inf(1)
	}
	return loss
}

// initRand is the random source of split si's initial parameters for a
// meta-model with width inputs.
func (s *scorer) initRand(si, width int) *rand.Rand {
	return rand.New(rand.NewPCG(s.p.Opts.Seed, uint64(si)<<32|uint64(width)))
}

// gather copies the rows of the z-scored matrix for models into x (the
// input columns) and y (every column).
func (s *scorer) gather(x, y []float32, models, inCols []int) ([]float32, []float32) {
	x, y = x[:0], y[:0]
	for _, m := range models {
		row := s.p.z[m]
		for _, c := range inCols {
			x = append(x, float32(row[c]))
		}
		for _, v := range row {
			y = append(y, float32(v))
		}
	}
	return x, y
}
