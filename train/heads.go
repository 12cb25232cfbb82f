package train

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
)

// Task is what a head predicts from the encoder's features.
type Task string

// Tasks with a built-in head.
const (
	// Classification: a linear head and softmax cross-entropy over
	// classes; Data.Y holds class indices.
	Classification Task = "classification"
	// MultiLabel: a linear head with a sigmoid per label and binary
	// cross-entropy (medical style); Data.T holds 0/1 per label.
	MultiLabel Task = "multilabel"
	// Regression: a linear head and mean squared error on standardised
	// targets; Data.T holds the targets.
	Regression Task = "regression"
)

// Tasks lists the tasks Train handles.
var Tasks = []Task{Classification, MultiLabel, Regression, Segmentation, Video, VideoRegression, Relational, Retrieval, FewShot}

// regresses reports whether a task predicts values (standardised
// targets, mean squared error, MAE and MSE).
func (t Task) regresses() bool { return t == Regression || t == VideoRegression }

// clips reports whether a task's examples are clips [T, C, H, W] through
// the video head.
func (t Task) clips() bool { return t == Video || t == VideoRegression }

// HeadSpec sizes the transformer of the video and relational heads.
type HeadSpec struct {
	Layers int `json:"layers,omitempty"` // default 4, as the paper
	Dim    int `json:"dim,omitempty"`    // default 64
	Heads  int `json:"heads,omitempty"`  // default 4
	// Ways, Shots and Queries shape few-shot episodes (training; the
	// evaluation also runs 1-shot episodes).
	Ways    int `json:"ways,omitempty"`
	Shots   int `json:"shots,omitempty"`
	Queries int `json:"queries,omitempty"`
	// QLen and Vocab size the relational head's question input; Train
	// sets them from the data.
	QLen  int `json:"-"`
	Vocab int `json:"-"`
}

func (h HeadSpec) withDefaults() HeadSpec {
	if h.Layers <= 0 {
		h.Layers = 4
	}
	if h.Dim <= 0 {
		h.Dim = 64
	}
	if h.Heads <= 0 {
		h.Heads = 4
	}
	return h
}

// headLoss adds the task's prediction (probabilities, sigmoid outputs or
// values) and loss (mean over the batch) on the head's outputs z [B, K]
// against targets y [B, K].
func headLoss(b *builder, task Task, z, y *G.Node, batch int) (pred, loss *G.Node) {
	switch task {
	case MultiLabel:
		// Stable binary cross-entropy with logits:
		// max(z, 0) - z*y + log(1 + exp(-|z|)).
		l := b.must(G.Sub(b.relu(z), b.must(G.HadamardProd(z, y))))
		l = b.must(G.Add(l, b.must(G.Log1p(b.must(G.Exp(b.must(G.Neg(b.must(G.Abs(z))))))))))
		loss = b.must(G.HadamardProd(b.must(G.Sum(l)), b.scalar(float32(1)/float32(batch*z.Shape()[1]))))
		return b.must(G.Sigmoid(z)), loss
	case Segmentation, Video, Relational, FewShot:
		return crossEntropyOn(b, z, y, z.Shape()[0])
	case Regression, VideoRegression:
		d := b.must(G.Sub(z, y))
		loss = b.must(G.HadamardProd(b.must(G.Sum(b.must(G.Square(d)))), b.scalar(float32(1)/float32(batch*z.Shape()[1]))))
		return z, loss
	default:
		return crossEntropyOn(b, z, y, batch)
	}
}

// targetRow writes example k's target row for a training step (one-hot,
// labels, a class a pixel or standardised values) into dst.
func (d *Data) targetRow(dst []float32, k int, std *standardizer, buf *[]int64) error {
	switch d.task() {
	case Classification, Video, Relational:
		clear(dst)
		dst[d.Y[k]] = 1
	case Segmentation:
		// A training step's targets: the class of every pixel (the fused
		// loss checks each against the classes).
		m, err := d.mask(k, *buf)
		if err != nil {
			return err
		}
		if d.masks != nil {
			*buf = m // reused by the next mask read
		}
		if len(m) != len(dst) {
			return fmt.Errorf("example %d: a mask of %d pixels for %d", k, len(m), len(dst))
		}
		for px, y := range m {
			dst[px] = float32(y)
		}
	default:
		copy(dst, d.T[k*len(dst):(k+1)*len(dst)])
		if std != nil {
			for j := range dst {
				dst[j] = float32((float64(dst[j]) - std.mean[j]) / std.std[j])
			}
		}
	}
	return nil
}

// standardizer holds the training targets' mean and std per output, for
// regression (the head predicts standardised targets).
type standardizer struct{ mean, std []float64 }

func newStandardizer(d *Data, outputs int) *standardizer {
	s := &standardizer{mean: make([]float64, outputs), std: make([]float64, outputs)}
	n := d.Len()
	for j := 0; j < outputs; j++ {
		var sum, sq float64
		for i := 0; i < n; i++ {
			v := float64(d.T[i*outputs+j])
			sum += v
			sq += v * v
		}
		m := sum / float64(n)
		s.mean[j] = m
		s.std[j] = math.Sqrt(math.Max(sq/float64(n)-m*m, 0))
		if s.std[j] < 1e-8 {
			s.std[j] = 1
		}
	}
	return s
}

// pixels is the number of pixels of one example ([C, H, W] -> H*W).
func (d *Data) pixels() int {
	if len(d.Shape) != 3 {
		return 1
	}
	return d.Shape[1] * d.Shape[2]
}

// rowWidth is the number of target values per example.
func (d *Data) rowWidth(outputs int) int {
	switch d.task() {
	case Segmentation:
		return d.pixels() * outputs
	case Retrieval:
		return 0 // the targets are fixed in the graph
	}
	return outputs
}

// DefaultLR is the paper's per-family learning rate (GATE section 8.1)
// for fine-tuning: convolutional encoders 1e-3 (6e-4 for segmentation),
// ViTs 1e-5. The MLP counts as convolutional here.
func DefaultLR(arch string, task Task) float64 {
	if arch == "vit" {
		return 1e-5
	}
	if task == Segmentation {
		return 6e-4
	}
	return 1e-3
}
