package cliptok

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// File names in a Hugging Face snapshot directory.
const (
	vocabFile  = "vocab.json"
	mergesFile = "merges.txt"
)

// Load reads vocab.json and merges.txt from dir, a Hugging Face Hub
// snapshot directory such as
// models--openai--clip-vit-base-patch16/snapshots/<commit>.
//
// vocab.json must be one JSON object mapping tokens to distinct
// non-negative integer ids; it must hold the 512 byte-level base symbols
// (each byte's symbol, with and without "</w>"), "<|startoftext|>" and
// "<|endoftext|>". merges.txt holds one merge "a b" per line, optionally
// after a "#version" line; both symbols and their concatenation must be in
// vocab.json. Every merge in the file is used (OpenAI's tokenizer reads
// the first 48894 of its own file, which is all of Hugging Face's). Errors
// name the file and, where there is one, the line.
func Load(dir string) (*Tokenizer, error) {
	return LoadFiles(filepath.Join(dir, vocabFile), filepath.Join(dir, mergesFile))
}

// LoadFiles reads a tokenizer from its vocab.json and merges.txt where
// they lie apart (a cache that stores files by content).
func LoadFiles(vocabPath, mergesPath string) (*Tokenizer, error) {
	data, err := os.ReadFile(vocabPath)
	if err != nil {
		return nil, fmt.Errorf("cliptok: read vocabulary: %w", err)
	}
	vocab, err := parseVocab(data)
	if err != nil {
		return nil, fmt.Errorf("cliptok: %s: %w", vocabPath, err)
	}
	t := &Tokenizer{cache: make(map[string][]int32)}
	maxID := int32(-1)
	for _, id := range vocab {
		maxID = max(maxID, id)
	}
	t.vocab = int(maxID) + 1
	var ok bool
	if t.sot, ok = vocab[sotToken]; !ok {
		return nil, fmt.Errorf("cliptok: %s: special token %q is missing", vocabPath, sotToken)
	}
	if t.eot, ok = vocab[eotToken]; !ok {
		return nil, fmt.Errorf("cliptok: %s: special token %q is missing", vocabPath, eotToken)
	}
	runes := byteRunes()
	for b, r := range runes {
		sym := string(r)
		if t.byteID[b], ok = vocab[sym]; !ok {
			return nil, fmt.Errorf("cliptok: %s: byte-level symbol %q (byte 0x%02x) is missing", vocabPath, sym, b)
		}
		if t.byteEndID[b], ok = vocab[sym+"</w>"]; !ok {
			return nil, fmt.Errorf("cliptok: %s: byte-level symbol %q (byte 0x%02x) is missing", vocabPath, sym+"</w>", b)
		}
	}

	data, err = os.ReadFile(mergesPath)
	if err != nil {
		return nil, fmt.Errorf("cliptok: read merges: %w", err)
	}
	if t.merges, err = parseMerges(data, vocab); err != nil {
		return nil, fmt.Errorf("cliptok: %s: %w", mergesPath, err)
	}
	return t, nil
}

// parseVocab decodes vocab.json, reporting the line of a bad entry,
// duplicate tokens and ids shared by two tokens (which would make the
// symbol-id merge table ambiguous).
func parseVocab(data []byte) (map[string]int32, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lineAt := func(off int64) int {
		return 1 + bytes.Count(data[:min(off, int64(len(data)))], []byte{'\n'})
	}
	syntax := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("line %d: %w", lineAt(se.Offset), err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("line %d: unexpected end of JSON", lineAt(int64(len(data))))
		}
		return fmt.Errorf("line %d: %w", lineAt(dec.InputOffset()), err)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("line %d: want a JSON object of token: id, got %v", lineAt(dec.InputOffset()), tok)
	}
	vocab := make(map[string]int32)
	owner := make(map[int32]string)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		key, ok := tok.(string)
		if !ok { // cannot happen for a syntactically valid object
			return nil, fmt.Errorf("line %d: want a token string, got %v", lineAt(dec.InputOffset()), tok)
		}
		line := lineAt(dec.InputOffset())
		tok, err = dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("line %d: id of %q is %v, want an integer", line, key, describe(tok))
		}
		id, err := num.Int64()
		if err != nil || id < 0 || id >= math.MaxInt32 {
			return nil, fmt.Errorf("line %d: id of %q is %s, want an integer in [0, %d)", line, key, num, math.MaxInt32)
		}
		if _, dup := vocab[key]; dup {
			return nil, fmt.Errorf("line %d: token %q appears twice", line, key)
		}
		if other, dup := owner[int32(id)]; dup {
			return nil, fmt.Errorf("line %d: id %d of %q is also the id of %q", line, id, key, other)
		}
		vocab[key] = int32(id)
		owner[int32(id)] = key
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, syntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("line %d: unexpected data after the JSON object", lineAt(dec.InputOffset()))
	}
	if len(vocab) == 0 {
		return nil, errors.New("empty vocabulary")
	}
	return vocab, nil
}

// describe names a non-number JSON token for an error message.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return fmt.Sprintf("the string %q", v)
	case nil:
		return "null"
	default:
		return fmt.Sprint(v)
	}
}

// parseMerges reads merges.txt: an optional "#version" first line, then
// one merge "a b" per line, rank = order. Trailing blank lines are
// ignored; any other line must hold exactly two symbols that, with their
// concatenation, are in vocab.
func parseMerges(data []byte, vocab map[string]int32) (map[uint64]merge, error) {
	text := strings.TrimRight(string(bytes.TrimPrefix(data, []byte("\uFEFF"))), "\r\n")
	if text == "" {
		return map[uint64]merge{}, nil
	}
	lines := strings.Split(text, "\n")
	merges := make(map[uint64]merge, len(lines))
	firstLine := make(map[uint64]int, len(lines))
	rank := int32(0)
	for i, line := range lines {
		lineNo := i + 1
		line = strings.TrimSuffix(line, "\r")
		if i == 0 && strings.HasPrefix(line, "#version") {
			continue
		}
		parts := strings.Fields(line)
		if len(parts) != 2 {
			return nil, fmt.Errorf("line %d: want two symbols separated by a space, got %q", lineNo, line)
		}
		a, ok := vocab[parts[0]]
		if !ok {
			return nil, fmt.Errorf("line %d: symbol %q is not in %s", lineNo, parts[0], vocabFile)
		}
		b, ok := vocab[parts[1]]
		if !ok {
			return nil, fmt.Errorf("line %d: symbol %q is not in %s", lineNo, parts[1], vocabFile)
		}
		ab, ok := vocab[parts[0]+parts[1]]
		if !ok {
			return nil, fmt.Errorf("line %d: merged symbol %q is not in %s", lineNo, parts[0]+parts[1], vocabFile)
		}
		key := pairKey(a, b)
		if first, dup := firstLine[key]; dup {
			return nil, fmt.Errorf("line %d: merge %q repeats line %d", lineNo, line, first)
		}
		firstLine[key] = lineNo
		merges[key] = merge{rank: rank, id: ab}
		rank++
	}
	return merges, nil
}
