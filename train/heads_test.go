package train

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// bands makes n [1, 8, 8] images where each of three row bands is bright
// with probability 1/2: multi-label targets say which are, regression
// targets count them.
func bands(n int, seed uint64, task Task) *Data {
	r := rand.New(rand.NewPCG(seed, 4))
	d := &Data{Shape: []int{1, 8, 8}, Task: task}
	for i := 0; i < n; i++ {
		on := [3]bool{r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0}
		count := 0
		for y := 0; y < 8; y++ {
			for x := 0; x < 8; x++ {
				v := float32(r.NormFloat64() * 0.3)
				if y/3 < 3 && on[y/3] {
					v += 1.5
				}
				d.X = append(d.X, v)
			}
		}
		for _, b := range on {
			if b {
				count++
			}
			if task == MultiLabel {
				d.T = append(d.T, map[bool]float32{true: 1, false: 0}[b])
			}
		}
		if task == Regression {
			d.T = append(d.T, float32(count))
		}
	}
	return d
}

func TestTasksLearn(t *testing.T) {
	rec := Recipe{LR: 0.01, WeightDecay: 0.01, BatchSize: 16, Iterations: 150, ValidateEvery: 50, TopK: 2, PlateauFactor: 0.5, PlateauPatience: 3, PlateauThreshold: 1e-4}
	enc := EncoderSpec{Arch: "convnet", Channels: []int{4}, Hidden: []int{16}}
	res, err := Train(context.Background(), enc, nil, 3, rec, bands(200, 1, MultiLabel), bands(60, 2, MultiLabel), bands(120, 3, MultiLabel), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Metrics["aps"] < 95 || res.Metrics["auc"] < 95 || res.Metrics["brier"] > 0.05 || res.Metrics["aps/2"] == 0 {
		t.Errorf("multi-label: %v", res.Metrics)
	}
	res, err = Train(context.Background(), enc, nil, 1, rec, bands(200, 1, Regression), bands(60, 2, Regression), bands(120, 3, Regression), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	// Predicting the mean count (1.5) gives an MAE near 0.75.
	if res.Metrics["mae"] > 0.3 || math.Abs(res.Metrics["mse"]-res.Metrics["loss"]) > 1e-12 {
		t.Errorf("regression: %v", res.Metrics)
	}
}

// TestAveragePrecisionAndAUC against values computed by hand (and by
// sklearn's average_precision_score / roc_auc_score).
func TestAveragePrecisionAndAUC(t *testing.T) {
	for _, c := range []struct {
		scores  []float64
		truth   []bool
		ap, auc float64
	}{
		// Ranked: + - + -: AP = (1/1 + 2/3) / 2; AUC: 3 of 4 pairs.
		{[]float64{0.9, 0.8, 0.7, 0.1}, []bool{true, false, true, false}, (1 + 2.0/3) / 2, 0.75},
		{[]float64{0.9, 0.8, 0.7, 0.1}, []bool{true, true, false, false}, 1, 1},
		// All tied: AP = prevalence, AUC = 0.5.
		{[]float64{0.5, 0.5, 0.5, 0.5}, []bool{true, false, false, false}, 0.25, 0.5},
		// sklearn: average_precision_score([0,1,1,0,1],[.1,.4,.35,.8,.9]) = 0.8055...
		{[]float64{0.1, 0.4, 0.35, 0.8, 0.9}, []bool{false, true, true, false, true}, (1 + 2.0/3 + 3.0/4) / 3, 4.0 / 6},
	} {
		ap, auc, ok := averagePrecision(c.scores, c.truth)
		if !ok || math.Abs(ap-c.ap) > 1e-12 || math.Abs(auc-c.auc) > 1e-12 {
			t.Errorf("%v %v: ap %v auc %v, want %v %v", c.scores, c.truth, ap, auc, c.ap, c.auc)
		}
	}
	if _, _, ok := averagePrecision([]float64{1, 2}, []bool{true, true}); ok {
		t.Error("a label with no negatives has no AP")
	}
}

func TestHeadGradients(t *testing.T) {
	for _, task := range []Task{MultiLabel, Regression} {
		t.Run(string(task), func(t *testing.T) {
			gradCase{shape: []int{3, 4}, seed: 5, layer: func(b *builder, x *G.Node) *G.Node {
				z := b.linear(x, "head", 4, 2, true)
				_, loss := headLoss(b, task, z, b.constant([]int{3, 2}, []float32{1, 0, 0, 1, 1, 1}), 3)
				return loss
			}}.check(t)
		})
	}
}

// TestBilinearMatchesPyTorch: 2x2 -> 4x4 as F.interpolate(mode="bilinear",
// align_corners=False) computes it, one axis at a time as upsample does.
func TestBilinearMatchesPyTorch(t *testing.T) {
	ay, ax := bilinearAxis(2, 4), bilinearAxis(2, 4)
	in := []float32{1, 2, 3, 4}
	want := []float32{1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}
	for oy := range 4 {
		for ox := range 4 {
			var v float32
			for iy := range 2 {
				for ix := range 2 {
					v += in[iy*2+ix] * ay[iy*4+oy] * ax[ix*4+ox]
				}
			}
			if o := oy*4 + ox; math.Abs(float64(v-want[o])) > 1e-6 {
				t.Fatalf("pixel %d: %v, want %v", o, v, want[o])
			}
		}
	}
}

// squares makes [1, 8, 8] images with a bright 3x3 square at a random
// place: the mask marks its pixels (class 1) on background (class 0).
func squares(n int, seed uint64) *Data {
	r := rand.New(rand.NewPCG(seed, 6))
	d := &Data{Shape: []int{1, 8, 8}, Task: Segmentation}
	for i := 0; i < n; i++ {
		x0, y0 := r.IntN(6), r.IntN(6)
		for y := 0; y < 8; y++ {
			for x := 0; x < 8; x++ {
				in := x >= x0 && x < x0+3 && y >= y0 && y < y0+3
				v := float32(r.NormFloat64() * 0.3)
				var c int64
				if in {
					v, c = v+1.5, 1
				}
				d.X = append(d.X, v)
				d.Y = append(d.Y, c)
			}
		}
	}
	return d
}

func TestSegmentationLearns(t *testing.T) {
	rec := Recipe{LR: 0.01, WeightDecay: 0.01, BatchSize: 16, Iterations: 120, ValidateEvery: 40, TopK: 2, PlateauFactor: 0.5, PlateauPatience: 3, PlateauThreshold: 1e-4}
	for _, enc := range []EncoderSpec{{Arch: "convnet", Channels: []int{8}}, {Arch: "vit", Patch: 2, Dim: 16, Depth: 1, Heads: 2, MLPRatio: 2}} {
		t.Run(enc.Arch, func(t *testing.T) {
			res, err := Train(context.Background(), enc, nil, 2, rec, squares(200, 1), squares(40, 2), squares(80, 3), nil, nil, Resume{})
			if err != nil {
				t.Fatal(err)
			}
			// Predicting background everywhere scores mIoU about 43.
			if res.Metrics["miou"] < 70 || res.Metrics["overall_acc"] < 90 || res.Metrics["dice"] < 80 {
				t.Errorf("%v", res.Metrics)
			}
		})
	}
}

func TestSegmentationHeadGradients(t *testing.T) {
	enc := EncoderSpec{Arch: "convnet", Channels: []int{3}}
	y := make([]float32, 2*4*4)
	for px := range y {
		y[px] = float32(px % 3 % 2)
	}
	gradCase{shape: []int{2, 1, 4, 4}, seed: 7, layer: func(b *builder, x *G.Node) *G.Node {
		z := b.segmentationMaps(enc, x, []int{1, 4, 4}, 2) // [2, 2, 2, 2]: pooled, upsampled by the loss
		return b.pixelCrossEntropy(z, b.constant([]int{2, 16}, y), 4, 4)
	}}.check(t)
}

// clips makes [3, 1, 6, 6] clips of a bright column moving left or right
// one pixel per frame; the class is the direction.
func clips(n int, seed uint64) *Data {
	r := rand.New(rand.NewPCG(seed, 8))
	d := &Data{Shape: []int{3, 1, 6, 6}, Task: Video}
	for i := 0; i < n; i++ {
		dir := r.IntN(2)
		start := 1 + r.IntN(2)
		if dir == 0 {
			start += 2
		}
		for f := 0; f < 3; f++ {
			col := start + f
			if dir == 0 {
				col = start - f
			}
			for y := 0; y < 6; y++ {
				for x := 0; x < 6; x++ {
					v := float32(r.NormFloat64() * 0.2)
					if x == col {
						v += 1.5
					}
					d.X = append(d.X, v)
				}
			}
		}
		d.Y = append(d.Y, int64(dir))
	}
	return d
}

func TestVideoLearns(t *testing.T) {
	rec := Recipe{LR: 0.003, WeightDecay: 0.01, BatchSize: 16, Iterations: 150, ValidateEvery: 50, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3, PlateauThreshold: 1e-4}
	enc := EncoderSpec{Arch: "convnet", Channels: []int{4}, Hidden: []int{16}, Head: HeadSpec{Layers: 1, Dim: 16, Heads: 2}}
	res, err := Train(context.Background(), enc, nil, 2, rec, clips(200, 1), clips(40, 2), clips(80, 3), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	// A single frame cannot tell the direction: chance is 50%.
	if res.Metrics["acc1"] < 90 {
		t.Errorf("%v", res.Metrics)
	}
}

func TestVideoHeadGradients(t *testing.T) {
	enc := EncoderSpec{Arch: "mlp", Hidden: []int{4}, Head: HeadSpec{Layers: 1, Dim: 4, Heads: 2}}
	gradCase{shape: []int{2, 3, 1, 2, 2}, seed: 9, layer: func(b *builder, x *G.Node) *G.Node {
		return b.videoHead(enc, x, []int{3, 1, 2, 2}, 3)
	}}.check(t)
}

// askBands makes [1, 6, 6] images with one bright row band of three and a
// one-token question naming a band; the answer is yes (1) when it is the
// bright one. Neither the image nor the question alone answers it.
func askBands(n int, seed uint64) *Data {
	r := rand.New(rand.NewPCG(seed, 10))
	d := &Data{Shape: []int{1, 6, 6}, Task: Relational, QLen: 1, Vocab: 3}
	for i := 0; i < n; i++ {
		band, asked := r.IntN(3), r.IntN(3)
		if r.IntN(2) == 0 {
			asked = band // balance yes and no
		}
		for y := 0; y < 6; y++ {
			for x := 0; x < 6; x++ {
				v := float32(r.NormFloat64() * 0.2)
				if y/2 == band {
					v += 1.5
				}
				d.X = append(d.X, v)
			}
		}
		d.Q = append(d.Q, int64(asked))
		d.Y = append(d.Y, map[bool]int64{true: 1, false: 0}[band == asked])
	}
	return d
}

func TestRelationalLearns(t *testing.T) {
	rec := Recipe{LR: 0.003, WeightDecay: 0.01, BatchSize: 16, Iterations: 300, ValidateEvery: 100, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3, PlateauThreshold: 1e-4}
	enc := EncoderSpec{Arch: "convnet", Channels: []int{4}, Hidden: []int{16}, Head: HeadSpec{Layers: 1, Dim: 16, Heads: 2}}
	res, err := Train(context.Background(), enc, nil, 2, rec, askBands(300, 1), askBands(60, 2), askBands(120, 3), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	// Answering from the question or the image alone scores about 50%.
	if res.Metrics["acc1"] < 90 {
		t.Errorf("%v", res.Metrics)
	}
}

func TestRelationalHeadGradients(t *testing.T) {
	enc := EncoderSpec{Arch: "mlp", Hidden: []int{4}, Head: HeadSpec{Layers: 1, Dim: 4, Heads: 2, QLen: 2, Vocab: 3}}
	q := []float32{1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0} // 2 examples x 2 tokens, one-hot over 3
	gradCase{shape: []int{2, 1, 2, 2}, seed: 12, layer: func(b *builder, x *G.Node) *G.Node {
		return b.relationalHead(enc, x, b.constant([]int{4, 3}, q), []int{1, 2, 2}, 3)
	}}.check(t)
}

// pairs makes [1, 6, 6] images with one bright cell of a 3x3 grid and a
// one-token caption naming the cell.
func pairs(n int, seed uint64) *Data {
	r := rand.New(rand.NewPCG(seed, 11))
	d := &Data{Shape: []int{1, 6, 6}, Task: Retrieval, QLen: 2, Vocab: 10}
	for i := 0; i < n; i++ {
		cell := r.IntN(9)
		for y := 0; y < 6; y++ {
			for x := 0; x < 6; x++ {
				v := float32(r.NormFloat64() * 0.2)
				if (y/2)*3+x/2 == cell {
					v += 1.5
				}
				d.X = append(d.X, v)
			}
		}
		d.Q = append(d.Q, int64(1+cell), 0)
		d.Y = append(d.Y, int64(i))
	}
	return d
}

func TestRetrievalLearns(t *testing.T) {
	rec := Recipe{LR: 0.003, WeightDecay: 0.01, BatchSize: 16, Iterations: 300, ValidateEvery: 100, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3, PlateauThreshold: 1e-4}
	enc := EncoderSpec{Arch: "convnet", Channels: []int{4}, Hidden: []int{16}, Head: HeadSpec{Dim: 16}}
	res, err := Train(context.Background(), enc, nil, 0, rec, pairs(300, 1), pairs(60, 2), pairs(120, 3), nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	// Nine distinct captions: chance Acc@1 is about 11%.
	if res.Metrics["i2t_acc1"] < 90 || res.Metrics["t2i_acc1"] < 90 || res.Metrics["i2t_acc5"] < res.Metrics["i2t_acc1"] {
		t.Errorf("%v", res.Metrics)
	}
}

func TestRetrievalHeadGradients(t *testing.T) {
	enc := EncoderSpec{Arch: "mlp", Hidden: []int{4}, Head: HeadSpec{Dim: 4, QLen: 2, Vocab: 3}}
	q := []float32{1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1}
	gradCase{shape: []int{3, 1, 2, 2}, seed: 13, layer: func(b *builder, x *G.Node) *G.Node {
		z, _ := b.retrievalHead(enc, x, b.constant([]int{6, 3}, q), []int{1, 2, 2})
		return b.retrievalLoss(z)
	}}.check(t)
}

// TestRetrievalMetricsCountSharedCaptions: an image whose caption another
// image shares is a hit on either.
func TestRetrievalMetricsCountSharedCaptions(t *testing.T) {
	d := &Data{Task: Retrieval, QLen: 1, Q: []int64{1, 1, 2}}
	// Image and text halves: images 0 and 1 match texts 0 and 1 equally
	// (both captioned 1), image 2 matches text 2.
	emb := [][]float32{{1, 0, 1, 0}, {1, 0, 1, 0}, {0, 1, 0, 1}}
	m := retrievalMetrics(d, emb)
	if m["i2t_acc1"] != 100 || m["t2i_acc1"] != 100 {
		t.Fatalf("%v", m)
	}
	// Image 2 now looks like the others: its best texts have caption 1.
	emb[2] = []float32{1, 0, 0, 1}
	m = retrievalMetrics(d, emb)
	if math.Abs(m["i2t_acc1"]-200.0/3) > 1e-9 || m["i2t_acc5"] != 100 {
		t.Fatalf("%v", m)
	}
}

// cells makes [1, 6, 6] images whose class is which cell of a 3x3 grid is
// bright, drawing only from the given classes.
func cells(n int, seed uint64, classes []int) *Data {
	r := rand.New(rand.NewPCG(seed, 12))
	d := &Data{Shape: []int{1, 6, 6}, Task: FewShot}
	for i := 0; i < n; i++ {
		cell := classes[r.IntN(len(classes))]
		for y := 0; y < 6; y++ {
			for x := 0; x < 6; x++ {
				v := float32(r.NormFloat64() * 0.3)
				if (y/2)*3+x/2 == cell {
					v += 1.5
				}
				d.X = append(d.X, v)
			}
		}
		d.Y = append(d.Y, int64(cell))
	}
	return d
}

// TestFewShotGeneralisesToHeldOutClasses: trained on episodes of six
// classes, the prototypes separate three classes never seen in training.
func TestFewShotGeneralisesToHeldOutClasses(t *testing.T) {
	rec := Recipe{LR: 0.003, WeightDecay: 0.01, Iterations: 150, ValidateEvery: 50, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3, PlateauThreshold: 1e-4}
	enc := EncoderSpec{Arch: "convnet", Channels: []int{8}, Hidden: []int{16}, Head: HeadSpec{Ways: 3, Shots: 3, Queries: 3}}
	trainD := cells(300, 1, []int{0, 1, 2, 3, 4, 5})
	val, test := cells(60, 2, []int{6, 7, 8}), cells(90, 3, []int{6, 7, 8})
	res, err := Train(context.Background(), enc, nil, 9, rec, trainD, val, test, nil, nil, Resume{})
	if err != nil {
		t.Fatal(err)
	}
	// Chance is 33%.
	if res.Metrics["acc1"] < 80 || res.Metrics["acc1_1shot"] == 0 || res.Metrics["acc1_3shot"] < res.Metrics["acc1_1shot"]-5 {
		t.Errorf("%v", res.Metrics)
	}
	// Too few classes for the episode's ways is an error, not a panic.
	enc.Head.Ways = 7
	if _, err := Train(context.Background(), enc, nil, 9, rec, trainD, val, test, nil, nil, Resume{}); err == nil {
		t.Error("7-way episodes from 6 classes: no error")
	}
}

func TestPrototypeGradients(t *testing.T) {
	gradCase{shape: []int{2 * (2 + 1), 3}, seed: 14, layer: func(b *builder, x *G.Node) *G.Node {
		feat := b.linear(x, "enc", 3, 4, true)
		z := b.prototypeLogits(feat, 4, 2, 2, 1)
		_, loss := crossEntropyOn(b, z, b.constant([]int{2, 2}, []float32{1, 0, 0, 1}), 2)
		return loss
	}}.check(t)
}

// TestModalityStem: an encoder declared for [3, 4, 4] inputs trains on
// [1, 8, 8] images (patchify 2x2 + projection to 3 channels) and on
// 64-feature vectors (a projection reshaped to [3, 4, 4]).
func TestModalityStem(t *testing.T) {
	rec := Recipe{LR: 0.01, WeightDecay: 0.01, BatchSize: 16, Iterations: 80, ValidateEvery: 40, TopK: 1, PlateauFactor: 0.5, PlateauPatience: 3, PlateauThreshold: 1e-4}
	enc := EncoderSpec{Arch: "convnet", Channels: []int{4}, Hidden: []int{16}, InputShape: []int{3, 4, 4}}
	vectors := func(d *Data) *Data {
		v := *d
		v.Shape = []int{64}
		return &v
	}
	for name, data := range map[string][3]*Data{
		"image":  {blobs(120, 1), blobs(60, 2), blobs(90, 3)},
		"vector": {vectors(blobs(120, 1)), vectors(blobs(60, 2)), vectors(blobs(90, 3))},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Train(context.Background(), enc, nil, 3, rec, data[0], data[1], data[2], nil, nil, Resume{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := res.Checkpoints[0].Values["stem.proj.weight"]; !ok || res.Metrics["acc1"] < 90 {
				t.Errorf("stem weights %v, %v", ok, res.Metrics)
			}
		})
	}
}

func TestStemGradients(t *testing.T) {
	enc := EncoderSpec{Arch: "convnet", Channels: []int{2}, InputShape: []int{2, 3, 3}}
	gradCase{shape: []int{2, 1, 4, 4}, seed: 15, layer: func(b *builder, x *G.Node) *G.Node {
		y, _ := enc.stem(b, x, []int{1, 4, 4}) // patch 1 conv, then 4x4 -> 3x3 resize
		return y
	}}.check(t)
}

// TestViTUnderTransformerHeads: a ViT under the relational head (7 tokens
// against the ViT's 5 or 17) differentiates; selecting the first token
// with constant products broke gorgonia's symbolic differentiation here.
func TestViTUnderTransformerHeads(t *testing.T) {
	for _, img := range []int{4, 8} {
		enc := EncoderSpec{Arch: "vit", Patch: 2, Dim: 8, Depth: 1, Heads: 2, MLPRatio: 2, Head: HeadSpec{Layers: 1, Dim: 4, Heads: 2, QLen: 6, Vocab: 5}}
		shape := []int{1, img, img}
		ps, err := newParams(enc, Relational, shape, 4, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := build(enc, Relational, ps, shape, 4, 2, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := G.Grad(m.loss, m.nodes()...); err != nil {
			t.Errorf("%dx%d images: %v", img, img, err)
		}
	}
}

func TestDefaultLRFollowsThePaper(t *testing.T) {
	for _, c := range []struct {
		arch string
		task Task
		want float64
	}{{"convnet", Classification, 1e-3}, {"resnet", Segmentation, 6e-4}, {"vit", Classification, 1e-5}, {"vit", Segmentation, 1e-5}} {
		if got := DefaultLR(c.arch, c.task); got != c.want {
			t.Errorf("%s %s: %g, want %g", c.arch, c.task, got, c.want)
		}
	}
}

// TestSegmentationEnsembleScoresAsItGoes: scoring a top-k ensemble's
// segmentation a batch at a time (evaluateSegmentation) gives the metrics
// of its whole averaged probabilities, over more than one batch.
func TestSegmentationEnsembleScoresAsItGoes(t *testing.T) {
	enc := EncoderSpec{Arch: "convnet", Channels: []int{4}}
	d := squares(300, 7) // two evaluation batches of 250 and 50
	ps, err := newParams(enc, Segmentation, d.Shape, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 8))
	var sets []map[string][]float32
	for range 3 {
		set := map[string][]float32{}
		for _, p := range ps {
			v := make([]float32, len(p.init))
			for i := range v {
				v[i] = float32(r.NormFloat64() * 0.5)
			}
			set[p.name] = v
		}
		sets = append(sets, set)
	}
	pred, err := ensemblePredictions(enc, ps, 2, d, sets, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := segmentationMetrics(d, pred, 2)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := evaluate(enc, ps, 2, d, sets, nil)
	if err != nil {
		t.Fatal(err)
	}
	one, _, err := evaluate(enc, ps, 2, d, sets[:1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if one["loss"] == want["loss"] {
		t.Fatalf("one set scores as the ensemble does (%v): the sets do not differ", one)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g-w) > 1e-9*(1+math.Abs(w)) {
			t.Errorf("%s: %v, the whole averaged probabilities give %v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
}
