package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
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
var Tasks = []Task{Classification, MultiLabel, Regression, Segmentation, Video, Relational, Retrieval, FewShot}

// Video: the encoder on every frame of a clip [T, C, H, W], a temporal
// transformer over the frames' features (the paper's video adapter), mean
// pooling over time and a linear classifier; Data.Y holds a class per clip.
const Video Task = "video"

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

// videoHead returns clip logits [B, K] for x [B, T, C, H, W]: frame
// features [B*T, F] projected to D ("head.proj"), a learned time embedding
// ("head.pos_embed" [1, T, D]), pre-norm transformer blocks
// ("head.blocks.<i>.*" as the ViT's), a final norm ("head.norm"), the mean
// over time and a linear classifier ("head.fc").
func (b *builder) videoHead(enc EncoderSpec, x *G.Node, shape []int, classes int) *G.Node {
	h := enc.Head.withDefaults()
	if h.Dim%h.Heads != 0 {
		b.fail("video head: dim %d is not a multiple of heads %d", h.Dim, h.Heads)
	}
	batch, frames := x.Shape()[0], shape[0]
	frameShape := shape[1:]
	flat := b.must(G.Reshape(x, append(tensor.Shape{batch * frames}, frameShape...)))
	feat, f := enc.forward(b, flat, frameShape)
	cur := b.linear(feat, "head.proj", f, h.Dim, true)
	pos := b.tensorOf("head.pos_embed", []int{1, frames, h.Dim}, false, b.truncNormal(0.02))
	cur = b.must(G.BroadcastAdd(b.must(G.Reshape(cur, tensor.Shape{batch, frames, h.Dim})), pos, nil, []byte{0}))
	cur = b.headTransformer(b.must(G.Reshape(cur, tensor.Shape{batch * frames, h.Dim})), batch, frames, h)
	pooled := b.must(G.HadamardProd(b.sum(b.must(G.Reshape(cur, tensor.Shape{batch, frames, h.Dim})), 1), b.scalar(float32(1)/float32(frames))))
	return b.linear(pooled, "head.fc", h.Dim, classes, true)
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
	case Regression:
		d := b.must(G.Sub(z, y))
		loss = b.must(G.HadamardProd(b.must(G.Sum(b.must(G.Square(d)))), b.scalar(float32(1)/float32(batch*z.Shape()[1]))))
		return z, loss
	default:
		return crossEntropyOn(b, z, y, batch)
	}
}

