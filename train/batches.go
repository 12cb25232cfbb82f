package train

// A training step's batch, read ahead while the step before computes.

import (
	"math/rand/v2"

	"gorgonia.org/tensor"
)

// batch is one training step's inputs, filled in the background
// (prepare): the Go runtime reads the next step's examples from the
// store (decoding a JPEG store's) while the current step computes.
type batch struct {
	xb, yb, qb *tensor.Dense
	it         int
	err        error
	done       chan struct{}
}

// prepare draws step it's examples (the sampler's next draw: steps draw
// in order) and fills b with them in the background; b.done closes when
// it is ready.
func (t *trainRun) prepare(it int, b *batch) {
	b.it, b.err, b.done = it, nil, make(chan struct{})
	var ks []int
	if t.task != FewShot {
		ks = drawExamples(t.rng, t.trainD.Len(), t.b)
	}
	go func() {
		defer close(b.done)
		if t.task == FewShot {
			b.err = fillEpisode(b.xb, b.yb, t.trainD, t.episodes[it-1], t.ways, t.queries)
			return
		}
		if b.err = fillBatch(b.xb, b.yb, t.trainD, ks, t.std); b.err == nil {
			t.trainD.fillQuestions(b.qb, ks)
		}
	}()
}

// drain waits for a batch read ahead, before the data it reads closes.
func (t *trainRun) drain() {
	if t.next != nil {
		<-t.next.done
		t.next = nil
	}
}

// fillBatch writes examples ks into xb and their targets into yb.
func fillBatch(xb, yb *tensor.Dense, d *Data, ks []int, std *standardizer) error {
	xs := xb.Data().([]float32)
	if err := d.readInputs(xs, ks); err != nil {
		return err
	}
	if yb == nil {
		return nil
	}
	ys := yb.Data().([]float32)
	w := len(ys) / len(ks) // the step's targets per example (a class a pixel for segmentation)
	var buf []int64
	for i, k := range ks {
		if err := d.targetRow(ys[i*w:(i+1)*w], k, std, &buf); err != nil {
			return err
		}
	}
	return nil
}

// drawExamples draws a training batch's b example indices of n,
// uniformly with replacement.
func drawExamples(rng *rand.Rand, n, b int) []int {
	ks := make([]int, b)
	for i := range ks {
		ks[i] = rng.IntN(n)
	}
	return ks
}
