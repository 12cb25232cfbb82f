package train

import (
	"fmt"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/imageops"
)

// storeMasks gives a segmentation split's masks from its mapped store
// file one example at a time, in place of Data.Y, so that a split's masks
// (8.1 GB as int64 for ADE20K at 224 px) are never all held: the pages of
// each mask read are released afterwards.
type storeMasks struct {
	y    safetensors.Tensor // [N, H, W], an integer type
	n    int
	h, w int
	// p, when set, puts each mask through an encoder's evaluation
	// transform's geometry (ApplyMask).
	p *imageops.Preprocess
	// unmap, when set, unmaps the store file on close (a store opened for
	// its targets only).
	unmap func() error
}

// newStoreMasks checks the masks of split s (every class below classes, a
// batch of rows at a time, releasing their pages) and returns their
// reader. y is the split's target tensor, [n, h, w].
func newStoreMasks(y safetensors.Tensor, n, h, w, classes int, p *imageops.Preprocess) (*storeMasks, error) {
	if !y.DType.Integer() {
		return nil, fmt.Errorf("masks are %s, not class indices", y.DType)
	}
	if y.NumElements() != n*h*w || len(y.Data) != n*h*w*y.DType.Size() {
		return nil, fmt.Errorf("%d mask values for %d examples of %d x %d", y.NumElements(), n, h, w)
	}
	m := &storeMasks{y: y, n: n, h: h, w: w, p: p}
	row := h * w * y.DType.Size()
	per := max(1, (4<<20)/max(row, 1))
	var buf []int64
	for first := 0; first < n; first += per {
		b := y.Data[first*row : min(first+per, n)*row]
		buf = safetensors.AppendInt64s(buf[:0], y.DType, b)
		safetensors.Release(b)
		for i, v := range buf {
			if v < 0 || int(v) >= classes {
				return nil, fmt.Errorf("example %d: label %d is outside the %d classes", first+i/(h*w), v, classes)
			}
		}
	}
	if p != nil && n > 0 {
		// The transform's geometry is fixed by the mask's size: one mask
		// shows it fits.
		if _, err := m.read(0, nil); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// read returns example k's mask (transformed when m has a transform),
// appended to dst[:0].
func (m *storeMasks) read(k int, dst []int64) ([]int64, error) {
	if k < 0 || k >= m.n {
		return nil, fmt.Errorf("mask %d of %d (internal error)", k, m.n)
	}
	row := m.h * m.w * m.y.DType.Size()
	b := m.y.Data[k*row : (k+1)*row]
	dst = safetensors.AppendInt64s(dst[:0], m.y.DType, b)
	safetensors.Release(b)
	if m.p == nil {
		return dst, nil
	}
	return m.p.ApplyMask(dst, m.h, m.w)
}

func (m *storeMasks) close() error {
	if m == nil || m.unmap == nil {
		return nil
	}
	err := m.unmap()
	m.unmap = nil
	return err
}

// mask returns example k's per-pixel classes: a view of Y when the masks
// are held, else read from the store into buf's memory.
func (d *Data) mask(k int, buf []int64) ([]int64, error) {
	if d.masks == nil {
		p := d.pixels()
		if (k+1)*p > len(d.Y) {
			return nil, fmt.Errorf("mask %d of %d (internal error)", k, len(d.Y)/max(p, 1))
		}
		return d.Y[k*p : (k+1)*p], nil
	}
	return d.masks.read(k, buf)
}

// labelledPixels is the number of per-pixel labels d holds.
func (d *Data) labelledPixels() int {
	if d.masks == nil {
		return len(d.Y)
	}
	return d.masks.n * d.pixels()
}

// segConfusion accumulates the segmentation metrics' sums a batch of
// pixels at a time: the confusion of true and predicted classes and the
// cross-entropy of the true class.
type segConfusion struct {
	classes int
	conf    [][]float64 // [truth][pred]
	loss    float64
	pixels  int
	// softDice sums each image's soft Dice as GATE's evaluator computes
	// it (addSoftDice), over dice images.
	softDice float64
	dice     int
	// inter and truth are one image's per-class sums (scratch).
	inter, truth []float64
}

func newSegConfusion(classes int) *segConfusion {
	c := &segConfusion{classes: classes, conf: make([][]float64, classes)}
	for i := range c.conf {
		c.conf[i] = make([]float64, classes)
	}
	return c
}

// add takes in pixels whose true classes are y, predicted classes best
// and predicted probabilities of the true class py.
func (c *segConfusion) add(y []int64, best []int32, py []float32) {
	for px, t := range y {
		c.conf[t][best[px]]++
		c.loss -= logProb(py[px])
	}
	c.pixels += len(y)
}

// addSoftDice adds one image's soft Dice score as GATE's DiceLoss with
// ignore_index 0 computes it (gate/metrics/segmentation.py; the score is
// 1 - its loss): per class k, (2 sum p_k t_k + 1) / (sum p_k + sum t_k + 1)
// where t is the one-hot truth with label-0 pixels zeroed in every class
// and p the softmax, averaged over all classes, background's included.
// y are the true classes, py the predicted probabilities of the true
// class and psum each class's predicted probabilities summed over the
// image.
func (c *segConfusion) addSoftDice(y []int64, py []float32, psum []float64) {
	if len(psum) != c.classes {
		return
	}
	if c.inter == nil {
		c.inter, c.truth = make([]float64, c.classes), make([]float64, c.classes)
	}
	clear(c.inter)
	clear(c.truth)
	for px, t := range y {
		if t == 0 {
			continue
		}
		c.inter[t] += float64(py[px])
		c.truth[t]++
	}
	var sum float64
	for k := range c.classes {
		sum += (2*c.inter[k] + 1) / (psum[k] + c.truth[k] + 1)
	}
	c.softDice += sum / float64(c.classes)
	c.dice++
}
