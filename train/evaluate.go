package train

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// evaluate averages the predictions of each parameter set (the top-k
// ensemble: softmax probabilities, sigmoid outputs or regression values in
// target units) over d and returns the task's metrics and the predictions
// (none for few-shot and segmentation, which score as they go).
func evaluate(enc EncoderSpec, params []*param, outputs int, d *Data, sets []map[string][]float32, std *standardizer) (map[string]float64, [][]float32, error) {
	switch d.task() {
	case FewShot:
		m, err := evaluateEpisodes(enc, params, d, sets)
		return m, nil, err
	case Segmentation:
		m, err := evaluateSegmentation(enc, params, outputs, d, sets)
		return m, nil, err
	}
	pred, err := ensemblePredictions(enc, params, outputs, d, sets, std)
	if err != nil {
		return nil, nil, err
	}
	m, err := metrics(d.task(), d, pred, outputs)
	if err != nil {
		return nil, nil, err
	}
	return m, pred, nil
}

// ensemblePredictions returns every example's prediction averaged over
// the parameter sets, one set's graph at a time.
func ensemblePredictions(enc EncoderSpec, params []*param, outputs int, d *Data, sets []map[string][]float32, std *standardizer) ([][]float32, error) {
	n := d.Len()
	width := d.rowWidth(outputs)
	if d.task() == Retrieval {
		width = 2 * enc.Head.withDefaults().Dim // image and text embeddings
	}
	pred := make([][]float32, n)
	for i := range pred {
		pred[i] = make([]float32, width)
	}
	for _, vals := range sets {
		r, err := newEvalRunner(enc, params, outputs, d, vals)
		if err != nil {
			return nil, err
		}
		for off := 0; off < n; off += r.batch {
			p, cnt, err := r.run(d, off)
			if err != nil {
				r.close()
				return nil, err
			}
			for i := range cnt {
				for c := range width {
					v := p[i*width+c]
					if std != nil {
						v = float32(float64(v)*std.std[c] + std.mean[c])
					}
					pred[off+i][c] += v / float32(len(sets))
				}
			}
		}
		r.close()
	}
	return pred, nil
}

// evaluateSegmentation scores the ensemble's per-pixel class
// probabilities a batch at a time, keeping only each pixel's predicted
// class and its true class's probability: every set's graph is built at
// once, so that a split's probabilities (pixels x classes for every
// image, gigabytes for ADE20K) are never all held.
func evaluateSegmentation(enc EncoderSpec, params []*param, classes int, d *Data, sets []map[string][]float32) (map[string]float64, error) {
	runners := make([]*evalRunner, 0, len(sets))
	defer func() {
		for _, r := range runners {
			r.close()
		}
	}()
	for _, vals := range sets {
		r, err := newEvalRunner(enc, params, classes, d, vals)
		if err != nil {
			return nil, err
		}
		runners = append(runners, r)
	}
	n, pixels, b := d.Len(), d.pixels(), d.evalBatchFor(classes)
	width := pixels * classes
	var sum []float32 // the ensemble's mean, when there are several sets
	if len(runners) > 1 {
		sum = make([]float32, b*width)
	}
	best, py := make([]int32, pixels), make([]float32, pixels)
	psum := make([]float64, classes)
	conf := newSegConfusion(classes)
	var y []int64
	for off := 0; off < n; off += b {
		clear(sum)
		cnt := 0
		var mean []float32
		for _, r := range runners {
			p, c, err := r.run(d, off)
			if err != nil {
				return nil, err
			}
			cnt = c
			if sum == nil {
				mean = p // one set: its probabilities, read before its next run
				continue
			}
			for i, v := range p[:cnt*width] {
				sum[i] += v / float32(len(sets))
			}
			mean = sum
		}
		for i := range cnt {
			var err error
			if y, err = d.mask(off+i, y); err != nil {
				return nil, err
			}
			for px := range pixels {
				row := mean[(i*pixels+px)*classes : (i*pixels+px+1)*classes]
				best[px], py[px] = int32(argmax(row)), row[y[px]]
				for c, v := range row {
					psum[c] += float64(v)
				}
			}
			conf.add(y, best, py)
			conf.addSoftDice(y, py, psum)
			clear(psum)
		}
	}
	return conf.scores(), nil
}

// evalRunner is one parameter set's evaluation graph and its inputs.
type evalRunner struct {
	m          *model
	vm         G.VM
	xb, yb, qb *tensor.Dense
	batch      int
}

func newEvalRunner(enc EncoderSpec, params []*param, outputs int, d *Data, vals map[string][]float32) (*evalRunner, error) {
	b := d.evalBatchFor(outputs)
	m, err := build(enc, d.task(), params, d.Shape, outputs, b, vals, false)
	if err != nil {
		return nil, err
	}
	return &evalRunner{m: m, vm: G.NewTapeMachine(m.g), xb: tensor.New(tensor.WithShape(append([]int{b}, d.Shape...)...), tensor.Of(tensor.Float32)),
		yb: newTargets(m), qb: newQuestions(m), batch: b}, nil
}

// run computes the outputs for d's examples from off (a batch, fewer at
// the end) and returns them with their count; the values are the
// runner's until its next run.
func (r *evalRunner) run(d *Data, off int) ([]float32, int, error) {
	size := d.exampleSize()
	xs := r.xb.Data().([]float32)
	clear(xs)
	cnt := min(r.batch, d.Len()-off)
	if err := d.readRange(xs[:cnt*size], off, cnt); err != nil {
		return nil, 0, err
	}
	ks := make([]int, cnt)
	for i := range ks {
		ks[i] = off + i
	}
	d.fillQuestions(r.qb, ks)
	r.vm.Reset()
	if err := r.m.setInputs(r.xb, r.qb, r.yb); err != nil {
		return nil, 0, err
	}
	if err := r.vm.RunAll(); err != nil {
		return nil, 0, err
	}
	return r.m.probs.Value().Data().([]float32), cnt, nil
}

func (r *evalRunner) close() { r.vm.Close() }
