package dataset

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
)

func TestGeneratedDatasets(t *testing.T) {
	for _, c := range []struct {
		task, storeTask string
		yShape          []int
	}{
		{"shape", "classification", []int{90}},
		{"count", "regression", []int{90, 1}},
		{"colours", "multilabel", []int{90, 4}},
		{"segment", "segmentation", []int{90, 16, 16}},
		{"video", "video", []int{90}},
		{"relational", "relational", []int{90}},
		{"captions", "retrieval", []int{90}},
		{"fewshot", "fewshot", []int{90}},
	} {
		t.Run(c.task, func(t *testing.T) {
			n, diags := decode(t, t.TempDir(), `
format = "generated"
generator {
  task  = "`+c.task+`"
  train = 100
  test  = 40
  size  = 16
  seed  = 2
}
val_fraction = 0.1
`)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			v, out := run(t, n)
			if v.GetAttr("task").AsString() != c.storeTask {
				t.Fatalf("task %s", v.GetAttr("task").AsString())
			}
			meta, err := examplestore.ReadMeta(out)
			if err != nil {
				t.Fatal(err)
			}
			if meta.Splits["train"] != 90 || meta.Splits["val"] != 10 || meta.Splits["test"] != 40 {
				t.Fatalf("splits %v", meta.Splits)
			}
			s, err := examplestore.ReadSplit(out, "train")
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(s.Y.Shape) != fmt.Sprint(c.yShape) {
				t.Fatalf("y shape %v, want %v", s.Y.Shape, c.yShape)
			}
			want := "[90 3 16 16]"
			if c.task == "video" {
				want = "[90 4 3 16 16]"
			}
			if (c.task == "relational" || c.task == "captions") && (fmt.Sprint(s.Q.Shape) != "[90 6]" || len(meta.Vocab) == 0) {
				t.Fatalf("questions %v, vocabulary %v", s.Q.Shape, meta.Vocab)
			}
			if fmt.Sprint(s.X.Shape) != want {
				t.Fatalf("x shape %v", s.X.Shape)
			}
		})
	}
}

func TestGeneratorErrors(t *testing.T) {
	for src, want := range map[string]string{
		`format = "generated"`: "needs a generator block",
		"format = \"generated\"\ngenerator {\n  task = \"episodes\"\n  train = 1\n  test = 1\n}": "not one of",
		"format = \"idx\"\ntrain = [\"a\"]": "at least one source",
		"format = \"generated\"\ntask = \"regression\"\ngenerator {\n  task = \"count\"\n  train = 1\n  test = 1\n}": "remove task",
	} {
		_, diags := decode(t, t.TempDir(), src)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), want) {
			t.Errorf("%q: %v, want %q", src, diags, want)
		}
	}
}
