package probe

import (
	"math"
	"math/rand/v2"
)

// Set is N examples' features (row-major, N x D) with their classes.
type Set struct {
	X    []float64
	N, D int
	Y    []int
}

// Subset gathers the examples at idx.
func (s Set) Subset(idx []int) Set {
	out := Set{X: make([]float64, 0, len(idx)*s.D), N: len(idx), D: s.D, Y: make([]int, len(idx))}
	for k, i := range idx {
		out.X = append(out.X, s.X[i*s.D:(i+1)*s.D]...)
		out.Y[k] = s.Y[i]
	}
	return out
}

// Concat joins two sets of the same width.
func Concat(a, b Set) Set {
	return Set{X: append(append([]float64(nil), a.X...), b.X...), N: a.N + b.N, D: a.D, Y: append(append([]int(nil), a.Y...), b.Y...)}
}

// LinearConfig is one training run of the linear probe head.
type LinearConfig struct {
	LR, WeightDecay float64
	Epochs, Batch   int
	// Seed fixes the initialisation and the order of the examples.
	Seed uint64
}

// Linear is ELEVATER's probe head: BatchNorm1d without affine parameters
// on the features (batch statistics while training, running statistics,
// momentum 0.1, eps 1e-5, for evaluation), then a linear layer to the
// classes.
type Linear struct {
	D, C    int
	W       []float64 // C x D
	B       []float64
	RunMean []float64
	RunVar  []float64
}

// NewLinear initialises the head as PyTorch's nn.Linear does: weights and
// biases uniform in +-1/sqrt(D).
func NewLinear(d, c int, r *rand.Rand) *Linear {
	h := &Linear{D: d, C: c, W: make([]float64, c*d), B: make([]float64, c), RunMean: make([]float64, d), RunVar: make([]float64, d)}
	bound := 1 / math.Sqrt(float64(d))
	for i := range h.W {
		h.W[i] = (2*r.Float64() - 1) * bound
	}
	for i := range h.B {
		h.B[i] = (2*r.Float64() - 1) * bound
	}
	for i := range h.RunVar {
		h.RunVar[i] = 1
	}
	return h
}

// Params is the number of trainable parameters.
func (h *Linear) Params() int { return len(h.W) + len(h.B) }

// Scores returns the logits of s's examples in evaluation mode, N x C.
func (h *Linear) Scores(s Set) []float64 {
	out := make([]float64, s.N*h.C)
	xn := make([]float64, h.D)
	for i := range s.N {
		row := s.X[i*s.D : (i+1)*s.D]
		for j, v := range row {
			xn[j] = (v - h.RunMean[j]) / math.Sqrt(h.RunVar[j]+1e-5)
		}
		h.logits(xn, out[i*h.C:(i+1)*h.C])
	}
	return out
}

func (h *Linear) logits(xn, out []float64) {
	for c := range h.C {
		w := h.W[c*h.D : (c+1)*h.D]
		v := h.B[c]
		for j, x := range xn {
			v += w[j] * x
		}
		out[c] = v
	}
}

// sgd is PyTorch's SGD with momentum 0.9, Nesterov, and weight decay
// added to the gradient.
type sgd struct {
	lr, wd float64
	bufW   []float64
	bufB   []float64
	first  bool
}

func (o *sgd) step(p, g, buf []float64) {
	for i := range p {
		d := g[i] + o.wd*p[i]
		if o.first {
			buf[i] = d
		} else {
			buf[i] = 0.9*buf[i] + d
		}
		p[i] -= o.lr * (d + 0.9*buf[i])
	}
}

// Train fits the head on train for cfg.Epochs epochs of mini-batches in a
// seeded order (a final batch of one example is dropped: batch
// statistics need two), calling after (if not nil) at the end of each
// epoch.
func (h *Linear) Train(train Set, cfg LinearConfig, r *rand.Rand, after func(epoch int)) {
	o := &sgd{lr: cfg.LR, wd: cfg.WeightDecay, bufW: make([]float64, len(h.W)), bufB: make([]float64, len(h.B)), first: true}
	d, c := h.D, h.C
	batch := max(cfg.Batch, 2)
	xn := make([]float64, batch*d)
	mean := make([]float64, d)
	variance := make([]float64, d)
	gw := make([]float64, len(h.W))
	gb := make([]float64, len(h.B))
	p := make([]float64, c)
	for epoch := range cfg.Epochs {
		order := r.Perm(train.N)
		for start := 0; start < train.N; start += batch {
			idx := order[start:min(start+batch, train.N)]
			b := len(idx)
			if b < 2 {
				continue
			}
			clear(mean)
			clear(variance)
			for _, i := range idx {
				for j, v := range train.X[i*d : (i+1)*d] {
					mean[j] += v / float64(b)
				}
			}
			for _, i := range idx {
				for j, v := range train.X[i*d : (i+1)*d] {
					variance[j] += (v - mean[j]) * (v - mean[j]) / float64(b)
				}
			}
			for j := range d {
				h.RunMean[j] = 0.9*h.RunMean[j] + 0.1*mean[j]
				h.RunVar[j] = 0.9*h.RunVar[j] + 0.1*variance[j]*float64(b)/float64(b-1)
			}
			clear(gw)
			clear(gb)
			for k, i := range idx {
				row := xn[k*d : (k+1)*d]
				for j, v := range train.X[i*d : (i+1)*d] {
					row[j] = (v - mean[j]) / math.Sqrt(variance[j]+1e-5)
				}
				h.logits(row, p)
				softmaxInPlace(p)
				p[train.Y[i]]--
				for cc := range c {
					g := p[cc] / float64(b)
					gb[cc] += g
					w := gw[cc*d : (cc+1)*d]
					for j, v := range row {
						w[j] += g * v
					}
				}
			}
			o.step(h.W, gw, o.bufW)
			o.step(h.B, gb, o.bufB)
			o.first = false
		}
		if after != nil {
			after(epoch)
		}
	}
}

func softmaxInPlace(row []float64) {
	top := math.Inf(-1)
	for _, v := range row {
		top = max(top, v)
	}
	var sum float64
	for i, v := range row {
		row[i] = math.Exp(v - top)
		sum += row[i]
	}
	for i := range row {
		row[i] /= sum
	}
}

// finite reports whether the head's parameters are all finite (a large
// learning rate or weight decay can make them diverge).
func (h *Linear) finite() bool {
	for _, v := range h.W {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
