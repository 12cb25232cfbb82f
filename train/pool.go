package train

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// maxPool2Op is 2x2 max pooling with stride 2 (odd edges dropped, as
// PyTorch's MaxPool2d(2) does) on x [B, C, H, W], optionally followed by
// a ReLU (the two commute, and fused they cost one pass).
//
// The forward op records, per output, the flat index into x of the first
// maximum of its window (a sink index, len(x), where the ReLU zeroed the
// output). Its backward op (inputs x and dy) scatters each dy to that
// index, so backward makes no comparisons. The tape runs a forward op
// before its backward op in every pass, which keeps the record valid; x
// is a backward input only to order the two.
type maxPool2Op struct {
	xdyBasics
	shape tensor.Shape // x's
	relu  bool
	// at is the forward pass's record: x's flat index per output.
	at []int32
	// fwd is the forward op whose record a backward op reads.
	fwd *maxPool2Op
	// out is the op's output, reused across passes (each op has its own:
	// the backward op is made with an empty one).
	out outBuf
}

func newMaxPool2Op(shape tensor.Shape, relu bool) *maxPool2Op {
	desc := fmt.Sprintf("maxpool2%v", shape)
	if relu {
		desc += " + relu"
	}
	return &maxPool2Op{xdyBasics: newXdy(desc, 4), shape: shape.Clone(), relu: relu}
}

// maxPool2 is 2x2 max pooling with stride 2.
func (b *builder) maxPool2(x *G.Node) *G.Node {
	return b.must(G.ApplyOp(newMaxPool2Op(x.Shape(), false), x))
}

// maxPool2ReLU is relu(maxPool2(x)) as one op.
func (b *builder) maxPool2ReLU(x *G.Node) *G.Node {
	return b.must(G.ApplyOp(newMaxPool2Op(x.Shape(), true), x))
}

func (op *maxPool2Op) outShape() tensor.Shape {
	s := op.shape
	return tensor.Shape{s[0], s[1], s[2] / 2, s[3] / 2}
}

func (op *maxPool2Op) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.grad {
		return op.shape.Clone(), nil
	}
	return op.outShape(), nil
}

// SymDiff: dx = the backward op on (x, dy), reading this op's record.
func (op *maxPool2Op) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	return op.backward(&maxPool2Op{xdyBasics: op.gradBasics(), shape: op.shape, relu: op.relu, fwd: op}, inputs[0], grad)
}

func (op *maxPool2Op) Do(inputs ...G.Value) (G.Value, error) {
	x, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	if op.grad {
		dy, err := f32(inputs[1])
		if err != nil {
			return nil, err
		}
		return op.scatter(len(x), dy)
	}
	s := op.shape
	h, w := s[2], s[3]
	oh, ow := h/2, w/2
	out := op.out.get(s[0] * s[1] * oh * ow) // every value written
	if len(op.at) != len(out) {
		op.at = make([]int32, len(out))
	}
	sink := int32(len(x))
	inParts(s[0]*s[1], h*w, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			for oy := range oh {
				base := p*h*w + 2*oy*w
				o := (p*oh + oy) * ow
				pool2Row(x[base:][:2*ow], x[base+w:][:2*ow], out[o:][:ow], op.at[o:][:ow], int32(base), int32(w), sink, op.relu)
			}
		}
	})
	return tensor.New(tensor.WithShape(op.outShape()...), tensor.WithBacking(out)), nil
}

// scatter puts dy onto the recorded maxima, zero elsewhere; outputs the
// ReLU zeroed (sink index) scatter nothing. The planes are split between
// the cores: a plane's outputs point into that plane only.
func (op *maxPool2Op) scatter(n int, dy []float32) (G.Value, error) {
	at := op.fwd.at
	if len(at) != len(dy) {
		return nil, fmt.Errorf("%s: the forward pass has not run", op)
	}
	s := op.shape
	planes, size := s[0]*s[1], s[2]*s[3]
	per := (s[2] / 2) * (s[3] / 2)
	out := op.out.get(n)
	sink := int32(n)
	inParts(planes, size, func(lo, hi int) {
		clear(out[lo*size : hi*size])
		for i := lo * per; i < hi*per; i++ {
			if a := at[i]; a != sink {
				out[a] = dy[i]
			}
		}
	})
	return tensor.New(tensor.WithShape(op.shape...), tensor.WithBacking(out)), nil
}

// pool2Row pools one output row: r0 and r1 are the two input rows
// (2*len(dst) values each, starting at flat index base; w is the row
// stride). It writes each window's first maximum to dst and its flat
// index to at; with relu, a window whose maximum is not positive gives 0
// and the sink index. The SIMD build replaces it with a vector kernel.
var pool2Row = pool2RowGeneric

func pool2RowGeneric(r0, r1, dst []float32, at []int32, base, w, sink int32, relu bool) {
	r0, r1, at = r0[:2*len(dst)], r1[:2*len(dst)], at[:len(dst)]
	for ox := range dst {
		i := base + int32(2*ox)
		m, a := r0[2*ox], i
		if relu {
			m, a = 0, sink
			if v := r0[2*ox]; v > m {
				m, a = v, i
			}
		}
		// Strict comparisons keep the first maximum, as PyTorch does.
		if v := r0[2*ox+1]; v > m {
			m, a = v, i+1
		}
		if v := r1[2*ox]; v > m {
			m, a = v, i+w
		}
		if v := r1[2*ox+1]; v > m {
			m, a = v, i+w+1
		}
		dst[ox], at[ox] = m, a
	}
}
