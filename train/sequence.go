package train

// Heads with a small transformer over tokens: video (frames) and
// relational reasoning (an image and question tokens).

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Video: the encoder on every frame of a clip [T, C, H, W], a temporal
// transformer over the frames' features (the paper's video adapter), mean
// pooling over time and a linear classifier; Data.Y holds a class per clip.
const Video Task = "video"

// VideoRegression: the video head predicting values (a count per clip,
// iWildCam's animals per camera-trap sequence), trained as Regression
// (mean squared error on standardised targets); Data.T holds the targets.
const VideoRegression Task = "video_regression"

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
