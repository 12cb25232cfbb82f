package pmf

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// Options configure the sampler.
type Options struct {
	// Latent is the latent dimension D (the paper: "around 10 is
	// sufficient").
	Latent int
	// Warmup sweeps are discarded; Draws sweeps are kept (the paper's
	// 500 tuning and 100 posterior draws).
	Warmup, Draws int
	// Tensor selects PTF: one latent vector per benchmark and a linear map
	// (w_s, b_s) per metric, w and b with N(0, 1) priors, plus a small
	// offset per column (see sweepOffsets).
	Tensor bool
	// PriorStd is σ_U = σ_V (= σ_Y for profile weights); the paper fixes 1.
	PriorStd float64
	// NoiseShape and NoiseScale are the inverse-gamma prior on the noise
	// variance (the paper does not say; the default, shape 2 and scale
	// 0.1, has mean 0.1 in normalised units and the weight of four
	// observations).
	NoiseShape, NoiseScale float64
	// ARD gives each latent dimension its own prior precision for U and
	// for V, with a Gamma(1, 1) hyperprior, sampled with the rest
	// (Bayesian PMF; the conjugate stand-in for the paper's LKJ and
	// Exponential scale priors): dimensions the data do not need shrink
	// away, so the noise level is not absorbed by a too-large D.
	ARD bool
	// KeepDraws stores the kept draws in the Completion (for acquisition
	// rules).
	KeepDraws bool
	// CalibrationFolds is the number of extra fits, each with a tenth of
	// the observed cells held out, whose held-out residuals calibrate the
	// predictive std and the intervals (Completion.Calibration); 0 leaves
	// them uncalibrated (the posterior's own, over-confident on GATE's
	// matrix: a nominal 90% interval covered 80% of hidden cells).
	CalibrationFolds int
}

// DefaultOptions are the paper's schedule with D = 10.
func DefaultOptions() Options {
	return Options{Latent: 10, Warmup: 500, Draws: 100, PriorStd: 1, NoiseShape: 2, NoiseScale: 0.1, CalibrationFolds: 3}
}

// Validate reports an option outside its domain.
func (o Options) Validate() error {
	switch {
	case o.Latent < 1 || o.Latent > 200:
		return fmt.Errorf("latent dimension must be between 1 and 200, not %d", o.Latent)
	case o.Warmup < 0 || o.Draws < 2:
		return fmt.Errorf("warmup must be at least 0 and draws at least 2")
	case o.PriorStd <= 0 || o.NoiseShape <= 0 || o.NoiseScale <= 0:
		return fmt.Errorf("prior standard deviation and noise prior must be positive")
	case o.CalibrationFolds < 0 || o.CalibrationFolds > 9:
		return fmt.Errorf("calibration folds must be between 0 and 9, not %d", o.CalibrationFolds)
	}
	return nil
}

// Sampler is PMF or PTF fitted by Gibbs sampling.
type Sampler struct{ Opts Options }

// Name returns "pmf", "ptf", "bpmf" or "bptf" (b: with ARD).
func (s *Sampler) Name() string {
	name := "pmf"
	if s.Opts.Tensor {
		name = "ptf"
	}
	if s.Opts.ARD {
		name = "b" + name
	}
	return name
}

type cell struct {
	row, col, bench, metric int
	z                       float64
}

// chain is the state of one Gibbs chain.
type chain struct {
	o                Options
	d                *Data
	rows, cols, dim  int
	cells            []cell
	byRow, byBench   [][]int
	byMetric         [][]int // PTF: cells of each metric
	colBench, colMet []int
	up, v, y         [][]float64 // up = U' = U + profiles·Y; y is K x D
	w, b             []float64
	lamU, lamV       []float64 // per-dimension prior precisions (ARD)
	mean             []float64 // scratch: a row's prior mean
	off              []float64 // PTF: per-column offsets
	count            []int     // observed cells per column
	gy               *gaussian // profile weights' conditional (K x K)
	sigma2           float64
	g                *gaussian
	g2               *gaussian
	x                []float64
	rng              *rand.Rand
}

