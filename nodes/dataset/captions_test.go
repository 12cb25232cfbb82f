package dataset

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/hfparquet"
	"github.com/gatepipe/gatepipe/internal/hffixture"
)

// writeWinoground writes a Winoground-layout shard of n items: item i's
// two images differ in class, and its captions swap two words.
func writeWinoground(t *testing.T, p string, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, uint64(n)))
	var imgs [][2][]byte
	var caps [][2]string
	for i := range n {
		imgs = append(imgs, [2][]byte{hffixture.PNG(hffixture.ClassImage(2*i, 8, 8, rng)), hffixture.PNG(hffixture.ClassImage(2*i+1, 8, 8, rng))})
		caps = append(caps, [2]string{fmt.Sprintf("a dog %d chases a cat", i), fmt.Sprintf("a cat %d chases a dog", i)})
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := hffixture.Winoground(f, imgs, caps, 4); err != nil {
		t.Fatal(err)
	}
}

// TestWinogroundItemsStayTogether: each row's two image-caption pairs are
// consecutive examples of one split, whatever the seeded split and the
// caps draw; the store says so (group 2) and carries metric_names.
func TestWinogroundItemsStayTogether(t *testing.T) {
	dir := t.TempDir()
	writeWinoground(t, filepath.Join(dir, "test.parquet"), 40)
	cfg := `
source { url = "test.parquet" }
format          = "parquet"
train           = ["test.parquet"]
image_columns   = ["image_0", "image_1"]
caption_columns = ["caption_0", "caption_1"]
image_size      = [6, 6]
val_fraction    = 0.05
test_fraction   = 0.15
metric_names    = { "Img2Txt Acc@1" = "Img2Txt" }
`
	for _, caps := range []string{"", "max_train = 7\nmax_test = 3\n"} {
		n, diags := decode(t, dir, cfg+caps)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		v, out := run(t, n)
		if v.GetAttr("task").AsString() != "retrieval" {
			t.Fatalf("task %v", v.GetAttr("task"))
		}
		meta, err := examplestore.ReadMeta(out)
		if err != nil {
			t.Fatal(err)
		}
		if meta.Group != 2 || meta.MetricNames["Img2Txt Acc@1"] != "Img2Txt" {
			t.Fatalf("group %d, metric names %v", meta.Group, meta.MetricNames)
		}
		want := map[string]int{"train": 2 * 32, "val": 2 * 2, "test": 2 * 6}
		if caps != "" {
			want["train"], want["test"] = 2*7, 2*3
		}
		// The images are decoded a batch at a time: each example's
		// pixels are those of its pair in one whole read.
		whole, err := hfparquet.Read(context.Background(), []string{filepath.Join(dir, "test.parquet")}, hfparquet.Options{
			Pairs: []hfparquet.Pair{{Image: "image_0", Text: "caption_0"}, {Image: "image_1", Text: "caption_1"}}, Height: 6, Width: 6})
		if err != nil {
			t.Fatal(err)
		}
		const size = 3 * 6 * 6
		seen := map[int64]bool{}
		for name, count := range want {
			s, err := examplestore.ReadSplit(out, name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Len() != count {
				t.Fatalf("%s: %d examples, want %d", name, s.Len(), count)
			}
			for k, i := range s.Index {
				if !bytes.Equal(s.X.Data[k*size:(k+1)*size], whole.U8[int(i)*size:(int(i)+1)*size]) {
					t.Fatalf("%s: example %d (pair %d) differs from the whole read", name, k, i)
				}
			}
			for k := 0; k < s.Len(); k += 2 {
				a, b := s.Index[k], s.Index[k+1]
				if a%2 != 0 || b != a+1 {
					t.Fatalf("%s: examples %d and %d are rows %d and %d, not one item's pair", name, k, k+1, a, b)
				}
				if seen[a] {
					t.Fatalf("row %d is in two splits", a/2)
				}
				seen[a] = true
			}
			words := meta.Vocab
			q := s.Q.Int64s()
			first := strings.Join([]string{words[q[0]], words[q[1]]}, " ")
			second := strings.Join([]string{words[q[s.Q.Shape[1]]], words[q[s.Q.Shape[1]+1]]}, " ")
			if first != "a dog" || second != "a cat" {
				t.Fatalf("%s: captions start %q and %q, want the item's caption_0 then caption_1", name, first, second)
			}
		}
	}
}

// TestCaptionContestReadsOnePairPerRow: NYCC's explanation config, its
// own train/validation/test files; a capped run decodes the kept rows'
// images, the same as the full read's.
func TestCaptionContestReadsOnePairPerRow(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 5))
	for split, rows := range map[string]int{"train": 12, "validation": 4, "test": 5} {
		var imgs [][]byte
		var contests []int32
		var caps []string
		for i := range rows {
			imgs = append(imgs, hffixture.PNG(hffixture.ClassImage(i, 8, 8, rng)))
			contests = append(contests, int32(500+i/2))
			caps = append(caps, fmt.Sprintf("I told you %s %d was a bad idea", split, i))
		}
		var buf bytes.Buffer
		if err := hffixture.CaptionContest(&buf, imgs, contests, caps, 5); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, split+".parquet"), buf.Bytes(), 0o644)
	}
	cfg := `
source { url = "train.parquet" }
source { url = "validation.parquet" }
source { url = "test.parquet" }
format         = "parquet"
train          = ["train.parquet"]
val            = ["validation.parquet"]
test           = ["test.parquet"]
caption_column = "caption_choices"
image_size     = [6, 6]
`
	full, diags := decode(t, dir, cfg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	capped, _ := decode(t, dir, cfg+"max_train = 5\n")
	_, fullOut := run(t, full)
	_, cappedOut := run(t, capped)
	all, _ := examplestore.ReadSplit(fullOut, "train")
	some, _ := examplestore.ReadSplit(cappedOut, "train")
	if all.Len() != 12 || some.Len() != 5 {
		t.Fatalf("%d and %d training examples, want 12 and 5", all.Len(), some.Len())
	}
	size := 3 * 6 * 6
	for k, i := range some.Index {
		if !bytes.Equal(some.X.Data[k*size:(k+1)*size], all.X.Data[int(i)*size:(int(i)+1)*size]) {
			t.Fatalf("kept example %d (row %d) differs from the full read", k, i)
		}
	}
	meta, _ := examplestore.ReadMeta(fullOut)
	if meta.Task != "retrieval" || meta.Group != 0 || meta.Splits["val"] != 4 || meta.Splits["test"] != 5 {
		t.Fatalf("meta %+v", meta)
	}
}

// TestCaptionColumnsAreChecked: bad pairings are errors at decode.
func TestCaptionColumnsAreChecked(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ cfg, want string }{
		{"image_columns = [\"a\", \"b\"]\ncaption_columns = [\"c\"]\nimage_size = [4, 4]", "pair up"},
		{"caption_column = \"c\"\nimage_columns = [\"a\"]\ncaption_columns = [\"c\"]\nimage_size = [4, 4]", "not both"},
		{"caption_column = \"c\"\nlabel_column = \"l\"\nimage_size = [4, 4]", "no label_column"},
		{"caption_column = \"c\"", "image_size"},
		{"caption_column = \"c\"\nimage_size = [4, 4]\ntask = \"classification\"", "retrieval task"},
	} {
		_, diags := decode(t, dir, "source { url = \"a.parquet\" }\nformat = \"parquet\"\ntrain = [\"a.parquet\"]\n"+c.cfg)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.cfg, diags, c.want)
		}
	}
	_, diags := decode(t, dir, "source { url = \"a.zip\" }\nformat = \"idx\"\ntrain = [\"a\"]\nimage_columns = [\"a\"]\ncaption_columns = [\"b\"]")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Parquet columns") {
		t.Errorf("image_columns on idx: %v", diags)
	}
}