// targetRow writes example k's target row (one-hot, labels or
// standardised values) into dst.
func (d *Data) targetRow(dst []float32, k int, std *standardizer) {
	switch d.task() {
	case Classification, Video, Relational:
		clear(dst)
		dst[d.Y[k]] = 1
	case Segmentation:
		clear(dst)
		classes := len(dst) / d.pixels()
		for px, y := range d.Y[k*d.pixels() : (k+1)*d.pixels()] {
			dst[px*classes+int(y)] = 1
		}
	default:
		copy(dst, d.T[k*len(dst):(k+1)*len(dst)])
		if std != nil {
			for j := range dst {
				dst[j] = float32((float64(dst[j]) - std.mean[j]) / std.std[j])
			}
		}
	}
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

// metrics computes a task's metrics from predictions (ensemble averages;
// regression values already in target units).
func metrics(task Task, d *Data, pred [][]float32, outputs int) map[string]float64 {
	switch task {
	case Segmentation:
		return segmentationMetrics(d, pred, outputs)
	case Retrieval:
		return retrievalMetrics(d, pred)
	case MultiLabel:
		return multiLabelMetrics(d, pred)
	case Regression:
		return regressionMetrics(d, pred)
	default:
		return classificationMetrics(d, pred)
	}
}

func classificationMetrics(d *Data, probs [][]float32) map[string]float64 {
	var acc1, acc5, loss float64
	for i, p := range probs {
		y := int(d.Y[i])
		rank := 0
		for c := range p {
			if p[c] > p[y] {
				rank++
			}
		}
		if rank == 0 {
			acc1++
		}
		if rank < 5 {
			acc5++
		}
		loss -= math.Log(float64(p[y]) + 1e-7)
	}
	n := float64(len(probs))
	return map[string]float64{"acc1": 100 * acc1 / n, "acc5": 100 * acc5 / n, "loss": loss / n}
}

func regressionMetrics(d *Data, pred [][]float32) map[string]float64 {
	var mae, mse float64
	k := 0
	for i, p := range pred {
		for j, v := range p {
			e := float64(v) - float64(d.T[i*len(p)+j])
			mae += math.Abs(e)
			mse += e * e
			k++
		}
	}
	return map[string]float64{"mae": mae / float64(k), "mse": mse / float64(k), "loss": mse / float64(k)}
}

// multiLabelMetrics: macro average precision and ROC-AUC over labels with
// at least one positive and one negative (in %, as the paper prints), the
// Brier score, the binary cross-entropy, and per label "aps/<j>",
// "auc/<j>" and "bs/<j>".
func multiLabelMetrics(d *Data, prob [][]float32) map[string]float64 {
	out := map[string]float64{}
	if len(prob) == 0 {
		return out
	}
	labels := len(prob[0])
	var apSum, aucSum, brier, bce float64
	counted := 0
	for j := 0; j < labels; j++ {
		scores := make([]float64, len(prob))
		truth := make([]bool, len(prob))
		var bs float64
		for i := range prob {
			p := float64(prob[i][j])
			y := float64(d.T[i*labels+j])
			scores[i], truth[i] = p, y > 0.5
			bs += (p - y) * (p - y)
			p = math.Min(math.Max(p, 1e-7), 1-1e-7)
			bce -= y*math.Log(p) + (1-y)*math.Log(1-p)
		}
		brier += bs
		out[fmt.Sprintf("bs/%d", j)] = bs / float64(len(prob))
		ap, auc, ok := averagePrecision(scores, truth)
		if ok {
			apSum += ap
			aucSum += auc
			counted++
			out[fmt.Sprintf("aps/%d", j)] = 100 * ap
			out[fmt.Sprintf("auc/%d", j)] = 100 * auc
		}
	}
	n := float64(len(prob) * labels)
	out["brier"], out["loss"] = brier/n, bce/n
	if counted > 0 {
		out["aps"], out["auc"] = 100*apSum/float64(counted), 100*aucSum/float64(counted)
	}
	return out
}

// averagePrecision returns the average precision (sklearn's definition:
// precision at each positive, ranked by score, ties broken by order) and
// the ROC-AUC (Mann-Whitney with tied scores counted half); ok is false
// when the labels are all one class.
func averagePrecision(scores []float64, truth []bool) (ap, auc float64, ok bool) {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	pos := 0
	for _, t := range truth {
		if t {
			pos++
		}
	}
	neg := len(truth) - pos
	if pos == 0 || neg == 0 {
		return 0, 0, false
	}
	// AP over groups of tied scores, as sklearn does.
	tp, fp := 0, 0
	prevRecall := 0.0
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && scores[idx[j]] == scores[idx[i]] {
			if truth[idx[j]] {
				tp++
			} else {
				fp++
			}
			j++
		}
		recall := float64(tp) / float64(pos)
		ap += (recall - prevRecall) * float64(tp) / float64(tp+fp)
		prevRecall = recall
		i = j
	}
	// AUC: for each positive, the negatives ranked below it (ties half).
	var wins float64
	negBelow := 0
	for i := len(idx) - 1; i >= 0; {
		j := i
		tiedPos, tiedNeg := 0, 0
		for j >= 0 && scores[idx[j]] == scores[idx[i]] {
			if truth[idx[j]] {
				tiedPos++
			} else {
				tiedNeg++
			}
			j--
		}
		wins += float64(tiedPos) * (float64(negBelow) + 0.5*float64(tiedNeg))
		negBelow += tiedNeg
		i = j
	}
	return ap, wins / float64(pos*neg), true
}