// Complete samples the posterior and returns its mean and spread: the
// posterior std of each cell's mean (LatentStd) and the predictive std
// (Std: that and the noise, calibrated on held-out cells when
// Opts.CalibrationFolds > 0).
func (s *Sampler) Complete(ctx context.Context, d *Data, seed uint64) (*Completion, error) {
	if err := s.Opts.Validate(); err != nil {
		return nil, err
	}
	if err := d.Check(); err != nil {
		return nil, err
	}
	out, err := s.sample(ctx, d, seed)
	if err != nil || s.Opts.CalibrationFolds == 0 {
		return out, err
	}
	cells, err := s.calibrate(ctx, d, seed)
	if err != nil {
		return nil, fmt.Errorf("calibrating the intervals: %w", err)
	}
	if cells != nil {
		out.Calibration, out.rowCalibration = sortedScores(cells), rowCalibrations(d, cells)
		for i := range out.Std {
			scale := out.calibrationScale(i)
			for j := range out.Std[i] {
				out.Std[i][j] *= scale
			}
		}
	}
	return out, nil
}

// sample runs one chain on d.
func (s *Sampler) sample(ctx context.Context, d *Data, seed uint64) (*Completion, error) {
	z, sc := Normalise(d)
	c := newChain(s.Opts, d, z, seed)
	if len(c.cells) == 0 {
		return nil, fmt.Errorf("the matrix has no observed entry")
	}
	n := c.rows * c.cols
	mean := make([]float64, n)
	m2 := make([]float64, n)
	pred := make([]float64, n)
	out := &Completion{Method: s.Name(), Scale: sc}
	var noise, noiseVar float64
	for sweep := 0; sweep < s.Opts.Warmup+s.Opts.Draws; sweep++ {
		if sweep%25 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if err := c.sweep(); err != nil {
			return nil, err
		}
		k := sweep - s.Opts.Warmup
		if k < 0 {
			continue
		}
		c.predict(pred)
		for i, p := range pred { // Welford
			delta := p - mean[i]
			mean[i] += delta / float64(k+1)
			m2[i] += delta * (p - mean[i])
		}
		noise += math.Sqrt(c.sigma2)
		noiseVar += c.sigma2
		if s.Opts.KeepDraws {
			out.Draws = append(out.Draws, append([]float64(nil), pred...))
		}
	}
	out.Noise = noise / float64(s.Opts.Draws)
	noiseVar /= float64(s.Opts.Draws)
	zMean := make([][]float64, c.rows)
	zLatent := make([][]float64, c.rows)
	zStd := make([][]float64, c.rows)
	for i := range zMean {
		zMean[i] = mean[i*c.cols : (i+1)*c.cols]
		zLatent[i] = make([]float64, c.cols)
		zStd[i] = make([]float64, c.cols)
		for j := range zStd[i] {
			v := m2[i*c.cols+j] / float64(s.Opts.Draws-1)
			zLatent[i][j], zStd[i][j] = math.Sqrt(v), math.Sqrt(v+noiseVar)
		}
	}
	out.denormalise(zMean, zStd)
	out.LatentStd = out.scaled(zLatent)
	return out, nil
}

