package train

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestTrainingStepsMatchPyTorch starts a small convnet of the reference
// convnet's kind from PyTorch's initial weights and takes the same AdamW
// steps on the same batches (testdata/train_parity, made by
// testdata/parity/make_train_parity.py): each step's loss and the final
// weights must match PyTorch's. It runs the pieces Train runs (the graph,
// its gradients on one tape across passes, adamW) with the batches given
// instead of sampled.
func TestTrainingStepsMatchPyTorch(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join("testdata", "train_parity", "convnet.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var enc EncoderSpec
	if err := json.Unmarshal([]byte(f.Metadata["spec"]), &enc); err != nil {
		t.Fatal(err)
	}
	classes, _ := strconv.Atoi(f.Metadata["classes"])
	lr, _ := strconv.ParseFloat(f.Metadata["lr"], 64)
	wd, _ := strconv.ParseFloat(f.Metadata["weight_decay"], 64)
	x, y, wantLoss := f.Tensors["parity.x"], f.Tensors["parity.y"].Float32s(), f.Tensors["parity.loss"].Float32s()
	steps, batch, shape := x.Shape[0], x.Shape[1], x.Shape[2:]
	init, _, err := MatchWeights(enc, Classification, shape, classes, f)
	if err != nil {
		t.Fatal(err)
	}
	params, err := newParams(enc, Classification, shape, classes, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range params {
		p.init = init[p.name]
	}
	m, err := build(enc, Classification, params, shape, classes, batch, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(m.loss, m.nodes()...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(m.g, G.BindDualValues(m.nodes()...))
	defer vm.Close()
	opt := newAdamW(m.params, Recipe{WeightDecay: wd})
	xs, size := x.Float32s(), prod(shape)
	xb := tensor.New(tensor.WithShape(append([]int{batch}, shape...)...), tensor.Of(tensor.Float32))
	yb := newTargets(m)
	for s := range steps {
		copy(xb.Data().([]float32), xs[s*batch*size:(s+1)*batch*size])
		onehot := yb.Data().([]float32)
		clear(onehot)
		for i := range batch {
			onehot[i*classes+int(y[s*batch+i])] = 1
		}
		if err := m.setInputs(xb, nil, yb); err != nil {
			t.Fatal(err)
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := m.loss.Value().Data().(float32)
		if math.Abs(float64(got-wantLoss[s])) > 1e-5 {
			t.Errorf("step %d: loss %v, PyTorch %v", s+1, got, wantLoss[s])
		}
		opt.step(lr)
		vm.Reset()
	}
	checked := 0
	for _, p := range m.params {
		want, ok := f.Tensors["final."+p.name]
		if !ok {
			t.Fatalf("no final.%s in the fixture", p.name)
		}
		got, exp := p.node.Value().Data().([]float32), want.Float32s()
		var worst float64
		for i := range exp {
			worst = math.Max(worst, math.Abs(float64(got[i]-exp[i])))
		}
		// float32 rounding leaves about 5e-8 (any BLAS kernel's order of
		// summation); one AdamW step moves a weight by up to lr = 1e-2,
		// and a wrong beta2 alone by 1e-4 after 5 steps.
		t.Logf("%s: max difference %.2g", p.name, worst)
		if worst > 2e-6 {
			t.Errorf("%s after %d steps: max |gatepipe - PyTorch| = %g", p.name, steps, worst)
		}
		checked++
	}
	if n := len(f.Tensors) - 3; checked != n/2 || !strings.Contains(f.Metadata["spec"], "convnet") {
		t.Errorf("checked %d parameters of the fixture's %d", checked, n/2)
	}
}
