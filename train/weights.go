package train

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/train/cblas"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Weights are named parameter values, as in a PyTorch state_dict.
type Weights map[string][]float32

// MatchWeights takes from f the tensors of a model's parameters. Every
// encoder tensor must be there with the right shape; head tensors are used
// when their shapes fit (a new task's head starts from its initialisation
// otherwise). Other tensors (num_batches_tracked, a different head) are
// returned as ignored.
func MatchWeights(enc EncoderSpec, task Task, shape []int, classes int, f *safetensors.File) (w Weights, ignored []string, err error) {
	ps, err := newParams(enc, task, shape, classes, 0)
	if err != nil {
		return nil, nil, err
	}
	w = Weights{}
	used := map[string]bool{}
	var missing, wrong []string
	for _, p := range ps {
		t, ok := f.Tensors[p.name]
		// The head and the stem belong to the adapter: used when they fit.
		head := strings.HasPrefix(p.name, "head.") || strings.HasPrefix(p.name, "stem.")
		switch {
		case !ok && head:
		case !ok:
			missing = append(missing, p.name)
		case !slices.Equal(t.Shape, p.shape) && head:
		case !slices.Equal(t.Shape, p.shape):
			wrong = append(wrong, fmt.Sprintf("%s is %v, the encoder needs %v", p.name, t.Shape, p.shape))
		case t.DType != safetensors.F32:
			wrong = append(wrong, fmt.Sprintf("%s is %s, want F32", p.name, t.DType))
		default:
			w[p.name] = t.Float32s()
			used[p.name] = true
		}
	}
	if len(missing) > 0 || len(wrong) > 0 {
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, fmt.Sprintf("missing %d tensors: %s", len(missing), strings.Join(first(missing, 8), ", ")))
		}
		if len(wrong) > 0 {
			parts = append(parts, strings.Join(first(wrong, 8), "; "))
		}
		return nil, nil, fmt.Errorf("weights do not fit the %s encoder: %s (SPEC.md lists the tensor names)", enc.Arch, strings.Join(parts, "; "))
	}
	for name := range f.Tensors {
		if !used[name] {
			ignored = append(ignored, name)
		}
	}
	sort.Strings(ignored)
	return w, ignored, nil
}

func first(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

// Logits runs the model in evaluation mode on x (batch examples of shape)
// with the given weights (initialisation from seed 0 where absent) and
// returns the logits, batch x classes.
func Logits(enc EncoderSpec, shape []int, classes int, w Weights, x []float32, batch int) ([]float32, error) {
	ps, err := newParams(enc, Classification, shape, classes, 0)
	if err != nil {
		return nil, err
	}
	m, err := build(enc, Classification, ps, shape, classes, batch, w, false)
	if err != nil {
		return nil, err
	}
	vm := G.NewTapeMachine(m.g)
	defer vm.Close()
	xt := tensor.New(tensor.WithShape(append([]int{batch}, shape...)...), tensor.WithBacking(append([]float32(nil), x...)))
	if err := G.Let(m.x, xt); err != nil {
		return nil, err
	}
	if err := G.Let(m.y, tensor.New(tensor.WithShape(batch, classes), tensor.Of(tensor.Float32))); err != nil {
		return nil, err
	}
	if err := vm.RunAll(); err != nil {
		return nil, err
	}
	return append([]float32(nil), m.logitsVal.Data().([]float32)...), nil
}

// Features runs the encoder (and its stem) in evaluation mode over d's
// examples with the given weights (initialisation from seed 0 where
// absent) and returns the pooled features, N x F, and F: what a linear
// probe trains on.
func Features(enc EncoderSpec, w Weights, d *Data) ([]float32, int, error) {
	blasOnce.Do(func() { cblas.Enable() })
	ps, err := newParams(enc, Classification, d.Shape, 1, 0)
	if err != nil {
		return nil, 0, err
	}
	size, n, batch := d.exampleSize(), d.Len(), d.evalBatch()
	b := &builder{declared: map[string]*param{}, values: w}
	for _, p := range ps {
		b.declared[p.name] = p
	}
	var feat *G.Node
	var f int
	err = b.try(func() {
		b.g = G.NewGraph()
		xshape := append([]int{batch}, d.Shape...)
		b.out[0] = G.NewTensor(b.g, tensor.Float32, len(xshape), G.WithShape(xshape...), G.WithName("x"))
		feat, f = enc.forward(b, b.out[0], d.Shape)
	})
	if err != nil {
		return nil, 0, err
	}
	var val G.Value
	G.Read(feat, &val)
	vm := G.NewTapeMachine(b.g)
	defer vm.Close()
	out := make([]float32, 0, n*f)
	xb := tensor.New(tensor.WithShape(append([]int{batch}, d.Shape...)...), tensor.Of(tensor.Float32))
	for off := 0; off < n; off += batch {
		xs := xb.Data().([]float32)
		clear(xs)
		cnt := min(batch, n-off)
		copy(xs, d.X[off*size:(off+cnt)*size])
		if err := G.Let(b.out[0], xb); err != nil {
			return nil, 0, err
		}
		if err := vm.RunAll(); err != nil {
			return nil, 0, err
		}
		out = append(out, val.Data().([]float32)[:cnt*f]...)
		vm.Reset()
	}
	return out, f, nil
}
