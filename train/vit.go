package train

import (
	"fmt"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func (e EncoderSpec) checkViT(shape []int) error {
	if e.Patch <= 0 || shape[1]%e.Patch != 0 || shape[2]%e.Patch != 0 {
		return fmt.Errorf("vit: patch %d must divide the image size %dx%d", e.Patch, shape[1], shape[2])
	}
	if e.Dim <= 0 || e.Depth <= 0 || e.Heads <= 0 || e.Dim%e.Heads != 0 {
		return fmt.Errorf("vit: dim (%d) must be a positive multiple of heads (%d), and depth (%d) positive", e.Dim, e.Heads, e.Depth)
	}
	if e.Act != "" && !slices.Contains(Activations, e.Act) {
		return fmt.Errorf("vit: act %q is not one of %v", e.Act, Activations)
	}
	switch e.Pool {
	case "", "token":
		if e.NoClassToken {
			return fmt.Errorf("vit: pool = \"token\" needs the class token (no_class_token is set); use pool = \"avg\"")
		}
	case "avg":
	default:
		return fmt.Errorf("vit: pool %q is not token or avg", e.Pool)
	}
	if e.LNEps < 0 {
		return fmt.Errorf("vit: ln_eps %g must be positive", e.LNEps)
	}
	return nil
}

// prefixTokens is the number of tokens before the patches (the class
// token's one, or none).
func (e EncoderSpec) prefixTokens() int {
	if e.NoClassToken {
		return 0
	}
	return 1
}

func (e EncoderSpec) lnEps() float64 {
	if e.LNEps > 0 {
		return e.LNEps
	}
	return 1e-6
}

// posEmbedTokens is the number of rows of the position embedding for an
// image of the given shape.
func (e EncoderSpec) posEmbedTokens(shape []int) int {
	n := (shape[1] / e.Patch) * (shape[2] / e.Patch)
	if e.NoEmbedClass {
		return n
	}
	return n + e.prefixTokens()
}

// vitTokens is a Vision Transformer with timm's names up to its final
// norm: patch_embed.proj (a patch x patch conv with stride patch, with a
// bias unless NoPatchBias), cls_token, pos_embed (added after the class
// token is prepended, or before with NoEmbedClass), norm_pre (NormPre),
// pre-norm blocks (norm1, attn.qkv, attn.proj, ls1.gamma with LayerScale,
// norm2, mlp.fc1, the activation, mlp.fc2, ls2.gamma) and norm (token
// pooling only; average pooling normalises after pooling, in fc_norm). It
// returns the tokens [B*T, D] (the class token first, then the patches row
// by row) and T.
func (e EncoderSpec) vitTokens(b *builder, x *G.Node, shape []int) (*G.Node, int) {
	batch, d, eps := x.Shape()[0], e.Dim, e.lnEps()
	ratio := e.MLPRatio
	if ratio <= 0 {
		ratio = 4
	}
	patches := (shape[1] / e.Patch) * (shape[2] / e.Patch)
	tokens := patches + e.prefixTokens()
	emb := b.conv(x, "encoder.patch_embed.proj", shape[0], d, e.Patch, e.Patch, 0, !e.NoPatchBias)
	seq := b.must(G.Transpose(b.must(G.Reshape(emb, tensor.Shape{batch, d, patches})), 0, 2, 1)) // [B, N, D]
	pos := b.tensorOf("encoder.pos_embed", []int{1, e.posEmbedTokens(shape), d}, false, b.truncNormal(0.02))
	if e.NoEmbedClass {
		seq = b.must(G.BroadcastAdd(seq, pos, nil, []byte{0}))
	}
	if !e.NoClassToken {
		cls := b.tensorOf("encoder.cls_token", []int{1, 1, d}, false, b.truncNormal(0.02))
		ones := b.constant([]int{batch, 1, 1}, filled(1)(batch))
		clsB := b.must(G.BroadcastHadamardProd(ones, cls, []byte{2}, []byte{0}))
		seq = b.must(G.Concat(1, clsB, seq))
	}
	if !e.NoEmbedClass {
		seq = b.must(G.BroadcastAdd(seq, pos, nil, []byte{0}))
	}
	cur := b.must(G.Reshape(seq, tensor.Shape{batch * tokens, d}))
	if e.NormPre {
		cur = b.layerNormEps(cur, "encoder.norm_pre", d, eps)
	}
	scale := func(h *G.Node, name string) *G.Node {
		if !e.LayerScale {
			return h
		}
		gamma := b.tensorOf(name, []int{d}, false, filled(1e-5))
		return b.must(G.BroadcastHadamardProd(h, gamma, nil, []byte{0}))
	}
	for i := 0; i < e.Depth; i++ {
		p := fmt.Sprintf("encoder.blocks.%d", i)
		a := b.attention(b.layerNormEps(cur, p+".norm1", d, eps), p+".attn", batch, tokens, d, e.Heads)
		cur = b.must(G.Add(cur, scale(a, p+".ls1.gamma")))
		h := b.activation(b.linear(b.layerNormEps(cur, p+".norm2", d, eps), p+".mlp.fc1", d, d*ratio, true), e.Act)
		cur = b.must(G.Add(cur, scale(b.linear(h, p+".mlp.fc2", d*ratio, d, true), p+".ls2.gamma")))
	}
	if e.Pool == "avg" {
		return cur, tokens
	}
	return b.layerNormEps(cur, "encoder.norm", d, eps), tokens
}

// vitFeatures pools the ViT's tokens: the class token, or with Pool "avg"
// the mean of the patch tokens through fc_norm.
func (e EncoderSpec) vitFeatures(b *builder, x *G.Node, shape []int) *G.Node {
	batch := x.Shape()[0]
	tokens, t := e.vitTokens(b, x, shape)
	if e.Pool != "avg" {
		// The class token is row 0 of each example's tokens.
		return b.firstToken(tokens, batch, t)
	}
	seq := b.must(G.Reshape(tokens, tensor.Shape{batch, t, e.Dim}))
	if pre := e.prefixTokens(); pre > 0 {
		seq = b.must(G.Slice(seq, nil, G.S(pre, t)))
	}
	mean := b.must(G.Mean(seq, 1))
	return b.layerNormEps(mean, "encoder.fc_norm", e.Dim, e.lnEps())
}