// selectionScore is the validation number checkpoints are ranked by,
// higher is better: accuracy, macro AP, or minus the MAE.
func selectionScore(task Task, m map[string]float64) float64 {
	switch task {
	case MultiLabel:
		return m["aps"]
	case Regression:
		return -m["mae"]
	case Segmentation:
		return m["miou"]
	case Retrieval:
		return (m["i2t_acc1"] + m["t2i_acc1"]) / 2
	default:
		return m["acc1"]
	}
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

// Metric is a named result with its direction.
type Metric struct {
	Name           string
	Value          float64
	HigherIsBetter bool
}

// PaperMetrics names a task's metrics as the GATE results matrix does
// (Acc@1, APS Macro, "0 AUC", MAE Score...).
func PaperMetrics(task Task, m map[string]float64) []Metric {
	var out []Metric
	add := func(name, key string, higher bool) {
		if v, ok := m[key]; ok {
			out = append(out, Metric{name, v, higher})
		}
	}
	switch task {
	case MultiLabel:
		add("APS Macro", "aps", true)
		add("AUC Macro", "auc", true)
		add("BS Macro", "brier", false)
		add("Loss", "loss", false)
		for j := 0; ; j++ {
			if _, ok := m[fmt.Sprintf("bs/%d", j)]; !ok {
				break
			}
			add(fmt.Sprintf("%d APS", j), fmt.Sprintf("aps/%d", j), true)
			add(fmt.Sprintf("%d AUC", j), fmt.Sprintf("auc/%d", j), true)
			add(fmt.Sprintf("%d BS", j), fmt.Sprintf("bs/%d", j), false)
		}
	case Regression:
		add("MAE Score", "mae", false)
		add("MSE Loss", "mse", false)
	case Segmentation:
		add("mIoU", "miou", true)
		add("Mean Acc@", "mean_acc", true)
		add("Overall Acc@", "overall_acc", true)
		add("Dice Score", "dice", true)
		add("CE Loss", "loss", false)
	case Retrieval:
		add("Img2Txt Acc@1", "i2t_acc1", true)
		add("Img2Txt Acc@5", "i2t_acc5", true)
		add("Img2Txt Loss", "i2t_loss", false)
		add("Txt2Img Acc@1", "t2i_acc1", true)
		add("Txt2Img Acc@5", "t2i_acc5", true)
		add("Txt2Img Loss", "t2i_loss", false)
	default:
		add("Acc@1", "acc1", true)
		add("Acc@5", "acc5", true)
		add("Loss", "loss", false)
	}
	return out
}

// Segmentation: a 1x1 conv head on the encoder's feature map, bilinear
// upsampling to the image size and per-pixel softmax cross-entropy;
// Data.Y holds a class per pixel.
const Segmentation Task = "segmentation"

// segmentationHead returns per-pixel logits [B*H*W, K] for x [B, C, H, W]:
// the feature map's 1x1 conv ("head.weight" [K, C, 1, 1], "head.bias"),
// upsampled bilinearly (PyTorch's align_corners=False) as a product with a
// constant [h*w, H*W] matrix.
func (b *builder) segmentationHead(enc EncoderSpec, x *G.Node, shape []int, classes int) *G.Node {
	batch, height, width := x.Shape()[0], shape[1], shape[2]
	fm, c := enc.spatial(b, x, shape)
	z := b.conv(fm, "head", c, classes, 1, 1, 0, true) // [B, K, h, w]
	h, w := z.Shape()[2], z.Shape()[3]
	up := b.constant([]int{h * w, height * width}, bilinear(h, w, height, width))
	z = b.must(G.Mul(b.must(G.Reshape(z, tensor.Shape{batch * classes, h * w})), up))
	z = b.must(G.Transpose(b.must(G.Reshape(z, tensor.Shape{batch, classes, height * width})), 0, 2, 1))
	return b.must(G.Reshape(z, tensor.Shape{batch * height * width, classes}))
}

// bilinear is the [h*w, H*W] matrix of bilinear interpolation weights from
// an h x w grid to H x W (half-pixel centres, edges clamped).
func bilinear(h, w, height, width int) []float32 {
	weights := func(in, out int) [][2]struct {
		i int
		w float64
	} {
		ws := make([][2]struct {
			i int
			w float64
		}, out)
		for o := range ws {
			src := (float64(o)+0.5)*float64(in)/float64(out) - 0.5
			src = math.Max(src, 0)
			i0 := min(int(math.Floor(src)), in-1)
			i1 := min(i0+1, in-1)
			f := src - float64(i0)
			ws[o][0].i, ws[o][0].w = i0, 1-f
			ws[o][1].i, ws[o][1].w = i1, f
		}
		return ws
	}
	wy, wx := weights(h, height), weights(w, width)
	m := make([]float32, h*w*height*width)
	for oy := 0; oy < height; oy++ {
		for ox := 0; ox < width; ox++ {
			col := oy*width + ox
			for _, a := range wy[oy] {
				for _, c := range wx[ox] {
					m[(a.i*w+c.i)*height*width+col] += float32(a.w * c.w)
				}
			}
		}
	}
	return m
}

// segmentationMetrics: mIoU and mean per-class pixel accuracy over the
// classes present in the truth or the prediction, overall pixel accuracy,
// mean Dice (all in %) and the per-pixel cross-entropy.
func segmentationMetrics(d *Data, prob [][]float32, classes int) map[string]float64 {
	conf := make([][]float64, classes) // [truth][pred]
	for i := range conf {
		conf[i] = make([]float64, classes)
	}
	var loss float64
	pixels := 0
	for i, p := range prob {
		n := len(p) / classes
		for px := 0; px < n; px++ {
			row := p[px*classes : (px+1)*classes]
			best := 0
			for k := range row {
				if row[k] > row[best] {
					best = k
				}
			}
			y := int(d.Y[i*n+px])
			conf[y][best]++
			loss -= math.Log(float64(row[y]) + 1e-7)
			pixels++
		}
	}
	var iou, acc, dice, correct float64
	present := 0
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
		}
	}
	out := map[string]float64{"loss": loss / float64(pixels), "overall_acc": 100 * correct / float64(pixels)}
	if present > 0 {
		out["miou"], out["mean_acc"], out["dice"] = 100*iou/float64(present), 100*acc/float64(present), 100*dice/float64(present)
	}
	return out
}

