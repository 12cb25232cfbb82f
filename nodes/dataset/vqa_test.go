package dataset

import (
	"bytes"
	"image"
	"image/color"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/internal/hffixture"
	"github.com/google/go-cmp/cmp"
)

// writeVQAShard writes a CLEVR-Math-layout shard of n rows: question i
// asks about i%3 objects and its answer is i%3.
func writeVQAShard(t *testing.T, p string, n int, words string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	var imgs [][]byte
	var qs []string
	var ans []int64
	for i := range n {
		img := image.NewRGBA(image.Rect(0, 0, 6, 6))
		for k := range 6 {
			img.Set(k, k, color.RGBA{uint8(rng.IntN(255)), 0, 0, 255})
		}
		imgs = append(imgs, hffixture.PNG(img))
		qs = append(qs, "Subtract all "+words+". How many "+[]string{"cubes", "spheres", "cylinders"}[i%3]+" are left?")
		ans = append(ans, int64(i%3))
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := hffixture.VQA(f, imgs, qs, ans, 4); err != nil {
		t.Fatal(err)
	}
}

func TestParquetQuestionsAreTokens(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "general"), 0o777)
	writeVQAShard(t, filepath.Join(dir, "train.parquet"), 9, "red things")
	writeVQAShard(t, filepath.Join(dir, "test.parquet"), 3, "purple things")
	n, diags := decode(t, dir, `
source { url = "train.parquet" }
source { url = "test.parquet" }
format          = "parquet"
train           = ["train.parquet"]
test            = ["test.parquet"]
question_column = "question"
max_tokens      = 5
image_size      = [4, 4]
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out := run(t, n)
	if v.GetAttr("task").AsString() != "relational" {
		t.Fatalf("task %v, want relational (image + question -> answer)", v.GetAttr("task"))
	}
	meta, _ := examplestore.ReadMeta(out)
	train, _ := examplestore.ReadSplit(out, "train")
	test, _ := examplestore.ReadSplit(out, "test")
	if diff := cmp.Diff([]int{9, 5}, train.Q.Shape); diff != "" {
		t.Fatal(diff)
	}
	// "purple" never occurs in training: unknown (1) in the test split's
	// shared vocabulary; "subtract" and "all" keep their training tokens.
	q := test.Q.Int64s()[:5]
	if meta.Vocab[q[0]] != "subtract" || meta.Vocab[q[1]] != "all" || q[2] != 1 {
		t.Fatalf("test question tokens %v over %q", q, meta.Vocab)
	}
	if diff := cmp.Diff([]int64{0, 1, 2}, test.Y.Int64s()); diff != "" {
		t.Fatalf("answers (-want +got):\n%s", diff)
	}
	_, diags = decode(t, dir, "source { url = \"a.zip\" }\nformat = \"idx\"\ntrain = [\"a\"]\nquestion_column = \"q\"")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Parquet string column") {
		t.Fatalf("question_column on a non-Parquet format: %v", diags)
	}
}

// TestCappedParquetDecodesTheSameImages: with max_train the Parquet
// images are decoded in a second pass, for the kept rows only; each kept
// example has the pixels and label the full read gives the same row.
func TestCappedParquetDecodesTheSameImages(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	var imgs [][]byte
	var labels []int64
	for i := range 40 {
		imgs = append(imgs, hffixture.PNG(hffixture.ClassImage(i%4, 10, 10, rng)))
		labels = append(labels, int64(i%4))
	}
	f, _ := os.Create(filepath.Join(dir, "train.parquet"))
	if err := hffixture.ImageClassification(f, imgs, labels, []string{"a", "b", "c", "d"}, 8); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfg := "source { url = \"train.parquet\" }\nformat = \"parquet\"\ntrain = [\"train.parquet\"]\nimage_size = [6, 6]\n"
	full, _ := decode(t, dir, cfg)
	capped, _ := decode(t, dir, cfg+"max_train = 8\n")
	_, fullOut := run(t, full)
	_, cappedOut := run(t, capped)
	all, _ := examplestore.ReadSplit(fullOut, "train")
	some, _ := examplestore.ReadSplit(cappedOut, "train")
	if some.Len() != 8 {
		t.Fatalf("%d training examples, want 8", some.Len())
	}
	size := 3 * 6 * 6
	for k, i := range some.Index {
		if !bytes.Equal(some.X.Data[k*size:(k+1)*size], all.X.Data[int(i)*size:(int(i)+1)*size]) || some.Y.Int64s()[k] != all.Y.Int64s()[i] {
			t.Fatalf("kept example %d (row %d) differs from the full read", k, i)
		}
	}
}
