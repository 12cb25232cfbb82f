package trainnode

import (
	"context"
	"fmt"
	"strings"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/gatepipe/gatepipe/text/cliptok"
)

// textContext is CLIP's text context: 77 tokens, start and end included.
const textContext = 77

// textRef is the text tower's Hub model when the node's adapter reads
// text (GATE's relational and retrieval adapters): its tokenizer, and at
// full scale its pretrained weights.
func (n *Node) textRef() (sources.Ref, bool) {
	if n.card == nil || n.card.TextEncoder == nil {
		return sources.Ref{}, false
	}
	files := []string{"vocab.json", "merges.txt"}
	if n.card.Text != nil && n.card.Text.Pretrained {
		files = append(files, "model.safetensors")
	}
	return sources.Ref{HF: *n.card.TextEncoder, Model: true, Files: files}, true
}

// textInputs are what the worker's text tower takes: each split's
// questions or captions as CLIP's token ids (text_ids_SPLIT, [N, 77],
// padded with the end token as GATE's CLIPProcessor and collate did) and
// the tower's sizes and weights (cfg "text").
type textInputs struct {
	ids []safetensors.Tensor
	cfg map[string]any
}

// textTower tokenizes the splits' texts with the text encoder's
// tokenizer; nothing when the adapter reads no text.
func (n *Node) textTower(env *nodes.Env, d *loaded) (textInputs, error) {
	ref, ok := n.textRef()
	if !ok {
		return textInputs{}, nil
	}
	paths, err := fetchFiles(env, ref)
	if err != nil {
		return textInputs{}, fmt.Errorf("text tower %s: %w", ref.HF, err)
	}
	tok, err := cliptok.LoadFiles(paths["vocab.json"], paths["merges.txt"])
	if err != nil {
		return textInputs{}, fmt.Errorf("text tower %s: %w", ref.HF, err)
	}
	var out textInputs
	for i, name := range []string{"train", "val", "test"} {
		texts, err := splitTexts(d.splits[i].Q, d.splits[i].QLen, d.vocab)
		if err != nil {
			return textInputs{}, fmt.Errorf("%s split: %w", name, err)
		}
		if n.card.Has("D3") && (n.benchmark == "flickr30k" || n.benchmark == "nycc") {
			texts = firstCharacters(texts)
		}
		flat := make([]int32, 0, len(texts)*textContext)
		for _, t := range texts {
			flat = append(flat, tok.EncodeContextHF(t, textContext)...)
		}
		out.ids = append(out.ids, safetensors.I32Tensor("text_ids_"+name, []int{len(texts), textContext}, flat))
	}
	tt := n.card.Text
	out.cfg = map[string]any{"width": tt.Width, "layers": tt.Layers, "heads": tt.Heads, "vocab": tok.Vocab(), "context": textContext, "weights": nil}
	if tt.Pretrained {
		out.cfg["weights"] = paths["model.safetensors"]
	}
	return out, nil
}

// fetchFiles resolves ref and fetches each of its files, by name.
func fetchFiles(env *nodes.Env, ref sources.Ref) (map[string]string, error) {
	if env.Sources == nil {
		return nil, fmt.Errorf("no source resolver (internal error)")
	}
	ctx := context.Background()
	pin, err := env.Sources.Resolve(ctx, ref, env.Progress)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range pin.Files {
		p, err := env.Sources.Fetch(ctx, ref, f, env.Progress)
		if err != nil {
			return nil, err
		}
		out[f.Path] = p
	}
	for _, want := range ref.Files {
		if out[want] == "" {
			return nil, fmt.Errorf("the repository has no %s", want)
		}
	}
	return out, nil
}

// splitTexts rebuilds each example's text from the store's word tokens
// (q: qlen tokens an example over vocab): the words joined by spaces,
// padding and unknown words ("<pad>", "<unk>") left out. The store keeps
// words, lower-cased and without punctuation, not the raw strings.
func splitTexts(q []int64, qlen int, vocab []string) ([]string, error) {
	if qlen <= 0 || len(q)%qlen != 0 {
		return nil, fmt.Errorf("no question or caption tokens (%d tokens of %d)", len(q), qlen)
	}
	out := make([]string, len(q)/qlen)
	var words []string
	for i := range out {
		words = words[:0]
		for _, t := range q[i*qlen : (i+1)*qlen] {
			if t < 0 || int(t) >= len(vocab) {
				return nil, fmt.Errorf("example %d: token %d outside the vocabulary of %d", i, t, len(vocab))
			}
			if w := vocab[t]; !strings.HasPrefix(w, "<") || !strings.HasSuffix(w, ">") {
				words = append(words, w)
			}
		}
		out[i] = strings.Join(words, " ")
	}
	return out, nil
}

// firstCharacters is each text's first character: the caption GATE's
// Flickr30k and NYCC loaders gave the text tower (D3,
// gate/data/image_text/zero_shot/flickr30k.py:
// np.random.choice(sample["caption"])[0]).
func firstCharacters(texts []string) []string {
	out := make([]string, len(texts))
	for i, t := range texts {
		for _, r := range t {
			out[i] = string(r)
			break
		}
	}
	return out
}