// headTransformer runs the head's pre-norm transformer blocks
// ("head.blocks.<i>.*", named as the ViT's, MLP ratio 2) and final norm
// ("head.norm") over x [batch*tokens, h.Dim].
func (b *builder) headTransformer(x *G.Node, batch, tokens int, h HeadSpec) *G.Node {
	cur := x
	for i := 0; i < h.Layers; i++ {
		p := fmt.Sprintf("head.blocks.%d", i)
		cur = b.must(G.Add(cur, b.attention(b.layerNorm(cur, p+".norm1", h.Dim), p+".attn", batch, tokens, h.Dim, h.Heads)))
		m := b.gelu(b.linear(b.layerNorm(cur, p+".norm2", h.Dim), p+".mlp.fc1", h.Dim, 2*h.Dim, true))
		cur = b.must(G.Add(cur, b.linear(m, p+".mlp.fc2", 2*h.Dim, h.Dim, true)))
	}
	return b.layerNorm(cur, "head.norm", h.Dim)
}

// Relational: image and question (CLEVR style): the image's pooled
// features become one token ("head.img"), the question's tokens are
// embedded ("head.embed.weight" [V, D]), and a small transformer over
// [image, question...] with a learned position embedding
// ("head.pos_embed") answers from the image token ("head.fc"). Data.Q
// holds the token ids, Data.Y the answer class.
const Relational Task = "relational"

// relationalHead returns answer logits [B, K] for images x and one-hot
// question tokens q [B*L, V].
func (b *builder) relationalHead(enc EncoderSpec, x, q *G.Node, shape []int, classes int) *G.Node {
	h := enc.Head.withDefaults()
	qLen, vocab := h.QLen, h.Vocab
	if h.Dim%h.Heads != 0 {
		b.fail("relational head: dim %d is not a multiple of heads %d", h.Dim, h.Heads)
	}
	batch, tokens := x.Shape()[0], qLen+1
	feat, f := enc.forward(b, x, shape)
	img := b.must(G.Reshape(b.linear(feat, "head.img", f, h.Dim, true), tensor.Shape{batch, 1, h.Dim}))
	emb := b.tensorOf("head.embed.weight", []int{vocab, h.Dim}, false, b.truncNormal(0.02))
	words := b.must(G.Reshape(b.must(G.Mul(q, emb)), tensor.Shape{batch, qLen, h.Dim}))
	seq := b.must(G.Concat(1, img, words))
	pos := b.tensorOf("head.pos_embed", []int{1, tokens, h.Dim}, false, b.truncNormal(0.02))
	seq = b.must(G.BroadcastAdd(seq, pos, nil, []byte{0}))
	cur := b.headTransformer(b.must(G.Reshape(seq, tensor.Shape{batch * tokens, h.Dim})), batch, tokens, h)
	return b.linear(b.firstToken(cur, batch, tokens), "head.fc", h.Dim, classes, true)
}

