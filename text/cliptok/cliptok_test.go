package cliptok

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// fixtureDir is a cut-down openai/clip-vit-base-patch16 vocabulary with the
// real ids (subset/README.md says how it was made).
const fixtureDir = "subset/clip-vit-base-patch16"

// longText needs truncation at CLIP's context of 77: 12 x 9 = 108 ids.
var longText = strings.Repeat("a photo of a cat on the table. ", 12)

func repeatIDs(ids []int32, n int) []int32 {
	var out []int32
	for range n {
		out = append(out, ids...)
	}
	return out
}

// golden holds Encode's ids (no special tokens) for the full CLIP
// vocabulary, computed with this package from OpenAI CLIP's
// bpe_simple_vocab_16e6.txt.gz and cross-checked against a transcription
// of simple_tokenizer.py's bpe. Two rows are independent anchors: "a photo
// of a cat" is CLIP's well-known [49406 320 1125 539 320 2368 49407], and
// "a cat sitting on the table" is the Hugging Face CLIPTokenizerFast output
// quoted in keras-team/keras-hub#2018 and #2051.
var golden = []struct {
	text string
	ids  []int32
}{
	{"a photo of a cat", []int32{320, 1125, 539, 320, 2368}},
	{"a cat sitting on the table", []int32{320, 2368, 4919, 525, 518, 2175}},
	{"A PHOTO OF A CAT", []int32{320, 1125, 539, 320, 2368}},
	{"Hello, world!", []int32{3306, 267, 1002, 256}},
	{"It's a dog's life, isn't it?", []int32{585, 568, 320, 1929, 568, 970, 267, 2923, 713, 585, 286}},
	{"they're here, we've been, I'm sure you'll see, he'd go", []int32{889, 982, 763, 267, 649, 1200, 1025, 267, 328, 880, 1650, 592, 1342, 862, 267, 797, 1896, 861}},
	{"in 2024 there were 365 days", []int32{530, 273, 271, 273, 275, 997, 1365, 274, 277, 276, 1161}},
	{"3.14", []int32{274, 269, 272, 275}},
	{"café au lait", []int32{15304, 2566, 572, 585}},
	{"naïve résumé", []int32{1097, 35689, 563, 29106, 7054, 4166}},
	{"   lots   of\twhite\n\nspace  ", []int32{2958, 539, 1579, 2138}},
	{"How many cubes are left after subtracting all red spheres?", []int32{829, 1346, 31413, 631, 1823, 953, 1783, 2266, 694, 615, 736, 37478, 286}},
	{"What color is the large metal cylinder behind the small rubber ball?", []int32{768, 3140, 533, 518, 3638, 4044, 22092, 2403, 518, 2442, 11331, 1069, 286}},
	{"e-mail: user@example.com!!!", []int32{324, 268, 2614, 281, 7031, 287, 6228, 269, 2464, 995}},
	{"", []int32{}},
	{"<|startoftext|>hi<|endoftext|>", []int32{49406, 1883, 49407}},
	{"I ❤️ NY 🐱", []int32{328, 1752, 1350, 22979}},
	{"東京", []int32{48338, 21078, 361}},
	{longText, repeatIDs([]int32{320, 1125, 539, 320, 2368, 525, 518, 2175, 269}, 12)},
}

var (
	fixtureOnce sync.Once
	fixtureTok  *Tokenizer
	fixtureErr  error
)

func loadFixture(tb testing.TB) *Tokenizer {
	tb.Helper()
	fixtureOnce.Do(func() { fixtureTok, fixtureErr = Load(fixtureDir) })
	if fixtureErr != nil {
		tb.Fatal(fixtureErr)
	}
	return fixtureTok
}

