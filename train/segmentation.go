package train

// The segmentation head and its metrics.

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Segmentation: a 1x1 conv head on the encoder's feature map, bilinear
// upsampling to the image size and per-pixel softmax cross-entropy;
// Data.Y holds a class per pixel.
const Segmentation Task = "segmentation"

// segmentationOutputs adds the loss of a training step (b.lossOnly:
// targets y [B, H*W], one class a pixel) or the per-pixel probabilities
// [B*H*W, K] of evaluation on class maps z [B, K, h, w] upsampled
// bilinearly to height x width (PyTorch's align_corners=False).
func (b *builder) segmentationOutputs(z *G.Node, batch, height, width int) {
	if b.lossOnly {
		b.out[2] = G.NewMatrix(b.g, tensor.Float32, G.WithShape(batch, height*width), G.WithName("y"))
		b.segLoss = b.pixelCrossEntropy(z, b.out[2], height, width)
		return
	}
	b.segProbs = b.pixelSoftmax(z, height, width)
}

// segmentationMaps returns the class maps [B, K, h, w] at the feature
// map's size: the 1x1 conv ("head.weight" [K, C, 1, 1], "head.bias").
func (b *builder) segmentationMaps(enc EncoderSpec, x *G.Node, shape []int, classes int) *G.Node {
	fm, c := enc.spatial(b, x, shape)
	return b.conv(fm, "head", c, classes, 1, 1, 0, true)
}

// upsample resizes the n maps of z ([..., h, w], n of them in all)
// bilinearly to height x width, returning [n, height, width]: one axis at
// a time, each a product with a constant [in, out] matrix of
// interpolation weights. The weights of the two axes multiply into
// bilinear's, so this is bilinear's product done separably: for ADE20K's
// 56 x 56 maps at 224 px, a 630 MB matrix and 24 GFLOP a map become two
// matrices of 50 KB and 0.1 GFLOP.
func (b *builder) upsample(z *G.Node, n, height, width int) *G.Node {
	zs := z.Shape()
	h, w := zs[len(zs)-2], zs[len(zs)-1]
	if h == height && w == width {
		return b.must(G.Reshape(z, tensor.Shape{n, h, w}))
	}
	along := func(in, out int) *G.Node { return b.constant([]int{in, out}, bilinearAxis(in, out)) }
	z = b.must(G.Mul(b.must(G.Reshape(z, tensor.Shape{n * h, w})), along(w, width)))          // [n*h, W]
	z = b.must(G.Transpose(b.must(G.Reshape(z, tensor.Shape{n, h, width})), 0, 2, 1))         // [n, W, h]
	z = b.must(G.Mul(b.must(G.Reshape(z, tensor.Shape{n * width, h})), along(h, height)))     // [n*W, H]
	return b.must(G.Transpose(b.must(G.Reshape(z, tensor.Shape{n, width, height})), 0, 2, 1)) // [n, H, W]
}

// bilinearAxis is the [in, out] matrix of bilinear interpolation weights
// along one axis (half-pixel centres, edges clamped): bilinear's weights
// are products of two of these.
func bilinearAxis(in, out int) []float32 {
	m := make([]float32, in*out)
	for o := range out {
		src := math.Max((float64(o)+0.5)*float64(in)/float64(out)-0.5, 0)
		i0 := min(int(math.Floor(src)), in-1)
		i1 := min(i0+1, in-1)
		f := src - float64(i0)
		m[i0*out+o] += float32(1 - f)
		m[i1*out+o] += float32(f)
	}
	return m
}

// segmentationMetrics: mIoU and mean Dice over the classes present in the
// truth or the prediction, mean per-class pixel accuracy over the classes
// present in the truth, overall pixel accuracy (all in %) and the
// per-pixel cross-entropy.
func segmentationMetrics(d *Data, prob [][]float32, classes int) (map[string]float64, error) {
	c := newSegConfusion(classes)
	var y []int64
	var best []int32
	var py []float32
	psum := make([]float64, classes)
	for i, p := range prob {
		var err error
		if y, err = d.mask(i, y); err != nil {
			return nil, err
		}
		n := len(p) / classes
		if n != len(y) {
			return nil, fmt.Errorf("example %d: %d predicted pixels for a mask of %d", i, n, len(y))
		}
		best, py = best[:0], py[:0]
		clear(psum)
		for px := 0; px < n; px++ {
			row := p[px*classes : (px+1)*classes]
			for k, v := range row {
				psum[k] += float64(v)
			}
			best, py = append(best, int32(argmax(row))), append(py, row[y[px]])
		}
		c.add(y, best, py)
		c.addSoftDice(y, py, psum)
	}
	return c.scores(), nil
}

// segmentationScores computes the segmentation metrics from every
// pixel's true class y, predicted class best and predicted probability of
// its true class py.
func segmentationScores(y []int64, best []int32, py []float32, classes int) map[string]float64 {
	c := newSegConfusion(classes)
	c.add(y, best, py)
	return c.scores()
}

// scores are the metrics of the pixels added.
func (c *segConfusion) scores() map[string]float64 {
	conf, classes, pixels := c.conf, c.classes, c.pixels
	// mIoU and Dice average over the classes in the truth or the
	// prediction, Mean Acc over the classes in the truth: a class never
	// true has no accuracy (HF evaluate's mean_iou, torchmetrics and
	// MMSegmentation agree).
	var iou, acc, dice, correct float64
	present, truthClasses := 0, 0
	for k := 0; k < classes; k++ {
		var truth, pred float64
		for j := 0; j < classes; j++ {
			truth += conf[k][j]
			pred += conf[j][k]
		}
		tp := conf[k][k]
		correct += tp
		if truth+pred == 0 {
			continue
		}
		present++
		iou += tp / (truth + pred - tp)
		dice += 2 * tp / (truth + pred)
		if truth > 0 {
			acc += tp / truth
			truthClasses++
		}
	}
	out := map[string]float64{"loss": c.loss / float64(pixels), "overall_acc": 100 * correct / float64(pixels)}
	if present > 0 {
		out["miou"], out["dice"] = 100*iou/float64(present), 100*dice/float64(present)
	}
	if v, ok := c.ignoringBackground(); ok {
		out["miou_gate"] = v
	}
	if c.dice > 0 {
		out["soft_dice"] = c.softDice / float64(c.dice)
	}
	if truthClasses > 0 {
		out["mean_acc"] = 100 * acc / float64(truthClasses)
	}
	return out
}

// ignoringBackground is mIoU (%) as GATE's evaluator computes the
// matrix's column (gate/metrics/segmentation.py, with ignore_index 0):
// pixels whose true class is 0 are dropped, and the IoU is averaged over
// the classes whose union is not empty.
func (c *segConfusion) ignoringBackground() (float64, bool) {
	var sum float64
	n := 0
	for k := range c.classes {
		var truth, pred float64
		for j := range c.classes {
			if k > 0 {
				truth += c.conf[k][j]
			}
			if j > 0 {
				pred += c.conf[j][k]
			}
		}
		tp := 0.0
		if k > 0 {
			tp = c.conf[k][k]
		}
		if truth+pred-tp <= 0 {
			continue
		}
		sum += tp / (truth + pred - tp)
		n++
	}
	if n == 0 {
		return 0, false
	}
	return 100 * sum / float64(n), true
}

// logProb is the log of a predicted probability, as the losses take it.
func logProb(p float32) float64 { return math.Log(float64(p) + 1e-7) }