// questionRows writes example k's question as one-hot rows into dst
// [QLen * Vocab].
func (d *Data) questionRows(dst []float32, k int) {
	clear(dst)
	for j, tok := range d.Q[k*d.QLen : (k+1)*d.QLen] {
		dst[j*d.Vocab+int(tok)] = 1
	}
}

// fillQuestions writes the one-hot questions of examples ks into qb.
func (d *Data) fillQuestions(qb *tensor.Dense, ks []int) {
	if qb == nil {
		return
	}
	qs := qb.Data().([]float32)
	clear(qs)
	w := d.QLen * d.Vocab
	for i, k := range ks {
		d.questionRows(qs[i*w:(i+1)*w], k)
	}
}

// Retrieval: image-text contrastive (CLIP style). Images go through the
// encoder and "head.img", captions through a bag of embedded tokens
// ("head.embed.weight") and "head.txt", both L2-normalised; the loss is
// the symmetric cross-entropy of the in-batch similarity matrix (scaled by
// retrievalScale) against the diagonal. Data.Q holds the caption tokens.
const Retrieval Task = "retrieval"

// retrievalScale is the fixed inverse temperature of the similarities.
const retrievalScale = 10

// retrievalHead returns the similarity logits [B, B] and the normalised
// image and text embeddings side by side [B, 2*dim].
func (b *builder) retrievalHead(enc EncoderSpec, x, q *G.Node, shape []int) (logits, emb *G.Node) {
	h := enc.Head.withDefaults()
	batch, d := x.Shape()[0], h.Dim
	normalise := func(v *G.Node) *G.Node {
		n := b.must(G.Sqrt(b.must(G.Add(b.must(G.Sum(b.must(G.Square(v)), 1)), b.scalar(1e-8)))))
		return b.must(G.BroadcastHadamardDiv(v, b.must(G.Reshape(n, tensor.Shape{batch, 1})), nil, []byte{1}))
	}
	feat, f := enc.forward(b, x, shape)
	img := normalise(b.linear(feat, "head.img", f, d, true))
	emb0 := b.tensorOf("head.embed.weight", []int{h.Vocab, d}, false, b.truncNormal(0.02))
	words := b.must(G.Reshape(b.must(G.Mul(q, emb0)), tensor.Shape{batch, h.QLen, d}))
	bag := b.must(G.HadamardProd(b.sum(words, 1), b.scalar(float32(1)/float32(h.QLen))))
	txt := normalise(b.linear(bag, "head.txt", d, d, true))
	logits = b.must(G.HadamardProd(b.must(G.Mul(img, b.must(G.Transpose(txt)))), b.scalar(retrievalScale)))
	return logits, b.must(G.Concat(1, img, txt))
}

// eye is the identity matrix, the in-batch targets of retrieval.
func eye(n int) []float32 {
	m := make([]float32, n*n)
	for i := 0; i < n; i++ {
		m[i*n+i] = 1
	}
	return m
}

// retrievalLoss is the mean of the image-to-text and text-to-image
// cross-entropies of the similarity logits z [B, B].
func (b *builder) retrievalLoss(z *G.Node) *G.Node {
	n := z.Shape()[0]
	y := b.constant([]int{n, n}, eye(n))
	_, i2t := crossEntropyOn(b, z, y, n)
	_, t2i := crossEntropyOn(b, b.must(G.Transpose(z)), y, n)
	return b.must(G.HadamardProd(b.must(G.Add(i2t, t2i)), b.scalar(0.5)))
}