func checkGolden(t *testing.T, tok *Tokenizer) {
	for _, g := range golden {
		if got := tok.Encode(g.text); !slices.Equal(got, g.ids) {
			t.Errorf("Encode(%q) = %v, want %v", g.text, got, g.ids)
		}
		want := append(append([]int32{49406}, g.ids...), 49407)
		if got := tok.EncodeSpecial(g.text, 0); !slices.Equal(got, want) {
			t.Errorf("EncodeSpecial(%q, 0) = %v, want %v", g.text, got, want)
		}
	}
}

func TestGolden(t *testing.T) {
	checkGolden(t, loadFixture(t))
}

// TestGoldenSnapshot checks the golden table against a full vocabulary, a
// Hugging Face snapshot directory named by CLIPTOK_SNAPSHOT (for example
// ~/.cache/huggingface/hub/models--openai--clip-vit-base-patch16/snapshots/<commit>).
func TestGoldenSnapshot(t *testing.T) {
	dir := os.Getenv("CLIPTOK_SNAPSHOT")
	if dir == "" {
		t.Skip("CLIPTOK_SNAPSHOT not set")
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Vocab() != 49408 {
		t.Errorf("Vocab() = %d, want 49408", tok.Vocab())
	}
	checkGolden(t, tok)
}

func TestSpecialIDs(t *testing.T) {
	tok := loadFixture(t)
	if tok.Vocab() != 49408 || tok.SOT() != 49406 || tok.EOT() != 49407 {
		t.Errorf("Vocab, SOT, EOT = %d, %d, %d, want 49408, 49406, 49407", tok.Vocab(), tok.SOT(), tok.EOT())
	}
	want := []int32{49406, 320, 1125, 539, 320, 2368, 49407}
	if got := tok.EncodeSpecial("a photo of a cat", 77); !slices.Equal(got, want) {
		t.Errorf("EncodeSpecial = %v, want %v", got, want)
	}
}

func TestEncodeContext(t *testing.T) {
	tok := loadFixture(t)
	const sot, eot = 49406, 49407
	short := []int32{sot, 320, 1125, 539, 320, 2368, eot}
	long := append(append([]int32{sot}, tok.Encode(longText)[:75]...), eot)

	pad := func(ids []int32, n int, p int32) []int32 {
		out := slices.Clone(ids)
		for len(out) < n {
			out = append(out, p)
		}
		return out
	}
	for _, c := range []struct {
		name string
		got  []int32
		want []int32
	}{
		{"clip short", tok.EncodeContext("a photo of a cat", 77), pad(short, 77, 0)},
		{"hf short", tok.EncodeContextHF("a photo of a cat", 77), pad(short, 77, eot)},
		{"pad 7", tok.EncodeContextPad("a photo of a cat", 10, 7), pad(short, 10, 7)},
		{"exact fit", tok.EncodeContext("a photo of a cat", 7), short},
		{"clip long", tok.EncodeContext(longText, 77), long},
		{"hf long", tok.EncodeContextHF(longText, 77), long},
		{"special long", tok.EncodeSpecial(longText, 77), long},
		{"special short", tok.EncodeSpecial("a photo of a cat", 77), short},
		{"truncate short", tok.EncodeContext("a photo of a cat", 4), []int32{sot, 320, 1125, eot}},
		{"context 2", tok.EncodeContext("a photo of a cat", 2), []int32{sot, eot}},
		{"context 1", tok.EncodeContext("a photo of a cat", 1), []int32{eot}},
		{"context 0", tok.EncodeContext("a photo of a cat", 0), []int32{}},
		{"context -1", tok.EncodeContextHF("a photo of a cat", -1), []int32{}},
		{"empty", tok.EncodeContext("", 4), []int32{sot, eot, 0, 0}},
		// Hugging Face CLIPTokenizerFast(openai/clip-vit-base-patch32)
		// with padding="max_length", max_length=16, quoted in
		// keras-team/keras-hub#2051.
		{"keras-hub", tok.EncodeContextHF("a cat sitting on the table", 16),
			[]int32{sot, 320, 2368, 4919, 525, 518, 2175, eot, eot, eot, eot, eot, eot, eot, eot, eot}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: got %v (len %d), want %v (len %d)", c.name, c.got, len(c.got), c.want, len(c.want))
		}
	}
	if got := tok.EncodeContext(longText, 77); len(got) != 77 || got[0] != sot || got[76] != eot {
		t.Errorf("EncodeContext(long, 77): len %d, first %d, last %d", len(got), got[0], got[len(got)-1])
	}
}

// TestNormalisation checks the cleaning steps through their effect on ids.
func TestNormalisation(t *testing.T) {
	tok := loadFixture(t)
	same := [][2]string{
		{"cafe\u0301", "café"}, // NFC
		{"a\u00a0photo\u3000of\u2003a\vcat", "a photo of a cat"},
		{"\t a photo of a cat \n", "a photo of a cat"},
		{"A PhOtO oF a CaT", "a photo of a cat"},
		{"\u0130", "i\u0307"},              // full lower-case mapping of 'İ'
		{"a\xffcat", "a\uFFFDcat"},         // invalid UTF-8
		{"<|ENDOFTEXT|>", "<|endoftext|>"}, // matched after lower-casing, as OpenAI does
	}
	for _, p := range same {
		a, b := tok.Encode(p[0]), tok.Encode(p[1])
		if !slices.Equal(a, b) {
			t.Errorf("Encode(%q) = %v, Encode(%q) = %v, want equal", p[0], a, p[1], b)
		}
	}
	if got := cleanText("  Hello \t\n World  "); got != "hello world" {
		t.Errorf("cleanText = %q", got)
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok, err := Load(fixtureDir) // a fresh, empty cache
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				g := golden[(w+i)%len(golden)]
				if got := tok.Encode(g.text); !slices.Equal(got, g.ids) {
					t.Errorf("Encode(%q) = %v, want %v", g.text, got, g.ids)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestCacheBound fills the word cache past its bound.
func TestCacheBound(t *testing.T) {
	tok, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxCacheEntries + 10 {
		tok.Encode(fmt.Sprintf("w%dx", i))
	}
	if n := len(tok.cache); n > maxCacheEntries {
		t.Errorf("cache holds %d words, bound %d", n, maxCacheEntries)
	}
	checkGolden(t, tok)
}

// referenceBPE is simple_tokenizer.py's bpe transcribed (over symbol ids):
// find the lowest-ranked adjacent pair, merge all its occurrences left to
// right, repeat.
func referenceBPE(t *Tokenizer, word string) []int32 {
	w := make([]int32, len(word))
	for i := range len(word) {
		w[i] = t.byteID[word[i]]
	}
	w[len(w)-1] = t.byteEndID[word[len(word)-1]]
	for len(w) > 1 {
		best, found := merge{}, false
		var a, b int32
		for i := 0; i+1 < len(w); i++ {
			if m, ok := t.merges[pairKey(w[i], w[i+1])]; ok && (!found || m.rank < best.rank) {
				best, found, a, b = m, true, w[i], w[i+1]
			}
		}
		if !found {
			break
		}
		var next []int32
		for i := 0; i < len(w); {
			if i+1 < len(w) && w[i] == a && w[i+1] == b {
				next = append(next, best.id)
				i += 2
			} else {
				next = append(next, w[i])
				i++
			}
		}
		w = next
	}
	return w
}

func TestBPEMatchesReference(t *testing.T) {
	tok := loadFixture(t)
	words := []string{"aaaaaaaaaaaaaaaaaaaaaaaaa", "abababababababab", "!!!!!!!!!!!!!!!!!!!", "photographer", "subtracting", "hahahahahahahaha", "résumé", "ééééééééé", "🐱🐱🐱🐱"}
	for _, w := range words {
		if got, want := tok.bpe(w), referenceBPE(tok, w); !slices.Equal(got, want) {
			t.Errorf("bpe(%q) = %v, reference %v", w, got, want)
		}
	}
}

// A minimal valid snapshot for the error tests: the 512 byte-level symbols,
// "a b" -> "ab" and the special tokens.
func writeSnapshot(t *testing.T, vocab, merges string) string {
	t.Helper()
	dir := t.TempDir()
	if vocab != "" {
		if err := os.WriteFile(filepath.Join(dir, vocabFile), []byte(vocab), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if merges != "" {
		if err := os.WriteFile(filepath.Join(dir, mergesFile), []byte(merges), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// baseVocab returns vocab.json lines ("token": id) for the byte symbols,
// "ab", and the special tokens, one entry per line after "{".
func baseVocab() []string {
	var lines []string
	id := 0
	add := func(tok string) {
		lines = append(lines, fmt.Sprintf("%q: %d", tok, id))
		id++
	}
	// In CLIP's order: bytes_to_unicode's values sorted.
	runes := byteRunes()
	slices.Sort(runes[:])
	for _, r := range runes {
		add(string(r))
	}
	for _, r := range runes {
		add(string(r) + "</w>")
	}
	add("ab")
	add("<|startoftext|>")
	add("<|endoftext|>")
	return lines
}

func joinVocab(lines []string) string {
	return "{\n" + strings.Join(lines, ",\n") + "\n}\n"
}

func TestLoadMinimal(t *testing.T) {
	tok, err := Load(writeSnapshot(t, joinVocab(baseVocab()), "#version: 0.2\na b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Vocab() != 515 || tok.SOT() != 513 || tok.EOT() != 514 {
		t.Errorf("Vocab, SOT, EOT = %d, %d, %d", tok.Vocab(), tok.SOT(), tok.EOT())
	}
	// "ab" merges, "ab</w>" does not exist: "abab" -> ab, a, b</w>.
	a, b := tok.byteID['a'], tok.byteEndID['b']
	if got, want := tok.Encode("abab"), []int32{512, a, b}; !slices.Equal(got, want) {
		t.Errorf("Encode(abab) = %v, want %v", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	base := baseVocab()
	good := joinVocab(base)
	// Line numbers in vocab.json: line 1 is "{", entry i is on line i+2.
	with := func(i int, entry string) string {
		lines := slices.Clone(base)
		lines[i] = entry
		return joinVocab(lines)
	}
	without := func(i int) string {
		return joinVocab(slices.Delete(slices.Clone(base), i, i+1))
	}
	const merges = "#version: 0.2\na b\n"
	for _, c := range []struct {
		name          string
		vocab, merges string
		want          []string
	}{
		{"no vocab", "", merges, []string{"vocab.json", "no such file"}},
		{"no merges", good, "", []string{"merges.txt", "no such file"}},
		{"syntax", "{\n\"a\": 1,\n\"b\" 2\n}", merges, []string{"vocab.json", "line 3"}},
		{"truncated", "{\n\"a\": 1,\n", merges, []string{"vocab.json", "line 3", "unexpected end"}},
		{"not object", "[1, 2]", merges, []string{"vocab.json", "line 1", "JSON object"}},
		{"string id", with(5, `"&": "five"`), merges, []string{"vocab.json", "line 7", `"&"`, "integer"}},
		{"object id", with(5, `"&": {}`), merges, []string{"vocab.json", "line 7", "an object"}},
		{"negative id", with(5, `"&": -1`), merges, []string{"vocab.json", "line 7", "-1"}},
		{"fractional id", with(5, `"&": 1.5`), merges, []string{"vocab.json", "line 7", "1.5"}},
		{"huge id", with(5, `"&": 99999999999`), merges, []string{"vocab.json", "line 7"}},
		{"duplicate token", with(5, `"%": 9999`), merges, []string{"vocab.json", "line 7", `"%"`, "twice"}},
		{"duplicate id", with(5, `"&": 3`), merges, []string{"vocab.json", "line 7", "id 3"}},
		{"trailing data", good + "{}", merges, []string{"vocab.json", "after the JSON object"}},
		{"no sot", without(513), merges, []string{"vocab.json", "<|startoftext|>"}},
		{"no eot", without(514), merges, []string{"vocab.json", "<|endoftext|>"}},
		{"no byte symbol", without(0), merges, []string{"vocab.json", `"!"`, "0x21"}},
		{"no end symbol", without(256), merges, []string{"vocab.json", `"!</w>"`}},
		{"three fields", good, "#version: 0.2\na b\na b c\n", []string{"merges.txt", "line 3", "two symbols"}},
		{"one field", good, "#version: 0.2\nab\n", []string{"merges.txt", "line 2", "two symbols"}},
		{"blank line", good, "#version: 0.2\n\na b\n", []string{"merges.txt", "line 2"}},
		{"unknown left", good, "#version: 0.2\nzz b\n", []string{"merges.txt", "line 2", `"zz"`}},
		{"unknown right", good, "#version: 0.2\na zz\n", []string{"merges.txt", "line 2", `"zz"`}},
		{"unknown merged", good, "#version: 0.2\na b\nb a\n", []string{"merges.txt", "line 3", `"ba"`}},
		{"duplicate merge", good, "#version: 0.2\na b\na b\n", []string{"merges.txt", "line 3", "line 2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeSnapshot(t, c.vocab, c.merges))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestMergesFormat(t *testing.T) {
	vocab := joinVocab(baseVocab())
	for _, merges := range []string{
		"#version: 0.2\na b",         // no final newline
		"#version: 0.2\r\na b\r\n",   // CRLF
		"a b\n\n\n",                  // no header, trailing blank lines
		"\uFEFF#version: 0.2\na b\n", // BOM
	} {
		tok, err := Load(writeSnapshot(t, vocab, merges))
		if err != nil {
			t.Errorf("merges %q: %v", merges, err)
			continue
		}
		if want := []int32{512, tok.byteID['a'], tok.byteEndID['b']}; !slices.Equal(tok.Encode("abab"), want) || len(tok.merges) != 1 {
			t.Errorf("merges %q: %d merges, Encode(abab) = %v", merges, len(tok.merges), tok.Encode("abab"))
		}
	}
}

func FuzzEncode(f *testing.F) {
	tok := loadFixture(f)
	for _, g := range golden {
		f.Add(g.text)
	}
	for _, s := range []string{"\xff\xfe", "'s'S'll", "<|startoftext|", "\u0130\u03a3", "a\u0301\u0301", "🐱🐱", "\x00\x01\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		for _, id := range ids {
			if id < 0 || int(id) >= tok.Vocab() {
				t.Fatalf("Encode(%q): id %d outside [0, %d)", s, id, tok.Vocab())
			}
		}
		if again := tok.Encode(s); !slices.Equal(ids, again) {
			t.Fatalf("Encode(%q) not deterministic: %v then %v", s, ids, again)
		}
		ctx := tok.EncodeContextHF(s, 77)
		if len(ctx) != 77 || ctx[0] != tok.SOT() || !slices.Contains(ctx, tok.EOT()) {
			t.Fatalf("EncodeContextHF(%q, 77) = %v", s, ctx)
		}
		// Each word's BPE agrees with the transcription of simple_tokenizer.py.
		clean := cleanText(s)
		if !utf8.ValidString(clean) {
			t.Fatalf("cleanText(%q) is not UTF-8", s)
		}
		for _, loc := range wordPattern.FindAllStringIndex(clean, -1) {
			w := clean[loc[0]:loc[1]]
			if len(w) < 2 || w == sotToken || w == eotToken {
				continue
			}
			if got, want := tok.bpe(w), referenceBPE(tok, w); !slices.Equal(got, want) {
				t.Fatalf("bpe(%q) = %v, reference %v", w, got, want)
			}
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	tok := loadFixture(b)
	text := golden[11].text
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text)
	}
}
