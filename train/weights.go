package train

import (
	"fmt"
	"math"
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

// MatchWeights takes from f the tensors of a model's parameters, named as
// gatepipe, timm or torchvision name them (enc.WeightsFormat, or detected
// from the names). Every encoder tensor must be there with the right
// shape; F16, BF16 and F64 tensors are converted to float32; a ViT's
// position embedding made for another image size is resampled (bicubic,
// as timm does). Head tensors are used when their shapes fit (a new task's
// head starts from its initialisation otherwise). Other tensors
// (num_batches_tracked, a different head) are returned as ignored, under
// their names in the file.
func MatchWeights(enc EncoderSpec, task Task, shape []int, classes int, f *safetensors.File) (w Weights, ignored []string, err error) {
	ps, err := newParams(enc, task, shape, classes, 0)
	if err != nil {
		return nil, nil, err
	}
	r, err := pickFormat(enc, ps, f)
	if err != nil {
		return nil, nil, err
	}
	w = Weights{}
	used := map[string]bool{}
	var missing, wrong, nonFinite []string
	for _, p := range ps {
		t, ok := r.tensors[p.name]
		// The head and the stem belong to the adapter: used when they fit.
		head := strings.HasPrefix(p.name, "head.") || strings.HasPrefix(p.name, "stem.")
		if !ok {
			if !head {
				missing = append(missing, p.name)
			}
			continue
		}
		v, problem := fitTensor(enc, p, t, shape)
		switch {
		case problem != "" && head:
		case problem != "":
			wrong = append(wrong, fmt.Sprintf("%s is %s", describe(r, p.name), problem))
		default:
			if bad := CountNonFinite(v); bad.Total() > 0 {
				nonFinite = append(nonFinite, fmt.Sprintf("%s holds %s of %d values", describe(r, p.name), bad, len(v)))
			}
			w[p.name] = v
			used[r.from[p.name]] = true
		}
	}
	if len(nonFinite) > 0 {
		return nil, nil, fmt.Errorf("weights hold non-finite values in %d tensor(s): %s; a model cannot start from them (was the checkpoint saved after training diverged?)", len(nonFinite), strings.Join(first(nonFinite, 8), "; "))
	}
	if len(missing) > 0 || len(wrong) > 0 {
		var parts []string
		if m := misfit(enc, r); m != "" {
			parts = append(parts, m)
		}
		if len(missing) > 0 {
			parts = append(parts, fmt.Sprintf("missing %d tensors: %s", len(missing), strings.Join(first(missing, 8), ", ")))
		}
		if len(wrong) > 0 {
			parts = append(parts, strings.Join(first(wrong, 8), "; "))
		}
		var unexpected []string
		for name := range f.Tensors {
			if !used[name] && !strings.HasSuffix(name, "num_batches_tracked") {
				unexpected = append(unexpected, name)
			}
		}
		if len(unexpected) > 0 && len(missing) > 0 {
			sort.Strings(unexpected)
			parts = append(parts, fmt.Sprintf("unused in the file: %s", strings.Join(first(unexpected, 8), ", ")))
		}
		return nil, nil, fmt.Errorf("weights (read as %s names) do not fit the %s encoder: %s (SPEC.md lists the tensor names)", r.format, enc.Arch, strings.Join(parts, "; "))
	}
	for name := range f.Tensors {
		if !used[name] {
			ignored = append(ignored, name)
		}
	}
	sort.Strings(ignored)
	return w, ignored, nil
}

// NonFinite counts the NaN and infinite values of a tensor.
type NonFinite struct{ NaN, Inf int }

// Total is the number of non-finite values.
func (n NonFinite) Total() int { return n.NaN + n.Inf }

func (n NonFinite) String() string {
	switch {
	case n.Inf == 0:
		return fmt.Sprintf("%d NaN", n.NaN)
	case n.NaN == 0:
		return fmt.Sprintf("%d infinite", n.Inf)
	}
	return fmt.Sprintf("%d NaN and %d infinite", n.NaN, n.Inf)
}

// CountNonFinite counts v's NaN and infinite values.
func CountNonFinite(v []float32) NonFinite {
	var n NonFinite
	for _, x := range v {
		if x-x != 0 { // NaN or ±Inf; checked precisely only then
			if x != x {
				n.NaN++
			} else {
				n.Inf++
			}
		}
	}
	return n
}

// describe names a tensor as gatepipe and, when it differs, as the file
// does.
func describe(r renamed, name string) string {
	if from := r.from[name]; from != name {
		return fmt.Sprintf("%s (%s in the file)", name, from)
	}
	return name
}

// fitTensor returns t's values for parameter p, or what is wrong with it.
// A tensor with p's elements and only unit axes besides (torchvision's
// ConvNeXt layer scale, [C, 1, 1]) fits; a ViT position embedding for
// another grid is resampled.
func fitTensor(enc EncoderSpec, p *param, t *safetensors.Tensor, shape []int) ([]float32, string) {
	switch t.DType {
	case safetensors.F32, safetensors.F16, safetensors.BF16, safetensors.F64:
	default:
		return nil, fmt.Sprintf("%s, want a float type (F32, F16, BF16)", t.DType)
	}
	if slices.Equal(t.Shape, p.shape) || (t.NumElements() == prod(p.shape) && squeezed(t.Shape, p.shape)) {
		return t.Float32s(), ""
	}
	if p.name == "encoder.pos_embed" && len(t.Shape) == 3 && t.Shape[0] == 1 && t.Shape[2] == p.shape[2] {
		v, err := enc.resamplePosEmbed(t.Float32s(), t.Shape[1], shape)
		if err != nil {
			return nil, err.Error()
		}
		return v, ""
	}
	return nil, fmt.Sprintf("%v, the encoder needs %v", t.Shape, p.shape)
}

// squeezed reports whether a and b are the same shape but for axes of 1.
func squeezed(a, b []int) bool {
	drop := func(s []int) []int {
		return slices.DeleteFunc(slices.Clone(s), func(d int) bool { return d == 1 })
	}
	return slices.Equal(drop(a), drop(b))
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

// Probabilities runs the classification model (encoder and head) in
// evaluation mode over d's examples and returns the softmax of its
// logits, N x classes: a source model's outputs on target data, as LEEP
// and NCE read them.
func Probabilities(enc EncoderSpec, w Weights, d *Data, classes int) ([]float32, error) {
	p := NewProbabilityModel(enc, w, classes)
	defer p.Close()
	return p.Probabilities(d)
}

// ProbabilityModel computes a classification model's softmax outputs of
// one Data after another with one built model (built for the first Data's
// example shape, again only if it changes), as FeatureExtractor does for
// features. Close it when done.
type ProbabilityModel struct {
	enc     EncoderSpec
	w       Weights
	classes int
	m       *model
	vm      G.VM
	xb      *tensor.Dense
	shape   []int
	batch   int
}

// NewProbabilityModel returns the model enc with its classification head
// of classes outputs and weights w, built on first use.
func NewProbabilityModel(enc EncoderSpec, w Weights, classes int) *ProbabilityModel {
	return &ProbabilityModel{enc: enc, w: w, classes: classes}
}

// Close releases the built model.
func (p *ProbabilityModel) Close() {
	if p.vm != nil {
		p.vm.Close()
		p.vm, p.m = nil, nil
	}
}

// prepare builds the model for d's examples unless it is built for them.
func (p *ProbabilityModel) prepare(d *Data) error {
	if p.vm != nil && slices.Equal(p.shape, d.Shape) && p.batch == d.evalBatch() {
		return nil
	}
	p.Close()
	batch := d.evalBatch()
	ps, err := newParams(p.enc, Classification, d.Shape, p.classes, 0)
	if err != nil {
		return err
	}
	m, err := build(p.enc, Classification, ps, d.Shape, p.classes, batch, p.w, false)
	if err != nil {
		return err
	}
	if err := G.Let(m.y, tensor.New(tensor.WithShape(batch, p.classes), tensor.Of(tensor.Float32))); err != nil {
		return err
	}
	p.m, p.vm, p.batch, p.shape = m, G.NewTapeMachine(m.g), batch, slices.Clone(d.Shape)
	p.xb = tensor.New(tensor.WithShape(append([]int{batch}, d.Shape...)...), tensor.Of(tensor.Float32))
	return nil
}

// Probabilities returns the softmax of the model's logits for d's
// examples, N x classes.
func (p *ProbabilityModel) Probabilities(d *Data) ([]float32, error) {
	if err := p.prepare(d); err != nil {
		return nil, err
	}
	classes, batch := p.classes, p.batch
	size, n := d.exampleSize(), d.Len()
	out := make([]float32, 0, n*classes)
	for off := 0; off < n; off += batch {
		xs := p.xb.Data().([]float32)
		clear(xs)
		cnt := min(batch, n-off)
		if err := d.readRange(xs[:cnt*size], off, cnt); err != nil {
			return nil, err
		}
		if err := G.Let(p.m.x, p.xb); err != nil {
			return nil, err
		}
		if err := p.vm.RunAll(); err != nil {
			return nil, err
		}
		logits := p.m.logitsVal.Data().([]float32)
		for i := range cnt {
			row := logits[i*classes : (i+1)*classes]
			top := row[0]
			for _, v := range row {
				top = max(top, v)
			}
			var sum float64
			for _, v := range row {
				sum += math.Exp(float64(v - top))
			}
			for _, v := range row {
				out = append(out, float32(math.Exp(float64(v-top))/sum))
			}
		}
		p.vm.Reset()
	}
	return out, nil
}

// Features runs the encoder (and its stem) in evaluation mode over d's
// examples with the given weights (initialisation from seed 0 where
// absent) and returns the pooled features, N x F, and F: what a linear
// probe trains on.
func Features(enc EncoderSpec, w Weights, d *Data) ([]float32, int, error) {
	return featuresBatched(enc, w, d, d.evalBatch())
}

// FeatureExtractor computes an encoder's pooled features of one Data
// after another with one built encoder (built for the first Data's example
// shape, again only if the shape changes): a split read a batch at a time
// builds its graph once, not once a batch. Close it when done.
type FeatureExtractor struct {
	enc   EncoderSpec
	w     Weights
	x     *extractor
	batch int // the batch x was built for
}

// NewFeatureExtractor returns an extractor of enc's features with weights w.
func NewFeatureExtractor(enc EncoderSpec, w Weights) *FeatureExtractor {
	return &FeatureExtractor{enc: enc, w: w}
}

// Features is Features(enc, w, d) with the extractor's built encoder.
func (f *FeatureExtractor) Features(d *Data) ([]float32, int, error) {
	if f.x == nil || !slices.Equal(f.x.shape, d.Shape) || f.batch != d.evalBatch() {
		f.Close()
		x, err := newExtractor(f.enc, f.w, d.Shape, d.evalBatch())
		if err != nil {
			return nil, 0, err
		}
		f.x, f.batch = x, d.evalBatch()
	}
	out, err := f.x.run(d)
	return out, f.x.dim, err
}

// Close releases the built encoder.
func (f *FeatureExtractor) Close() {
	if f.x != nil {
		f.x.close()
		f.x = nil
	}
}

// graphChunk bounds the input values of one pass of a Features graph.
const graphChunk = 1_250_000

// featuresBatched is Features with the given batch size.
func featuresBatched(enc EncoderSpec, w Weights, d *Data, batch int) ([]float32, int, error) {
	x, err := newExtractor(enc, w, d.Shape, batch)
	if err != nil {
		return nil, 0, err
	}
	defer x.close()
	out, err := x.run(d)
	return out, x.dim, err
}

// directPass computes n images' features into out without a graph.
type directPass interface {
	run(x []float32, n int, out []float32)
}

// extractor is a built frozen encoder graph: run computes the pooled
// features of a Data's examples a graph batch at a time.
type extractor struct {
	// direct, when set, computes the features without a graph (a ViT,
	// a ResNet).
	direct directPass
	vm     G.VM
	in     *G.Node
	val    G.Value
	batch  int
	shape  []int
	dim    int
}

func newExtractor(enc EncoderSpec, w Weights, shape []int, batch int) (*extractor, error) {
	blasOnce.Do(func() { cblas.Enable() })
	ps, err := newParams(enc, Classification, shape, 1, 0)
	if err != nil {
		return nil, err
	}
	var direct directPass
	var dim int
	switch {
	case canRunViTDirect(enc, shape):
		f, err := newViTForward(enc, ps, w, shape)
		if err != nil {
			return nil, err
		}
		direct, dim = f, f.outDim
	case canRunResNetDirect(enc, shape):
		f, err := newResNetForward(enc, ps, w, shape)
		if err != nil {
			return nil, err
		}
		direct, dim = f, f.outDim
	}
	if direct != nil {
		return &extractor{direct: direct, batch: max(1, batch), shape: slices.Clone(shape), dim: dim}, nil
	}
	return newGraphExtractor(enc, ps, w, shape, batch)
}

// newGraphExtractor builds the encoder's graph: every architecture.
func newGraphExtractor(enc EncoderSpec, ps []*param, w Weights, shape []int, batch int) (*extractor, error) {
	size := 1
	for _, s := range shape {
		size *= s
	}
	// The graph runs a chunk of the batch at a time: gorgonia's tape keeps
	// every intermediate value of a pass, which for a ResNet-50 batch of
	// 32 at 224x224 exceeds 20 GB. Chunks of about 1.2M input values
	// (8 such images) bound it; the outputs are the same.
	chunk := graphChunk
	if enc.Arch == "vit" {
		// A ViT keeps far more per input value (attention maps, the MLP's
		// 4x width through gorgonia's LayerNorm ops): a quarter of it.
		chunk /= 4
	}
	batch = max(1, min(batch, chunk/size))
	b := &builder{declared: map[string]*param{}, values: w, frozen: true}
	for _, p := range ps {
		b.declared[p.name] = p
	}
	x := &extractor{batch: batch, shape: slices.Clone(shape)}
	var feat *G.Node
	err := b.try(func() {
		b.g = G.NewGraph()
		xshape := append([]int{batch}, shape...)
		x.in = G.NewTensor(b.g, tensor.Float32, len(xshape), G.WithShape(xshape...), G.WithName("x"))
		feat, x.dim = enc.forward(b, x.in, shape)
	})
	if err != nil {
		return nil, err
	}
	G.Read(feat, &x.val)
	x.vm = G.NewTapeMachine(b.g)
	return x, nil
}

func (x *extractor) close() {
	if x.vm != nil {
		x.vm.Close()
	}
}

// directBatches runs the direct pass over a Data read from its store,
// directBatchBytes of inputs at a time, into out.
func (x *extractor) directBatches(d *Data, out []float32) ([]float32, error) {
	size, n := d.exampleSize(), d.Len()
	per := max(1, directBatchBytes/(4*max(size, 1)))
	xs := make([]float32, min(per, n)*size)
	for off := 0; off < n; off += per {
		cnt := min(per, n-off)
		if err := d.readRange(xs[:cnt*size], off, cnt); err != nil {
			return nil, err
		}
		x.direct.run(xs[:cnt*size], cnt, out[off*x.dim:(off+cnt)*x.dim])
	}
	return out, nil
}

// directBatchBytes bounds the inputs a direct pass over a stored split
// holds at a time.
const directBatchBytes = 64 << 20

func (x *extractor) run(d *Data) ([]float32, error) {
	size, n := d.exampleSize(), d.Len()
	if !slices.Equal(d.Shape, x.shape) {
		return nil, fmt.Errorf("features: examples of shape %v for an encoder built for %v", d.Shape, x.shape)
	}
	if x.direct != nil {
		out := make([]float32, n*x.dim)
		if d.Source != nil {
			return x.directBatches(d, out)
		}
		x.direct.run(d.X[:n*size], n, out)
		return out, nil
	}
	out := make([]float32, 0, n*x.dim)
	xb := tensor.New(tensor.WithShape(append([]int{x.batch}, d.Shape...)...), tensor.Of(tensor.Float32))
	for off := 0; off < n; off += x.batch {
		xs := xb.Data().([]float32)
		clear(xs)
		cnt := min(x.batch, n-off)
		if err := d.readRange(xs[:cnt*size], off, cnt); err != nil {
			return nil, err
		}
		if err := G.Let(x.in, xb); err != nil {
			return nil, err
		}
		if err := x.vm.RunAll(); err != nil {
			return nil, err
		}
		out = append(out, x.val.Data().([]float32)[:cnt*x.dim]...)
		x.vm.Reset()
	}
	return out, nil
}

// WriteWeights writes w, the weights of enc with a task head for examples
// of shape and the given outputs, as a safetensors file in gatepipe's
// tensor names and the parameters' shapes (what another runtime loads).
// Parameters w lacks (a head that starts fresh) are written from their
// initialisation with seed.
func WriteWeights(path string, enc EncoderSpec, task Task, shape []int, outputs int, w Weights, seed uint64) error {
	ps, err := newParams(enc, task, shape, outputs, seed)
	if err != nil {
		return err
	}
	return writeParams(path, ps, w)
}

// WriteEncoderWeights writes the encoder's tensors alone, as an image
// classifier of one image of shape [C, H, W] has them (its pooled
// features' layers included), for a head the torch worker builds and
// initialises itself (GATE's adapters).
func WriteEncoderWeights(path string, enc EncoderSpec, shape []int, w Weights, seed uint64) error {
	ps, err := newParams(enc, Classification, shape, 1, seed)
	if err != nil {
		return err
	}
	kept := ps[:0]
	for _, p := range ps {
		if strings.HasPrefix(p.name, "encoder.") {
			kept = append(kept, p)
		}
	}
	return writeParams(path, kept, w)
}

func writeParams(path string, ps []*param, w Weights) error {
	ts := make([]safetensors.Tensor, 0, len(ps))
	for _, p := range ps {
		v, ok := w[p.name]
		if !ok {
			v = p.init
		}
		n := 1
		for _, d := range p.shape {
			n *= d
		}
		if len(v) != n {
			return fmt.Errorf("weights: %s holds %d values for shape %v", p.name, len(v), p.shape)
		}
		ts = append(ts, safetensors.F32Tensor(p.name, p.shape, v))
	}
	return safetensors.WriteFile(path, ts, map[string]string{"format": "gatepipe"})
}
