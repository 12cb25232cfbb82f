//go:build ignore

// mkfixture writes CLIP's vocabulary in the Hugging Face layout (vocab.json
// and merges.txt) from OpenAI CLIP's clip/bpe_simple_vocab_16e6.txt.gz,
// deriving the vocabulary as simple_tokenizer.py does: the 256 byte-level
// symbols in bytes_to_unicode order, the same with "</w>", each merge's
// concatenation in merge order, then <|startoftext|> and <|endoftext|>.
//
//	go run mkfixture.go -bpe bpe_simple_vocab_16e6.txt.gz -out DIR [-merges N]
//
// With -merges N only the first N merges are written, plus, with -extra,
// every merge needed to build the listed token ids (so the fixture still
// tokenises chosen rarer words exactly), in their original order;
// vocab.json keeps the base symbols, the kept merges' tokens and the two
// special tokens, all with their ids in the full vocabulary (the special
// tokens stay 49406 and 49407). Keeping a subset of the merges that
// includes every merge a word's full-vocabulary encoding applies gives that
// word the same ids: at each step the lowest-ranked pair present is still
// in the subset and still the lowest. See subset/README.md for the
// command that wrote subset/clip-vit-base-patch16.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// fullMerges is how many merges simple_tokenizer.py reads: 49152-256-2.
const fullMerges = 49152 - 256 - 2

func main() {
	bpe := flag.String("bpe", "", "OpenAI CLIP's bpe_simple_vocab_16e6.txt.gz (or the uncompressed text)")
	out := flag.String("out", "", "output directory")
	keep := flag.Int("merges", fullMerges, "number of leading merges to keep")
	extra := flag.String("extra", "", "comma-separated token ids whose merges to keep too")
	flag.Parse()
	if *bpe == "" || *out == "" || *keep < 0 || *keep > fullMerges {
		flag.Usage()
		os.Exit(2)
	}
	var extras []int
	for f := range strings.SplitSeq(*extra, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		id, err := strconv.Atoi(f)
		if err != nil {
			log.Fatalf("-extra: %v", err)
		}
		extras = append(extras, id)
	}
	if err := run(*bpe, *out, *keep, extras); err != nil {
		log.Fatal(err)
	}
}

func run(bpePath, out string, keep int, extras []int) error {
	lines, err := readLines(bpePath)
	if err != nil {
		return err
	}
	if len(lines) < 1+fullMerges {
		return fmt.Errorf("%s: %d lines, want at least %d", bpePath, len(lines), 1+fullMerges)
	}
	merges := lines[1 : 1+fullMerges]

	var vocab []string
	for _, r := range byteRunes() {
		vocab = append(vocab, string(r))
	}
	for i := range 256 {
		vocab = append(vocab, vocab[i]+"</w>")
	}
	known := make(map[string]bool)
	for _, v := range vocab {
		known[v] = true
	}
	for i, m := range merges {
		parts := strings.Fields(m)
		if len(parts) != 2 {
			return fmt.Errorf("%s: line %d: %q is not a merge", bpePath, i+2, m)
		}
		// Every merge must build on symbols that exist before it; the
		// fixture's truncation relies on that.
		for _, p := range parts {
			if !known[p] {
				return fmt.Errorf("%s: line %d: %q is used before it is made", bpePath, i+2, p)
			}
		}
		tok := parts[0] + parts[1]
		if known[tok] {
			return fmt.Errorf("%s: line %d: %q made twice", bpePath, i+2, tok)
		}
		known[tok] = true
		vocab = append(vocab, tok)
	}
	vocab = append(vocab, "<|startoftext|>", "<|endoftext|>")
	ids := make(map[string]int, len(vocab))
	for id, tok := range vocab {
		ids[tok] = id
	}

	// kept[r] marks merge r (token id 512+r) as written.
	kept := make([]bool, fullMerges)
	for r := range keep {
		kept[r] = true
	}
	var need func(id int)
	need = func(id int) {
		r := id - 512
		if r < 0 || r >= fullMerges || kept[r] {
			return
		}
		kept[r] = true
		for _, p := range strings.Fields(merges[r]) {
			need(ids[p]) // made by an earlier merge, checked above
		}
	}
	for _, id := range extras {
		if id < 0 || id >= len(vocab) {
			return fmt.Errorf("-extra: id %d out of range", id)
		}
		need(id)
	}

	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var mb strings.Builder
	mb.WriteString("#version: 0.2\n")
	for r, m := range merges {
		if kept[r] {
			mb.WriteString(m + "\n")
		}
	}
	if err := os.WriteFile(filepath.Join(out, "merges.txt"), []byte(mb.String()), 0o644); err != nil {
		return err
	}
	var vb strings.Builder
	vb.WriteString("{\n")
	first := true
	for id, tok := range vocab {
		if r := id - 512; r >= 0 && r < fullMerges && !kept[r] {
			continue
		}
		if !first {
			vb.WriteString(",\n")
		}
		first = false
		vb.WriteString(jsonString(tok) + ": " + strconv.Itoa(id))
	}
	vb.WriteString("\n}\n")
	return os.WriteFile(filepath.Join(out, "vocab.json"), []byte(vb.String()), 0o644)
}

// readLines returns the lines of a gzip or plain text file.
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return strings.Split(string(data), "\n"), nil
}

// jsonString quotes s as a JSON string without HTML escaping.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// byteRunes is GPT-2's bytes_to_unicode table in the order of its values
// (which is the order of the vocabulary's first 256 ids).
func byteRunes() []rune {
	var printable, other []rune
	n := 0
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			printable = append(printable, rune(b))
		} else {
			other = append(other, rune(256+n))
			n++
		}
	}
	return append(printable, other...)
}
