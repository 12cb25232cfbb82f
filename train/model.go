package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// EncoderSpec describes a built-in encoder.
type EncoderSpec struct {
	// Arch is "mlp" or "convnet".
	Arch string `json:"arch"`
	// Channels are the convnet's conv widths (each 3x3, ReLU, 2x2 max
	// pool); Hidden the dense layers after it (or the MLP's layers).
	Channels []int `json:"channels"`
	Hidden   []int `json:"hidden"`
}

// param is one trainable tensor with its PyTorch-style name.
type param struct {
	name  string
	shape []int
	init  []float32
	node  *G.Node
}

// model is a built graph.
type model struct {
	g      *G.ExprGraph
	x      *G.Node // input
	y      *G.Node // one-hot targets
	probs  *G.Node
	loss   *G.Node
	params []*param
}

// newParams creates the parameters of an encoder plus a linear
// classification head, initialised as PyTorch does (uniform within
// ±1/sqrt(fan_in) for weights and biases), from seed.
func newParams(enc EncoderSpec, shape []int, classes int, seed uint64) ([]*param, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var ps []*param
	add := func(name string, fanIn int, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		bound := 1 / math.Sqrt(float64(fanIn))
		for i := range v {
			v[i] = float32((rng.Float64()*2 - 1) * bound)
		}
		ps = append(ps, &param{name: name, shape: shape, init: v})
	}
	c, h, w := shape[0], 1, 1
	if len(shape) == 3 {
		h, w = shape[1], shape[2]
	}
	switch enc.Arch {
	case "convnet":
		if len(shape) != 3 {
			return nil, fmt.Errorf("convnet needs image examples [C, H, W], not %v", shape)
		}
		in := c
		for i, out := range enc.Channels {
			add(fmt.Sprintf("encoder.convs.%d.weight", i), in*9, out, in, 3, 3)
			add(fmt.Sprintf("encoder.convs.%d.bias", i), in*9, out)
			in, h, w = out, h/2, w/2
			if h == 0 || w == 0 {
				return nil, fmt.Errorf("convnet: %d conv+pool stages shrink %v to nothing", len(enc.Channels), shape)
			}
		}
		c = in
	case "mlp":
	default:
		return nil, fmt.Errorf("encoder arch %q is not built in (mlp, convnet)", enc.Arch)
	}
	in := c * h * w
	for i, out := range enc.Hidden {
		add(fmt.Sprintf("encoder.fcs.%d.weight", i), in, out, in)
		add(fmt.Sprintf("encoder.fcs.%d.bias", i), in, out)
		in = out
	}
	add("head.weight", in, classes, in)
	add("head.bias", in, classes)
	return ps, nil
}

// build creates a graph for a batch of size b over the given parameters
// (their current values when set, else their init values).
func build(enc EncoderSpec, ps []*param, shape []int, classes, b int, values map[string][]float32) (*model, error) {
	g := G.NewGraph()
	m := &model{g: g}
	for _, p := range ps {
		data := p.init
		if v, ok := values[p.name]; ok {
			data = v
		}
		t := tensor.New(tensor.WithShape(p.shape...), tensor.WithBacking(append([]float32(nil), data...)))
		p2 := &param{name: p.name, shape: p.shape, init: p.init}
		// A learnable node (not a constant: the tape must read the values
		// the optimiser updates in place).
		p2.node = G.NewTensor(g, tensor.Float32, len(p.shape), G.WithShape(p.shape...), G.WithName(p.name), G.WithValue(t))
		m.params = append(m.params, p2)
	}
	get := func(name string) *G.Node {
		for _, p := range m.params {
			if p.name == name {
				return p.node
			}
		}
		panic("train: missing parameter " + name)
	}
	xshape := append([]int{b}, shape...)
	m.x = G.NewTensor(g, tensor.Float32, len(xshape), G.WithShape(xshape...), G.WithName("x"))
	m.y = G.NewMatrix(g, tensor.Float32, G.WithShape(b, classes), G.WithName("y"))
	cur := m.x
	var err error
	if enc.Arch == "convnet" {
		for i := range enc.Channels {
			w := get(fmt.Sprintf("encoder.convs.%d.weight", i))
			bias := get(fmt.Sprintf("encoder.convs.%d.bias", i))
			if cur, err = G.Conv2d(cur, w, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}); err != nil {
				return nil, err
			}
			// Bias over channels: reshape (C) to (1, C, 1, 1) and broadcast.
			bb := G.Must(G.Reshape(bias, tensor.Shape{1, enc.Channels[i], 1, 1}))
			if cur, err = G.BroadcastAdd(cur, bb, nil, []byte{0, 2, 3}); err != nil {
				return nil, err
			}
			if cur, err = G.Rectify(cur); err != nil {
				return nil, err
			}
			if cur, err = G.MaxPool2D(cur, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}); err != nil {
				return nil, err
			}
		}
	}
	flat := 1
	for _, d := range cur.Shape()[1:] {
		flat *= d
	}
	if cur, err = G.Reshape(cur, tensor.Shape{b, flat}); err != nil {
		return nil, err
	}
	dense := func(cur *G.Node, wname, bname string) (*G.Node, error) {
		w := get(wname)
		out, err := G.Mul(cur, G.Must(G.Transpose(w)))
		if err != nil {
			return nil, err
		}
		return G.BroadcastAdd(out, get(bname), nil, []byte{0})
	}
	for i := range enc.Hidden {
		if cur, err = dense(cur, fmt.Sprintf("encoder.fcs.%d.weight", i), fmt.Sprintf("encoder.fcs.%d.bias", i)); err != nil {
			return nil, err
		}
		if cur, err = G.Rectify(cur); err != nil {
			return nil, err
		}
	}
	logits, err := dense(cur, "head.weight", "head.bias")
	if err != nil {
		return nil, err
	}
	// Numerically stable log-softmax: shift by the row maximum, then
	// subtract the log-sum-exp.
	mx := G.Must(G.Reshape(G.Must(G.Max(logits, 1)), tensor.Shape{b, 1}))
	shifted := G.Must(G.BroadcastSub(logits, mx, nil, []byte{1}))
	lse := G.Must(G.Reshape(G.Must(G.Log(G.Must(G.Sum(G.Must(G.Exp(shifted)), 1)))), tensor.Shape{b, 1}))
	logp := G.Must(G.BroadcastSub(shifted, lse, nil, []byte{1}))
	if m.probs, err = G.Exp(logp); err != nil {
		return nil, err
	}
	// Cross-entropy: -mean over the batch of log p[true class].
	m.loss = G.Must(G.Neg(G.Must(G.Div(G.Must(G.Sum(G.Must(G.HadamardProd(logp, m.y)))), G.NewConstant(float32(b))))))
	return m, nil
}

func (m *model) nodes() G.Nodes {
	var ns G.Nodes
	for _, p := range m.params {
		ns = append(ns, p.node)
	}
	return ns
}

// values copies the parameters' current values.
func (m *model) values() map[string][]float32 {
	out := map[string][]float32{}
	for _, p := range m.params {
		out[p.name] = append([]float32(nil), p.node.Value().Data().([]float32)...)
	}
	return out
}
