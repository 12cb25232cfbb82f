// Package cliptok implements CLIP's byte-level BPE tokenizer, producing the
// same ids as OpenAI CLIP's simple_tokenizer.py and Hugging Face's
// CLIPTokenizer / CLIPTokenizerFast (for example for
// openai/clip-vit-base-patch16), from a vocabulary in the Hugging Face Hub
// cache layout: a snapshot directory holding vocab.json (token -> id) and
// merges.txt ("#version: 0.2", then one merge "a b" per line; a merge's
// rank is its line order).
//
// # Pipeline
//
// Text is cleaned as the Hugging Face fast tokenizer does (the path
// CLIPProcessor takes): invalid UTF-8 becomes U+FFFD, the text is put in
// Unicode NFC, every run of white space (the Unicode White_Space property)
// becomes one space and the text is lower-cased rune by rune (U+0130 'İ'
// becoming "i̇" as in Python and Rust). It is then split with CLIP's
// pattern
//
//	<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
//
// (so every digit is a word of its own), each word's UTF-8 bytes are mapped
// through GPT-2's bytes_to_unicode table, "</w>" is appended to the word's
// last symbol and merges are applied lowest rank first, every occurrence of
// the chosen pair left to right, exactly as simple_tokenizer.py's bpe does.
//
// # Differences from the Python implementations
//
// Neither ftfy nor html.unescape is applied: OpenAI's tokenizer (and HF's
// slow CLIPTokenizer when ftfy is installed) repairs mojibake, straightens
// curly quotes and unescapes "&amp;"; HF's fast tokenizer, which GATE's
// CLIPProcessor used, does none of that, and neither does this package.
// Python's str.lower turns a word-final 'Σ' into 'ς'; the fast tokenizer
// (and this package) lower-cases rune by rune and gives 'σ'. The special
// token strings in the text are recognised after lower-casing, as in
// OpenAI's code (HF matches them before normalising, so only as written).
// Without ftfy HF's slow CLIPTokenizer also drops control characters and
// puts spaces around CJK ideographs (BERT's BasicTokenizer); this package
// keeps them, as the fast tokenizer does. For ordinary text all of these
// agree.
//
// # Special tokens and padding
//
// EncodeContext reproduces clip.tokenize(texts, context_length,
// truncate=True): <|startoftext|>, the ids truncated so that
// <|endoftext|> still fits, <|endoftext|>, then zeros up to the context
// length. Hugging Face's CLIPTokenizer for openai/clip-vit-base-patch16 has
// pad_token "<|endoftext|>", so padding="max_length" pads with 49407
// instead of 0; EncodeContextHF does that. CLIP's text transformer is
// causal and pools at the first <|endoftext|>, so both paddings give the
// same pooled features, but the padded rows (and the hidden states at the
// padded positions) differ.
//
// GATE (AntreasAntoniou/GATE, gate/models/backbones) calls
// CLIPProcessor(text=[...], padding=True, truncation=True) once per sample,
// with no max_length: truncation is to model_max_length (77) and
// padding=True pads only to the longest text of that call, so a single
// caption comes back unpadded, which is EncodeSpecial(text, 77). Its
// DataLoader collate function (gate/data/core.py, pad_and_stack_tensors)
// then pads every row to the longest in the batch by repeating the row's
// last id, which is <|endoftext|>: EncodeContextHF(text, n) with n the
// batch's longest length.
package cliptok

