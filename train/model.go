package train

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// model is a built graph: an encoder, a linear head and the task's loss.
type model struct {
	g      *G.ExprGraph
	x      *G.Node // input
	q      *G.Node // one-hot question tokens (relational), else nil
	y      *G.Node // one-hot targets
	logits *G.Node
	// logitsVal receives the logits when the graph runs (ops after
	// them may reuse their memory).
	logitsVal G.Value
	probs     *G.Node
	loss      *G.Node
	params    []*param
	// bn holds training-mode batch norms (see bnStats).
	bn []bnStats
	// buffers are the current running statistics, by name.
	buffers map[string][]float32
}

// newParams declares the parameters of an encoder plus a linear
// classification head, initialised as PyTorch does, from seed.
func newParams(enc EncoderSpec, task Task, shape []int, classes int, seed uint64) ([]*param, error) {
	frameShape := shape
	if task.clips() {
		if len(shape) != 4 {
			return nil, fmt.Errorf("video needs clips [T, C, H, W], not %v", shape)
		}
		frameShape = shape[1:]
	}
	if err := enc.Check(frameShape); err != nil {
		return nil, err
	}
	b := &builder{declare: true, rng: rand.New(rand.NewPCG(seed, 0x5eed)), declared: map[string]*param{}}
	batch := 1
	if task == FewShot {
		ways, shots, queries := enc.Head.episodeShape()
		batch = ways * (shots + queries)
	}
	if err := b.run(enc, task, shape, classes, batch); err != nil {
		return nil, err
	}
	out := make([]*param, len(b.params))
	for i, p := range b.params {
		out[i] = b.declared[p.name]
	}
	return out, nil
}

// run builds the forward graph into b, recovering build errors.
func (b *builder) run(enc EncoderSpec, task Task, shape []int, classes, batch int) error {
	return b.try(func() { b.forward(enc, task, shape, classes, batch) })
}

// forward adds the input, the encoder and the task's head to a new graph.
func (b *builder) forward(enc EncoderSpec, task Task, shape []int, classes, batch int) {
	b.g = G.NewGraph()
	xshape := append([]int{batch}, shape...)
	x := G.NewTensor(b.g, tensor.Float32, len(xshape), G.WithShape(xshape...), G.WithName("x"))
	b.data = x
	var logits *G.Node
	switch task {
	case Segmentation:
		// Class maps [B, K, h, w] at the feature map's size; the head's
		// upsampling is fused into the loss (a training step: targets
		// one class a pixel) or the probabilities (evaluation).
		logits = b.segmentationMaps(enc, x, shape, classes)
		if !b.declare {
			b.segmentationOutputs(logits, batch, shape[1], shape[2])
		}
	case Video, VideoRegression:
		logits = b.videoHead(enc, x, shape, classes)
	case Relational:
		h := enc.Head
		if h.QLen <= 0 || h.Vocab <= 0 {
			b.fail("relational data needs questions (q tokens and a vocabulary)")
		}
		b.q = G.NewMatrix(b.g, tensor.Float32, G.WithShape(batch*h.QLen, h.Vocab), G.WithName("q"))
		logits = b.relationalHead(enc, x, b.q, shape, classes)
	case FewShot:
		ways, shots, queries := enc.Head.episodeShape()
		if batch != ways*(shots+queries) {
			b.fail("a few-shot graph takes episodes of %d examples, not %d", ways*(shots+queries), batch)
		}
		feat, f := enc.forward(b, x, shape)
		logits = b.prototypeLogits(feat, f, ways, shots, queries)
	case Retrieval:
		h := enc.Head
		if h.QLen <= 0 || h.Vocab <= 0 {
			b.fail("retrieval data needs captions (q tokens and a vocabulary)")
		}
		b.q = G.NewMatrix(b.g, tensor.Float32, G.WithShape(batch*h.QLen, h.Vocab), G.WithName("q"))
		logits, b.emb = b.retrievalHead(enc, x, b.q, shape)
	default:
		feat, f := enc.forward(b, x, shape)
		logits = b.linear(feat, "head", f, classes, true)
	}
	b.out[0], b.out[1] = x, logits
}

// build creates a graph for a batch of size batch over the given
// parameters (their current values when set, else their init values); in
// training mode batch norms use batch statistics.
func build(enc EncoderSpec, task Task, ps []*param, shape []int, classes, batch int, values map[string][]float32, training bool) (*model, error) {
	return buildWith(&builder{declared: map[string]*param{}, values: values, train: training}, enc, task, ps, shape, classes, batch)
}

// buildStep is build for a training step's graph: the loss without a
// prediction (probs is nil), which lets segmentation's loss be one fused
// op on the class maps (builder.lossOnly). bnTraining is build's training.
func buildStep(enc EncoderSpec, task Task, ps []*param, shape []int, classes, batch int, values map[string][]float32, bnTraining bool) (*model, error) {
	return buildWith(&builder{declared: map[string]*param{}, values: values, train: bnTraining, lossOnly: true}, enc, task, ps, shape, classes, batch)
}

