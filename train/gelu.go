package train

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Activation names the GELU variants the transformer encoders use.
const (
	// GELUErf is the exact GELU, x Φ(x) (PyTorch's nn.GELU(), timm and
	// torchvision ViTs, ConvNeXt).
	GELUErf = "gelu"
	// GELUTanh is the tanh approximation (nn.GELU(approximate="tanh")).
	GELUTanh = "gelu_tanh"
	// QuickGELU is x sigmoid(1.702 x), OpenAI CLIP's.
	QuickGELU = "quick_gelu"
)

// Activations lists the accepted activation names.
var Activations = []string{GELUErf, GELUTanh, QuickGELU}

// activation applies the named GELU variant ("" is the exact one).
func (b *builder) activation(x *G.Node, name string) *G.Node {
	switch name {
	case GELUTanh:
		return b.gelu(x)
	case QuickGELU:
		return b.must(G.HadamardProd(x, b.must(G.Sigmoid(b.must(G.HadamardProd(x, b.scalar(1.702)))))))
	case GELUErf, "":
		return b.must(G.ApplyOp(&geluOp{xdyBasics: newXdy(fmt.Sprintf("gelu%v", x.Shape()), x.Dims())}, x))
	}
	b.fail("activation %q is not one of %v", name, Activations)
	return nil
}

// geluOp is the exact GELU, 0.5 x (1 + erf(x/√2)), elementwise (gorgonia
// has no erf). Its backward op takes (x, dy) and returns dy (Φ(x) + x φ(x)).
type geluOp struct {
	xdyBasics
	out outBuf
}

func (op *geluOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return sameShape(op, in) }

func (op *geluOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	return op.backward(&geluOp{xdyBasics: op.gradBasics()}, inputs[0], grad)
}

func (op *geluOp) Do(inputs ...G.Value) (G.Value, error) {
	x, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	var dy []float32
	if op.grad {
		if dy, err = f32(inputs[1]); err != nil {
			return nil, err
		}
	}
	out := op.out.get(len(x))
	inParts(len(x), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := float64(x[i])
			cdf := 0.5 * (1 + math.Erf(v/math.Sqrt2))
			if op.grad {
				pdf := math.Exp(-0.5*v*v) / math.Sqrt(2*math.Pi)
				out[i] = dy[i] * float32(cdf+v*pdf)
			} else {
				out[i] = float32(v * cdf)
			}
		}
	})
	return tensor.New(tensor.WithShape(inputs[0].Shape().Clone()...), tensor.WithBacking(out)), nil
}