import (
	"regexp"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Names of the two special tokens in vocab.json.
const (
	sotToken = "<|startoftext|>"
	eotToken = "<|endoftext|>"
)

// maxCacheEntries bounds the per-tokenizer word cache; when full the cache
// is emptied (the output does not depend on it).
const maxCacheEntries = 1 << 16

// maxCachedWord is the longest word (in bytes) kept in the cache.
const maxCachedWord = 256

// whiteSpace is Unicode's White_Space property, which is what unicode.IsSpace,
// Python's regex module and the Rust tokenizers mean by \s (Go's \s is
// ASCII only).
const whiteSpace = `\t\n\x{0B}\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

// wordPattern is CLIP's pre-tokenisation pattern. Go's regexp matches
// alternations leftmost-first, as Python's does.
var wordPattern = regexp.MustCompile(`<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|\pL+|\pN|[^` + whiteSpace + `\pL\pN]+`)

// Tokenizer is a CLIP BPE tokenizer loaded by Load. It is safe for
// concurrent use.
type Tokenizer struct {
	// byteID[b] and byteEndID[b] are the ids of byte b's symbol, without
	// and with "</w>".
	byteID, byteEndID [256]int32
	// merges maps a pair of symbol ids (pairKey) to its rank and the id of
	// the merged symbol.
	merges   map[uint64]merge
	sot, eot int32
	vocab    int

	mu    sync.RWMutex
	cache map[string][]int32
}

// merge is one entry of merges.txt: its rank (line order) and the id of the
// concatenated symbol.
type merge struct {
	rank int32
	id   int32
}

// pairKey packs two symbol ids into a map key.
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// Vocab returns the size of an embedding table indexed by this tokenizer's
// ids: the largest id in vocab.json plus one (49408 for CLIP). Every id
// Encode returns is below it.
func (t *Tokenizer) Vocab() int { return t.vocab }

// SOT returns the id of <|startoftext|> (49406 for CLIP).
func (t *Tokenizer) SOT() int32 { return t.sot }

// EOT returns the id of <|endoftext|> (49407 for CLIP), which is also Hugging
// Face's pad token for the OpenAI CLIP checkpoints.
func (t *Tokenizer) EOT() int32 { return t.eot }

// Encode returns the ids of text without special tokens, as
// SimpleTokenizer.encode does (and HF's tokenizer with
// add_special_tokens=False). The strings "<|startoftext|>" and
// "<|endoftext|>" inside text become the special ids.
func (t *Tokenizer) Encode(text string) []int32 {
	clean := cleanText(text)
	out := make([]int32, 0, len(clean)/3+1)
	for _, loc := range wordPattern.FindAllStringIndex(clean, -1) {
		out = t.appendWord(out, clean[loc[0]:loc[1]])
	}
	return out
}

// EncodeSpecial returns <|startoftext|>, the ids of text and <|endoftext|>,
// truncated to at most maxLen ids with <|endoftext|> kept last, and not
// padded: what Hugging Face's tokenizer returns for one text with
// truncation=True and max_length=maxLen (or model_max_length, 77, when no
// max_length is given), and what GATE's per-sample CLIPProcessor call
// produced. maxLen <= 0 means no truncation. With maxLen 1 the result is
// just <|endoftext|>, as clip.tokenize gives.
func (t *Tokenizer) EncodeSpecial(text string, maxLen int) []int32 {
	ids := t.Encode(text)
	out := make([]int32, 0, len(ids)+2)
	out = append(out, t.sot)
	out = append(out, ids...)
	out = append(out, t.eot)
	if maxLen > 0 && len(out) > maxLen {
		out = out[:maxLen]
		out[maxLen-1] = t.eot
	}
	return out
}

// EncodeContext returns exactly context ids as OpenAI's
// clip.tokenize(text, context_length=context, truncate=True) does:
// <|startoftext|>, the ids truncated so that <|endoftext|> fits,
// <|endoftext|>, then 0 up to context. Note that 0 is the id of "!", not a
// pad token; Hugging Face pads with <|endoftext|> (see EncodeContextHF).
// A context <= 0 gives an empty slice.
func (t *Tokenizer) EncodeContext(text string, context int) []int32 {
	return t.EncodeContextPad(text, context, 0)
}

// EncodeContextHF returns exactly context ids as Hugging Face's
// CLIPTokenizer / CLIPProcessor for openai/clip-vit-base-patch16 does with
// padding="max_length", truncation=True, max_length=context: the same
// truncation as EncodeContext, but padded with the pad token
// <|endoftext|> (49407) instead of 0. It is also what GATE's collate
// function produces when context is the batch's longest length. A context
// <= 0 gives an empty slice.
func (t *Tokenizer) EncodeContextHF(text string, context int) []int32 {
	return t.EncodeContextPad(text, context, t.eot)
}

// EncodeContextPad is EncodeContext with pad as the padding id. A context
// <= 0 gives an empty slice.
func (t *Tokenizer) EncodeContextPad(text string, context int, pad int32) []int32 {
	if context <= 0 {
		return []int32{}
	}
	ids := t.EncodeSpecial(text, context)
	out := make([]int32, context)
	n := copy(out, ids)
	for i := n; i < context; i++ {
		out[i] = pad
	}
	return out
}

// cleanText applies the Hugging Face fast tokenizer's normaliser for CLIP
// (NFC, white-space runs to one space, lower case) to text, after
// replacing invalid UTF-8 with U+FFFD.
func cleanText(text string) string {
	text = norm.NFC.String(strings.ToValidUTF8(text, "\uFFFD"))
	var b strings.Builder
	b.Grow(len(text))
	space := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		if r == '\u0130' {
			// Full lower-case mapping (SpecialCasing.txt), as Python's
			// str.lower and Rust's char::to_lowercase give; Go's
			// unicode.ToLower gives plain 'i'.
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// appendWord appends the ids of one pre-tokenised word to out.
func (t *Tokenizer) appendWord(out []int32, word string) []int32 {
	switch word {
	case sotToken:
		return append(out, t.sot)
	case eotToken:
		return append(out, t.eot)
	}
	if len(word) == 1 {
		return append(out, t.byteEndID[word[0]])
	}
	cacheable := len(word) <= maxCachedWord
	if cacheable {
		t.mu.RLock()
		ids, ok := t.cache[word]
		t.mu.RUnlock()
		if ok {
			return append(out, ids...)
		}
	}
	ids := t.bpe(word)
	if cacheable {
		t.mu.Lock()
		if len(t.cache) >= maxCacheEntries {
			clear(t.cache)
		}
		t.cache[word] = ids
		t.mu.Unlock()
	}
	return append(out, ids...)
}