func buildWith(b *builder, enc EncoderSpec, task Task, ps []*param, shape []int, classes, batch int) (*model, error) {
	values, training := b.values, b.train
	for _, p := range ps {
		b.declared[p.name] = p
	}
	if err := b.run(enc, task, shape, classes, batch); err != nil {
		return nil, err
	}
	m := &model{g: b.g, x: b.out[0], q: b.q, logits: b.out[1], bn: b.bn, buffers: map[string][]float32{}}
	for _, p := range b.params {
		if p.buffer {
			data := p.init
			if v, ok := values[p.name]; ok {
				data = v
			}
			m.buffers[p.name] = append([]float32(nil), data...)
			continue
		}
		m.params = append(m.params, p)
	}
	if len(m.params)+len(m.buffers) != len(ps) {
		return nil, errors.New("train: the graph did not use every declared parameter")
	}
	var err error
	if m.probs, m.loss, err = addHead(b, task, m.logits, batch, classes); err != nil {
		return nil, err
	}
	m.y = b.out[2]
	if !training {
		G.Read(m.logits, &m.logitsVal)
	}
	return m, nil
}

// addHead adds targets y and the task's prediction and loss on the head's
// outputs.
func addHead(b *builder, task Task, logits *G.Node, batch, classes int) (probs, loss *G.Node, err error) {
	err = b.try(func() {
		if task == Segmentation {
			probs, loss = b.segProbs, b.segLoss // one of them; y was added with the loss
			return
		}
		if task == Retrieval {
			// The targets are the in-batch diagonal, fixed in the graph;
			// the prediction is the pair of embeddings.
			probs, loss = b.emb, b.retrievalLoss(logits)
			return
		}
		y := G.NewMatrix(b.g, tensor.Float32, G.WithShape(logits.Shape()...), G.WithName("y"))
		b.out[2] = y
		probs, loss = headLoss(b, task, logits, y, batch)
	})
	return probs, loss, err
}

// crossEntropyOn is a numerically stable softmax cross-entropy of logits
// against one-hot targets y, averaged over the batch; it also returns the
// softmax probabilities.
func crossEntropyOn(b *builder, logits, y *G.Node, batch int) (probs, loss *G.Node) {
	logp := b.logSoftmax(logits)
	probs = b.must(G.Exp(logp))
	// -mean over the batch of log p[true class].
	loss = b.must(G.Neg(b.must(G.HadamardProd(b.must(G.Sum(b.must(G.HadamardProd(logp, y)))), b.scalar(float32(1)/float32(batch))))))
	return probs, loss
}

// trainable lists the parameters that learn: all, or without the
// encoder's for a linear probe.
func (m *model) trainable(frozenEncoder bool) []*param {
	var out []*param
	for _, p := range m.params {
		if !frozenEncoder || !strings.HasPrefix(p.name, "encoder.") {
			out = append(out, p)
		}
	}
	return out
}

func (m *model) nodes() G.Nodes {
	var ns G.Nodes
	for _, p := range m.params {
		ns = append(ns, p.node)
	}
	return ns
}

// values copies the parameters' current values and the buffers.
func (m *model) values() map[string][]float32 {
	out := map[string][]float32{}
	for _, p := range m.params {
		out[p.name] = append([]float32(nil), p.node.Value().Data().([]float32)...)
	}
	for k, v := range m.buffers {
		out[k] = append([]float32(nil), v...)
	}
	return out
}

// updateRunningStats folds the last step's batch statistics into the
// batch norms' running buffers, as PyTorch's BatchNorm2d does.
func (m *model) updateRunningStats() error {
	for _, s := range m.bn {
		mv, ok1 := s.mean.Value().Data().([]float32)
		vv, ok2 := s.variance.Value().Data().([]float32)
		if !ok1 || !ok2 {
			return fmt.Errorf("batch norm %s: statistics not computed", s.runMean)
		}
		rm, rv := m.buffers[s.runMean], m.buffers[s.runVar]
		unbias := float32(s.count) / float32(max(s.count-1, 1))
		mom := float32(s.momentum)
		for i := range rm {
			rm[i] = (1-mom)*rm[i] + mom*mv[i]
			rv[i] = (1-mom)*rv[i] + mom*vv[i]*unbias
		}
	}
	return nil
}

// newTargets allocates a target tensor shaped as the model's y (nil when
// the targets are fixed in the graph).
func newTargets(m *model) *tensor.Dense {
	if m.y == nil {
		return nil
	}
	return tensor.New(tensor.WithShape(m.y.Shape()...), tensor.Of(tensor.Float32))
}

// newQuestions allocates the question input of a relational model, nil
// for other tasks.
func newQuestions(m *model) *tensor.Dense {
	if m.q == nil {
		return nil
	}
	return tensor.New(tensor.WithShape(m.q.Shape()...), tensor.Of(tensor.Float32))
}

// setInputs binds the batch tensors to the model's input nodes.
func (m *model) setInputs(xb, qb, yb *tensor.Dense) error {
	if err := G.Let(m.x, xb); err != nil {
		return err
	}
	if m.q != nil {
		if err := G.Let(m.q, qb); err != nil {
			return err
		}
	}
	if m.y == nil {
		return nil
	}
	return G.Let(m.y, yb)
}