func newChain(o Options, d *Data, z [][]float64, seed uint64) *chain {
	c := &chain{o: o, d: d, rows: d.Rows(), cols: d.Cols(), dim: o.Latent, sigma2: o.NoiseScale / (o.NoiseShape + 1),
		rng: rand.New(rand.NewPCG(seed, 0x706d66)), g: newGaussian(o.Latent), g2: newGaussian(2), x: make([]float64, o.Latent)}
	c.colBench = make([]int, c.cols)
	c.colMet = make([]int, c.cols)
	nb, ns := c.cols, 1
	if o.Tensor {
		nb = 0
		for j := 0; j < c.cols; j++ {
			c.colBench[j], c.colMet[j] = j, d.metricOf(j)
			if d.Benchmark != nil {
				c.colBench[j] = d.Benchmark[j]
			}
			nb = max(nb, c.colBench[j]+1)
			ns = max(ns, c.colMet[j]+1)
		}
	} else {
		for j := range c.colBench {
			c.colBench[j] = j
		}
	}
	c.byRow = make([][]int, c.rows)
	c.byBench = make([][]int, nb)
	for i := 0; i < c.rows; i++ {
		for j := 0; j < c.cols; j++ {
			if math.IsNaN(z[i][j]) {
				continue
			}
			k := len(c.cells)
			c.cells = append(c.cells, cell{row: i, col: j, bench: c.colBench[j], metric: c.colMet[j], z: z[i][j]})
			c.byRow[i] = append(c.byRow[i], k)
			c.byBench[c.colBench[j]] = append(c.byBench[c.colBench[j]], k)
		}
	}
	init := func(n int) [][]float64 {
		m := make([][]float64, n)
		for i := range m {
			m[i] = make([]float64, c.dim)
			for k := range m[i] {
				m[i][k] = 0.1 * c.rng.NormFloat64()
			}
		}
		return m
	}
	c.up, c.v = init(c.rows), init(nb)
	c.mean = make([]float64, c.dim)
	if d.Profiles != nil {
		c.y = make([][]float64, len(d.Profiles[0]))
		for k := range c.y {
			c.y[k] = make([]float64, c.dim)
		}
		c.gy = newGaussian(len(c.y))
	}
	c.lamU, c.lamV = make([]float64, c.dim), make([]float64, c.dim)
	for q := range c.lamU {
		c.lamU[q], c.lamV[q] = 1/(o.PriorStd*o.PriorStd), 1/(o.PriorStd*o.PriorStd)
	}
	c.off, c.count = make([]float64, c.cols), make([]int, c.cols)
	for _, e := range c.cells {
		c.count[e.col]++
	}
	c.w, c.b = make([]float64, ns), make([]float64, ns)
	c.byMetric = make([][]int, ns)
	for k, e := range c.cells {
		c.byMetric[e.metric] = append(c.byMetric[e.metric], k)
	}
	for s := range c.w {
		c.w[s] = 1
	}
	return c
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// sweep draws every block of the state once from its full conditional.
func (c *chain) sweep() error {
	prior := 1 / (c.o.PriorStd * c.o.PriorStd)
	prec := 1 / c.sigma2
	// Model vectors U'_m ~ N(H_m Y, Λ_U⁻¹) given the data: sampled in this
	// centred form (rather than U_m = U'_m - H_m Y) the chain mixes; the
	// two forms are the same model.
	for i := 0; i < c.rows; i++ {
		c.g.resetDiag(c.lamU)
		if c.y != nil {
			c.priorMean(i)
			for q, l := range c.lamU {
				c.g.hData[q] += l * c.mean[q]
			}
		}
		for _, k := range c.byRow[i] {
			e := c.cells[k]
			vn, ws := c.v[e.bench], c.w[e.metric]
			for q := range c.x {
				c.x[q] = ws * vn[q]
			}
			c.g.add(c.x, e.z-c.b[e.metric]-c.off[e.col], prec)
		}
		if err := c.g.draw(c.rng, c.up[i]); err != nil {
			return err
		}
	}
	// Benchmark vectors.
	for n := range c.v {
		c.g.resetDiag(c.lamV)
		for _, k := range c.byBench[n] {
			e := c.cells[k]
			ws := c.w[e.metric]
			for q := range c.x {
				c.x[q] = ws * c.up[e.row][q]
			}
			c.g.add(c.x, e.z-c.b[e.metric]-c.off[e.col], prec)
		}
		if err := c.g.draw(c.rng, c.v[n]); err != nil {
			return err
		}
	}
	if err := c.sweepProfiles(prior); err != nil {
		return err
	}
	if c.o.Tensor {
		if err := c.sweepMaps(prec); err != nil {
			return err
		}
	}
	if c.o.Tensor {
		c.sweepOffsets(prec)
	}
	if c.o.ARD {
		c.sampleARD(c.lamU, c.rowResiduals())
		c.sampleARD(c.lamV, c.v)
	}
	// Noise variance.
	var sse float64
	for _, e := range c.cells {
		r := e.z - c.w[e.metric]*dot(c.up[e.row], c.v[e.bench]) - c.b[e.metric] - c.off[e.col]
		sse += r * r
	}
	c.sigma2 = inverseGamma(c.rng, c.o.NoiseShape+float64(len(c.cells))/2, c.o.NoiseScale+sse/2)
	return nil
}

// sampleARD draws each dimension's prior precision from its Gamma
// conditional given the vectors that use it.
func (c *chain) sampleARD(lam []float64, vecs [][]float64) {
	const shape, rate = 1, 1
	for q := range lam {
		var ss float64
		for _, x := range vecs {
			ss += x[q] * x[q]
		}
		lam[q] = 1 / inverseGamma(c.rng, shape+float64(len(vecs))/2, rate+ss/2)
	}
}

// priorMean writes H_m Y, row m's prior mean, into c.mean.
func (c *chain) priorMean(m int) {
	clear(c.mean)
	for k, yk := range c.y {
		if h := c.d.Profiles[m][k]; h != 0 {
			for q := range c.mean {
				c.mean[q] += h * yk[q]
			}
		}
	}
}

// rowResiduals returns U'_m - H_m Y, the rows' deviations from their
// profiles' prediction (U'_m itself without profiles).
func (c *chain) rowResiduals() [][]float64 {
	if c.y == nil {
		return c.up
	}
	out := make([][]float64, c.rows)
	for i := range out {
		c.priorMean(i)
		out[i] = make([]float64, c.dim)
		for q := range out[i] {
			out[i][q] = c.up[i][q] - c.mean[q]
		}
	}
	return out
}

// sweepProfiles draws the profile weights Y (K x D) given U': for each
// latent dimension q, U'_{.q} = H Y_{.q} + N(0, 1/λ_q) is a Bayesian
// linear regression on the profiles with an N(0, σ_Y²) prior.
func (c *chain) sweepProfiles(prior float64) error {
	if c.y == nil {
		return nil
	}
	col := make([]float64, len(c.y))
	for q := 0; q < c.dim; q++ {
		c.gy.reset(prior)
		for i := 0; i < c.rows; i++ {
			c.gy.add(c.d.Profiles[i], c.up[i][q], c.lamU[q])
		}
		if err := c.gy.draw(c.rng, col); err != nil {
			return err
		}
		for k := range c.y {
			c.y[k][q] = col[k]
		}
	}
	return nil
}

// sweepMaps draws each metric's (w_s, b_s): z = w·(U'_m·V_n) + b, N(0, 1)
// priors.
func (c *chain) sweepMaps(prec float64) error {
	wb := make([]float64, 2)
	for s := range c.w {
		c.g2.reset(1)
		for _, k := range c.byMetric[s] {
			e := c.cells[k]
			c.g2.add([]float64{dot(c.up[e.row], c.v[e.bench]), 1}, e.z-c.off[e.col], prec)
		}
		if err := c.g2.draw(c.rng, wb); err != nil {
			return err
		}
		c.w[s], c.b[s] = wb[0], wb[1]
	}
	return nil
}

// sweepOffsets draws PTF's per-column offsets. Centring a column on its
// n observed entries leaves an offset of about N(0, 1/n) in normalised
// units that differs between the columns of one benchmark; PMF absorbs it
// in the column's own latent vector, PTF (which shares the vector across
// a benchmark's columns) needs it explicitly. Prior: N(0, 1/n).
func (c *chain) sweepOffsets(prec float64) {
	sum := make([]float64, c.cols)
	for _, e := range c.cells {
		sum[e.col] += e.z - c.w[e.metric]*dot(c.up[e.row], c.v[e.bench]) - c.b[e.metric]
	}
	for j := range c.off {
		n := float64(c.count[j])
		if n == 0 {
			c.off[j] = 0
			continue
		}
		p := n + n*prec
		c.off[j] = sum[j]*prec/p + c.rng.NormFloat64()/math.Sqrt(p)
	}
}

// predict writes the current state's normalised prediction of every cell.
func (c *chain) predict(dst []float64) {
	for i := 0; i < c.rows; i++ {
		for j := 0; j < c.cols; j++ {
			s := c.colMet[j]
			dst[i*c.cols+j] = c.w[s]*dot(c.up[i], c.v[c.colBench[j]]) + c.b[s] + c.off[j]
		}
	}
}
