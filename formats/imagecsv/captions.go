package imagecsv

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Reserved tokens of every Vocabulary.
const (
	Pad     = 0 // fills a caption shorter than the token length
	Unknown = 1 // a word outside the vocabulary
)

// Captions reads a table cell holding an image's captions: a JSON list of
// strings (nlphuji/flickr30k's "raw" column) or one caption as plain text.
func Captions(cell string) ([]string, error) {
	cell = strings.TrimSpace(cell)
	if !strings.HasPrefix(cell, "[") {
		if cell == "" {
			return nil, fmt.Errorf("empty caption")
		}
		return []string{cell}, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(cell), &list); err != nil {
		return nil, fmt.Errorf("captions %.40q...: not a JSON list of strings: %w", cell, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("an empty list of captions")
	}
	return list, nil
}

// Words splits a caption into lower-case words: runs of letters and
// digits (apostrophes inside a word are kept, "man's").
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
}

// Vocabulary numbers words: 0 pads, 1 is the unknown word, then the words
// of the captions it was built from, most frequent first.
type Vocabulary struct {
	Words []string
	index map[string]int64
}

// BuildVocabulary keeps the limit most frequent words of captions (ties
// in alphabetical order; limit 0 keeps all).
func BuildVocabulary(captions [][]string, limit int) *Vocabulary {
	count := map[string]int{}
	for _, c := range captions {
		for _, w := range c {
			count[w]++
		}
	}
	words := make([]string, 0, len(count))
	for w := range count {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if count[words[i]] != count[words[j]] {
			return count[words[i]] > count[words[j]]
		}
		return words[i] < words[j]
	})
	if limit > 0 && len(words) > limit {
		words = words[:limit]
	}
	v := &Vocabulary{Words: append([]string{"<pad>", "<unk>"}, words...), index: map[string]int64{}}
	for i, w := range v.Words[2:] {
		v.index[w] = int64(i + 2)
	}
	return v
}

// NewVocabulary is a vocabulary saved as its Words (the training split's,
// for the later splits).
func NewVocabulary(words []string) *Vocabulary {
	v := &Vocabulary{Words: words, index: map[string]int64{}}
	for i, w := range words {
		if i >= 2 {
			v.index[w] = int64(i)
		}
	}
	return v
}

// Encode appends the tokens of words to out, cut or padded to length.
func (v *Vocabulary) Encode(out []int64, words []string, length int) []int64 {
	for i := range length {
		switch {
		case i >= len(words):
			out = append(out, Pad)
		default:
			t, ok := v.index[words[i]]
			if !ok {
				t = Unknown
			}
			out = append(out, t)
		}
	}
	return out
}
