package imagecsv

import (
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseTable(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		rows     int
		err      string
	}{
		{"plain", "image_id,dx\nISIC_1,nv\nISIC_2,mel\n", 2, ""},
		{"byte order mark", "\xef\xbb\xbfimage,level\n10_left,0\n", 1, ""},
		{"quoted JSON cell", "raw,filename\n\"[\"\"a dog\"\"]\",1.jpg\n", 1, ""},
		{"empty", "", 0, "empty file"},
		{"ragged row", "a,b\n1,2\n3\n", 0, "line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := ParseTable(strings.NewReader(tc.in), "x.csv")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "x.csv") {
					t.Fatalf("err = %v, want one naming x.csv and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tb.Rows) != tc.rows {
				t.Fatalf("%d rows, want %d", len(tb.Rows), tc.rows)
			}
		})
	}
	tb, _ := ParseTable(strings.NewReader("\xef\xbb\xbfimage,level\n"), "t.csv")
	if i, err := tb.Column("image"); err != nil || i != 0 {
		t.Fatalf("Column(image) = %d, %v; the byte-order mark must not stick to the first name", i, err)
	}
	if _, err := tb.Column("dx"); err == nil || !strings.Contains(err.Error(), `"image", "level"`) {
		t.Fatalf("a missing column must list the columns there are: %v", err)
	}
}

func writeImage(t *testing.T, p string, c color.RGBA) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		t.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 6, 4))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, 255
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if strings.HasSuffix(p, ".png") {
		err = png.Encode(f, img)
	} else {
		err = jpeg.Encode(f, img, &jpeg.Options{Quality: 100})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestIndexAndDecode(t *testing.T) {
	root := t.TempDir()
	part1, part2 := filepath.Join(root, "part_1"), filepath.Join(root, "part_2")
	writeImage(t, filepath.Join(part1, "ISIC_1.jpg"), color.RGBA{250, 0, 0, 255})
	writeImage(t, filepath.Join(part2, "sub", "ISIC_2.png"), color.RGBA{0, 0, 250, 255})
	writeImage(t, filepath.Join(root, "copy", "ISIC_1.png"), color.RGBA{0, 250, 0, 255})
	os.WriteFile(filepath.Join(part1, "notes.txt"), []byte("not an image"), 0o666)

	ix, err := NewIndex([]string{part1, part2})
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != 2 {
		t.Fatalf("indexed %d images, want 2 (the text file is not one)", ix.Len())
	}
	for _, name := range []string{"ISIC_1", "ISIC_1.jpg", "ISIC_2", "sub/ISIC_2.png", " ISIC_2.png "} {
		if _, err := ix.Find(name); err != nil {
			t.Errorf("Find(%q): %v", name, err)
		}
	}
	if _, err := ix.Find("ISIC_3"); err == nil || !strings.Contains(err.Error(), "among the 2 images") {
		t.Errorf("a missing image must say how many were found: %v", err)
	}
	all, _ := NewIndex([]string{root})
	if _, err := all.Find("ISIC_1"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("two files with one stem must be refused, not picked: %v", err)
	}
	if _, err := all.Find("part_1/ISIC_1.jpg"); err != nil {
		t.Errorf("a relative path stays unambiguous: %v", err)
	}

	p1, _ := ix.Find("ISIC_1")
	p2, _ := ix.Find("ISIC_2")
	var last int
	px, err := Decode(context.Background(), nil, []string{p2, p1, p2}, 3, 2, 3, 0, func(done int) { last = done })
	if err != nil {
		t.Fatal(err)
	}
	if last != 3 {
		t.Errorf("progress ended at %d, want 3", last)
	}
	if len(px) != 3*3*2*3 {
		t.Fatalf("%d bytes, want 54", len(px))
	}
	// Order kept: blue, red, blue (channel-major, 6 pixels per channel).
	for i, want := range []struct{ r, b byte }{{0, 250}, {250, 0}, {0, 250}} {
		img := px[i*18 : (i+1)*18]
		if d(img[0], want.r) > 8 || d(img[12], want.b) > 8 {
			t.Errorf("image %d: R=%d B=%d, want about %d and %d", i, img[0], img[12], want.r, want.b)
		}
	}
	grey, err := Decode(context.Background(), nil, []string{p1}, 1, 2, 2, 0, nil)
	if err != nil || len(grey) != 4 {
		t.Fatalf("grey decode: %d bytes, %v", len(grey), err)
	}
	bad := filepath.Join(root, "bad.png")
	os.WriteFile(bad, []byte("\x89PNG broken"), 0o666)
	if _, err := Decode(context.Background(), nil, []string{p1, bad}, 3, 2, 2, 0, nil); err == nil || !strings.Contains(err.Error(), "bad.png") {
		t.Errorf("a broken image must be named: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Decode(ctx, nil, []string{p1, p2}, 3, 2, 2, 0, nil); err == nil {
		t.Error("a cancelled context must stop decoding")
	}
}

func d(a, b byte) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func TestCaptionsAndVocabulary(t *testing.T) {
	for _, tc := range []struct {
		cell string
		want []string
		err  bool
	}{
		{`["Two dogs run.", "A dog's toy"]`, []string{"Two dogs run.", "A dog's toy"}, false},
		{"A man in a red shirt", []string{"A man in a red shirt"}, false},
		{`[]`, nil, true},
		{`[1, 2]`, nil, true},
		{"  ", nil, true},
	} {
		got, err := Captions(tc.cell)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("Captions(%q) = %q, %v", tc.cell, got, err)
		}
	}
	if w := Words("A dog's red-ball, 2 DOGS!"); !slices.Equal(w, []string{"a", "dog's", "red", "ball", "2", "dogs"}) {
		t.Errorf("Words = %q", w)
	}
	v := BuildVocabulary([][]string{{"a", "dog", "runs"}, {"a", "cat"}, {"a", "dog"}}, 3)
	if !slices.Equal(v.Words, []string{"<pad>", "<unk>", "a", "dog", "cat"}) {
		t.Fatalf("vocabulary %q: want the 3 most frequent words, ties alphabetical", v.Words)
	}
	got := v.Encode(nil, []string{"a", "dog", "runs", "a", "cat"}, 4)
	if !slices.Equal(got, []int64{2, 3, Unknown, 2}) {
		t.Errorf("Encode cut = %v", got)
	}
	if got := v.Encode(nil, []string{"cat"}, 3); !slices.Equal(got, []int64{4, Pad, Pad}) {
		t.Errorf("Encode padded = %v", got)
	}
}

func FuzzParseTable(f *testing.F) {
	f.Add("image_id,dx\nISIC_1,nv\n")
	f.Add("raw,filename\n\"[\"\"a\"\"]\",1.jpg\n")
	f.Add("\xef\xbb\xbfa\n\"unterminated\n")
	f.Fuzz(func(t *testing.T, in string) {
		tb, err := ParseTable(strings.NewReader(in), "f.csv")
		if err != nil {
			return
		}
		for _, r := range tb.Rows {
			if len(r) != len(tb.Header) {
				t.Fatalf("row of %d fields under a header of %d", len(r), len(tb.Header))
			}
			if len(r) > 0 {
				Captions(r[0])
			}
		}
	})
}