// retrievalMetrics ranks every caption for every image of the set and the
// reverse: Acc@1/@5 count a hit when a retrieved item has the query's own
// caption (scenes can share a caption); the losses are the full-set
// cross-entropies at the training scale.
func retrievalMetrics(d *Data, emb [][]float32) map[string]float64 {
	n := len(emb)
	if n == 0 {
		return map[string]float64{}
	}
	dim := len(emb[0]) / 2
	unit := func(v []float32) []float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		s = math.Sqrt(s) + 1e-12
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x) / s
		}
		return out
	}
	imgs, txts := make([][]float64, n), make([][]float64, n)
	for i, e := range emb {
		imgs[i], txts[i] = unit(e[:dim]), unit(e[dim:])
	}
	same := func(i, j int) bool {
		return slices.Equal(d.Q[i*d.QLen:(i+1)*d.QLen], d.Q[j*d.QLen:(j+1)*d.QLen])
	}
	sim := make([][]float64, n)
	for i := range sim {
		sim[i] = make([]float64, n)
		for j := range sim[i] {
			var s float64
			for k := 0; k < dim; k++ {
				s += imgs[i][k] * txts[j][k]
			}
			sim[i][j] = s
		}
	}
	rank := func(get func(j int) float64, self int) (hit1, hit5 bool, loss float64) {
		order := make([]int, n)
		for j := range order {
			order[j] = j
		}
		sort.SliceStable(order, func(a, b int) bool { return get(order[a]) > get(order[b]) })
		for r := 0; r < 5 && r < n; r++ {
			if same(order[r], self) {
				hit5 = true
				if r == 0 {
					hit1 = true
				}
			}
		}
		mx := get(order[0]) * retrievalScale
		var z float64
		for j := 0; j < n; j++ {
			z += math.Exp(get(j)*retrievalScale - mx)
		}
		return hit1, hit5, -(get(self)*retrievalScale - mx - math.Log(z))
	}
	out := map[string]float64{}
	for dir, get := range map[string]func(q, j int) float64{
		"i2t": func(q, j int) float64 { return sim[q][j] },
		"t2i": func(q, j int) float64 { return sim[j][q] },
	} {
		var a1, a5, loss float64
		for q := 0; q < n; q++ {
			h1, h5, l := rank(func(j int) float64 { return get(q, j) }, q)
			if h1 {
				a1++
			}
			if h5 {
				a5++
			}
			loss += l
		}
		out[dir+"_acc1"], out[dir+"_acc5"], out[dir+"_loss"] = 100*a1/float64(n), 100*a5/float64(n), loss/float64(n)
	}
	out["loss"] = (out["i2t_loss"] + out["t2i_loss"]) / 2
	return out
}

// FewShot: prototypical networks on episodes (Meta-Dataset style). An
// episode samples Ways classes of the split, Shots support and Queries
// query examples of each; the encoder embeds them, each class's prototype
// is the mean of its support embeddings, and the logits of a query are the
// negative squared distances to the prototypes. Training episodes come from
// the training split's classes; validation and test episodes from their
// own splits' classes (held out when the dataset splits by class). The
// head has no parameters.
const FewShot Task = "fewshot"

// episodeShape returns the ways, shots and queries of the head (defaults 5,
// 5, 5).
func (h HeadSpec) episodeShape() (ways, shots, queries int) {
	ways, shots, queries = h.Ways, h.Shots, h.Queries
	if ways <= 0 {
		ways = 5
	}
	if shots <= 0 {
		shots = 5
	}
	if queries <= 0 {
		queries = 5
	}
	return ways, shots, queries
}

// prototypeLogits returns query logits [ways*queries, ways] for features
// feat [ways*(shots+queries), F] laid out as all support examples (class
// by class) then all queries (class by class).
func (b *builder) prototypeLogits(feat *G.Node, f, ways, shots, queries int) *G.Node {
	support := b.must(G.Slice(feat, G.S(0, ways*shots)))
	query := b.must(G.Slice(feat, G.S(ways*shots, ways*(shots+queries))))
	protos := b.must(G.HadamardProd(b.sum(b.must(G.Reshape(support, tensor.Shape{ways, shots, f})), 1), b.scalar(float32(1)/float32(shots))))
	// -|q - p|^2 = 2 q.p - |q|^2 - |p|^2
	qp := b.must(G.HadamardProd(b.must(G.Mul(query, b.must(G.Transpose(protos)))), b.scalar(2)))
	qq := b.must(G.Reshape(b.must(G.Sum(b.must(G.Square(query)), 1)), tensor.Shape{ways * queries, 1}))
	pp := b.must(G.Sum(b.must(G.Square(protos)), 1))
	z := b.must(G.BroadcastSub(qp, qq, nil, []byte{1}))
	return b.must(G.BroadcastSub(z, pp, nil, []byte{0}))
}

