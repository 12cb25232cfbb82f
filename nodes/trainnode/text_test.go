package trainnode

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/protocol"
)

func TestSplitTexts(t *testing.T) {
	vocab := []string{"<pad>", "<unk>", "how", "many", "cubes"}
	got, err := splitTexts([]int64{2, 3, 4, 0, 1, 4, 0, 0}, 4, vocab)
	if err != nil || !slices.Equal(got, []string{"how many cubes", "cubes"}) {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := splitTexts([]int64{2, 9}, 2, vocab); err == nil || !strings.Contains(err.Error(), "token 9 outside the vocabulary of 5") {
		t.Errorf("bad token: %v", err)
	}
	if _, err := splitTexts(nil, 0, vocab); err == nil {
		t.Error("no tokens passed")
	}
}

// TestTextRefFetchesWeightsOnlyWhenPretrained: a capped scale's tower
// starts from the seed and needs only the tokenizer.
func TestTextRefFetchesWeightsOnlyWhenPretrained(t *testing.T) {
	enc := "openai/clip-vit-base-patch16"
	for _, tc := range []struct {
		pretrained bool
		files      []string
	}{{true, []string{"vocab.json", "merges.txt", "model.safetensors"}}, {false, []string{"vocab.json", "merges.txt"}}} {
		n := &Node{card: &protocol.Card{TextEncoder: &enc, Text: &protocol.TextTower{Pretrained: tc.pretrained}}}
		ref, ok := n.textRef()
		if !ok || !ref.Model || ref.HF != enc || !slices.Equal(ref.Files, tc.files) {
			t.Errorf("pretrained %v: %+v", tc.pretrained, ref)
		}
	}
	if _, ok := (&Node{}).textRef(); ok {
		t.Error("a node without a card reads text")
	}
}