// episodes samples n episodes from d's classes: for each, the example
// indices (support class by class, then queries class by class). Classes
// with fewer than shots+queries examples are not drawn.
func (d *Data) episodes(rng *rand.Rand, n, ways, shots, queries int) ([][]int, error) {
	byClass := map[int64][]int{}
	var classes []int64
	for i, y := range d.Y {
		if len(byClass[y]) == 0 {
			classes = append(classes, y)
		}
		byClass[y] = append(byClass[y], i)
	}
	var usable []int64
	for _, c := range classes {
		if len(byClass[c]) >= shots+queries {
			usable = append(usable, c)
		}
	}
	if len(usable) < ways {
		return nil, fmt.Errorf("few-shot episodes need %d classes with at least %d examples each; the split has %d", ways, shots+queries, len(usable))
	}
	out := make([][]int, n)
	for e := range out {
		picked := rng.Perm(len(usable))[:ways]
		sup := make([]int, 0, ways*(shots+queries))
		var qry []int
		for _, ci := range picked {
			ex := byClass[usable[ci]]
			perm := rng.Perm(len(ex))
			for j := 0; j < shots; j++ {
				sup = append(sup, ex[perm[j]])
			}
			for j := shots; j < shots+queries; j++ {
				qry = append(qry, ex[perm[j]])
			}
		}
		out[e] = append(sup, qry...)
	}
	return out, nil
}

// fillEpisode writes an episode's examples into xb and the queries'
// one-hot episode classes into yb.
func fillEpisode(xb, yb *tensor.Dense, d *Data, ep []int, size, ways, queries int) {
	xs := xb.Data().([]float32)
	for i, k := range ep {
		copy(xs[i*size:(i+1)*size], d.X[k*size:(k+1)*size])
	}
	ys := yb.Data().([]float32)
	clear(ys)
	for c := 0; c < ways; c++ {
		for j := 0; j < queries; j++ {
			ys[(c*queries+j)*ways+c] = 1
		}
	}
}

// evalEpisodes is the number of evaluation episodes per shot setting.
const evalEpisodes = 60

// evaluateEpisodes runs the same seeded episodes for every parameter set
// (the top-k ensemble averages their query probabilities): 1-shot and the
// head's shots, with its ways and queries. Acc@1 and the loss average both
// settings; "acc1_<k>shot" reports each.
func evaluateEpisodes(enc EncoderSpec, params []*param, d *Data, sets []map[string][]float32) (map[string]float64, error) {
	ways, shots, queries := enc.Head.episodeShape()
	settings := []int{1}
	if shots != 1 {
		settings = append(settings, shots)
	}
	out := map[string]float64{}
	size := 1
	for _, s := range d.Shape {
		size *= s
	}
	var accSum, lossSum float64
	for _, k := range settings {
		eps, err := d.episodes(rand.New(rand.NewPCG(uint64(k), 0xe7a1)), evalEpisodes, ways, k, queries)
		if err != nil {
			return nil, err
		}
		spec := enc
		spec.Head.Ways, spec.Head.Shots, spec.Head.Queries = ways, k, queries
		b := ways * (k + queries)
		probs := make([][]float32, len(eps)) // per episode: queries x ways
		for _, vals := range sets {
			m, err := build(spec, FewShot, params, d.Shape, ways, b, vals, false)
			if err != nil {
				return nil, err
			}
			vm := G.NewTapeMachine(m.g)
			xb := tensor.New(tensor.WithShape(append([]int{b}, d.Shape...)...), tensor.Of(tensor.Float32))
			yb := newTargets(m)
			for e, ep := range eps {
				fillEpisode(xb, yb, d, ep, size, ways, queries)
				if err := m.setInputs(xb, nil, yb); err != nil {
					vm.Close()
					return nil, err
				}
				if err := vm.RunAll(); err != nil {
					vm.Close()
					return nil, err
				}
				p := m.probs.Value().Data().([]float32)
				if probs[e] == nil {
					probs[e] = make([]float32, len(p))
				}
				for i, v := range p {
					probs[e][i] += v / float32(len(sets))
				}
				vm.Reset()
			}
			vm.Close()
		}
		var acc, loss float64
		n := 0
		for _, p := range probs {
			for q := 0; q < ways*queries; q++ {
				row, truth := p[q*ways:(q+1)*ways], q/queries
				best := 0
				for c := range row {
					if row[c] > row[best] {
						best = c
					}
				}
				if best == truth {
					acc++
				}
				loss -= math.Log(float64(row[truth]) + 1e-7)
				n++
			}
		}
		out[fmt.Sprintf("acc1_%dshot", k)] = 100 * acc / float64(n)
		accSum += 100 * acc / float64(n)
		lossSum += loss / float64(n)
	}
	out["acc1"], out["loss"] = accSum/float64(len(settings)), lossSum/float64(len(settings))
	return out, nil
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
