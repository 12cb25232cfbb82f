package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/internal/annotatedfixture"
	"github.com/google/go-cmp/cmp"
)

// writeZip writes a zip archive of files (name → content) into dir.
func writeZip(t *testing.T, dir, name string, files map[string][]byte) {
	t.Helper()
	b, err := annotatedfixture.Zip(files)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ham10000Fixture writes the Kaggle HAM10000 archive with 12 images.
func ham10000Fixture(t *testing.T, dir string) {
	b, err := annotatedfixture.HAM10000(12)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "skin-cancer-mnist-ham10000.zip"), b, 0o644)
}

const hamConfig = `
source {
  url = "skin-cancer-mnist-ham10000.zip"
}
format       = "image_csv"
annotations  = ["HAM10000_metadata.csv"]
images       = ["HAM10000_images_part_*"]
image_column = "image_id"
label_column = "dx"
image_size   = [2, 2]
channels     = 1
test_fraction = 0.25
%s
`

func TestImageCSVKaggleLayout(t *testing.T) {
	dir := t.TempDir()
	ham10000Fixture(t, dir)
	level := annotatedfixture.HAM10000Levels
	for _, tc := range []struct {
		name, extra string
		multi       bool
	}{
		{"classification", "", false},
		{"multilabel one-hot", `task = "multilabel"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, diags := decode(t, dir, strings.Replace(hamConfig, "%s", tc.extra, 1))
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			v, out := run(t, n)
			classes := annotatedfixture.HAM10000Classes
			var got []string
			for _, c := range v.GetAttr("classes").AsValueSlice() {
				got = append(got, c.AsString())
			}
			if diff := cmp.Diff(classes, got); diff != "" {
				t.Fatalf("classes (-want +got):\n%s", diff)
			}
			if got := v.GetAttr("splits").AsValueMap(); got["train"].AsBigFloat().String() != "9" || got["test"].AsBigFloat().String() != "3" {
				t.Fatalf("splits %v, want 9 train and 3 test", got)
			}
			s, err := examplestore.ReadSplit(out, "train")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int{9, 1, 2, 2}, s.X.Shape); diff != "" {
				t.Fatal(diff)
			}
			for k := 0; k < s.Len(); k++ {
				var class int
				if tc.multi {
					K := len(classes)
					row := s.Y.Float32s()[k*K : (k+1)*K]
					hot := 0
					for c, y := range row {
						if y == 1 {
							class, hot = c, hot+1
						}
					}
					if hot != 1 {
						t.Fatalf("example %d: target row %v is not one-hot", k, row)
					}
				} else {
					class = int(s.Y.Int64s()[k])
				}
				if got, want := s.X.Data[k*4], level[classes[class]]; absDiff(got, want) > 6 {
					t.Fatalf("example %d of class %s has grey level %d, want about %d: images and labels disagree", k, classes[class], got, want)
				}
			}
		})
	}
}

func absDiff(a, b byte) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// TestImageCSVListsAndSeparator is ChestX-ray14's layout: zips of PNGs
// under images/, a CSV with "|"-separated findings, and train/test lists.
func TestImageCSVListsAndSeparator(t *testing.T) {
	dir := t.TempDir()
	writeZip(t, dir, "images_001.zip", map[string][]byte{
		"images/00000001_000.png": annotatedfixture.GreyImage(10, true),
		"images/00000002_000.png": annotatedfixture.GreyImage(20, true),
		"images/00000003_000.png": annotatedfixture.GreyImage(30, true),
	})
	writeZip(t, dir, "images_002.zip", map[string][]byte{
		"images/00000004_000.png": annotatedfixture.GreyImage(40, true),
	})
	os.WriteFile(filepath.Join(dir, "Data_Entry_2017_v2020.csv"), []byte(`Image Index,Finding Labels,Follow-up #
00000001_000.png,Cardiomegaly|Effusion,0
00000002_000.png,No Finding,0
00000003_000.png,Effusion,0
00000004_000.png,Cardiomegaly,1
`), 0o644)
	os.WriteFile(filepath.Join(dir, "train_val_list.txt"), []byte("00000001_000.png\n00000002_000.png\n00000003_000.png\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "test_list.txt"), []byte("00000004_000.png\n"), 0o644)
	n, diags := decode(t, dir, `
source { url = "images_001.zip" }
source { url = "images_002.zip" }
source {
  url     = "Data_Entry_2017_v2020.csv"
  extract = false
}
source { url = "train_val_list.txt" }
source { url = "test_list.txt" }
format          = "image_csv"
task            = "multilabel"
annotations     = ["Data_Entry_2017_v2020.csv"]
image_column    = "Image Index"
label_column    = "Finding Labels"
label_separator = "|"
train           = ["train_val_list.txt"]
test            = ["test_list.txt"]
image_size      = [2, 2]
channels        = 1
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out := run(t, n)
	if v.GetAttr("task").AsString() != "multilabel" {
		t.Fatalf("task %v", v.GetAttr("task"))
	}
	train, _ := examplestore.ReadSplit(out, "train")
	// Classes sorted: Cardiomegaly, Effusion, No Finding.
	if diff := cmp.Diff([]float32{1, 1, 0, 0, 0, 1, 0, 1, 0}, train.Y.Float32s()); diff != "" {
		t.Fatalf("multi-hot targets (-want +got):\n%s", diff)
	}
	test, _ := examplestore.ReadSplit(out, "test")
	if diff := cmp.Diff([]float32{1, 0, 0}, test.Y.Float32s()); diff != "" || absDiff(test.X.Data[0], 40) > 2 {
		t.Fatalf("test split: targets %v pixels %v", test.Y.Float32s(), test.X.Data)
	}
}

// TestCaptionsCSV is nlphuji/flickr30k's layout: flickr30k-images.zip and
// a CSV whose "raw" column holds five captions as a JSON list and whose
// "split" column assigns the images.
func TestCaptionsCSV(t *testing.T) {
	dir := t.TempDir()
	images, csv, err := annotatedfixture.Flickr30k([]annotatedfixture.Caption{
		{Text: "A dog runs on grass.", Split: "train"}, {Text: "Two dogs play.", Split: "train"}, {Text: "A man rides a bike.", Split: "train"},
		{Text: "A red bike.", Split: "val"}, {Text: "A cat sleeps.", Split: "test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "flickr30k-images.zip"), images, 0o644)
	os.WriteFile(filepath.Join(dir, "flickr_annotations_30k.csv"), csv, 0o644)
	n, diags := decode(t, dir, `
source { url = "flickr30k-images.zip" }
source { url = "flickr_annotations_30k.csv" }
format             = "captions_csv"
annotations        = ["flickr_annotations_30k.csv"]
image_column       = "filename"
caption_column     = "raw"
split_column       = "split"
image_size         = [2, 2]
max_tokens = 4
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out := run(t, n)
	if v.GetAttr("task").AsString() != "retrieval" {
		t.Fatalf("task %v", v.GetAttr("task"))
	}
	if got := v.GetAttr("splits").AsValueMap(); len(got) != 3 || got["train"].AsBigFloat().String() != "3" {
		t.Fatalf("splits %v", got)
	}
	meta, err := examplestore.ReadMeta(out)
	if err != nil {
		t.Fatal(err)
	}
	// "a" is the most frequent training word; "cat" and "sleeps" occur
	// in test only, so they are unknown there.
	if len(meta.Vocab) < 3 || meta.Vocab[2] != "a" {
		t.Fatalf("vocabulary %q", meta.Vocab)
	}
	train, _ := examplestore.ReadSplit(out, "train")
	if diff := cmp.Diff([]int{3, 4}, train.Q.Shape); diff != "" {
		t.Fatal(diff)
	}
	test, _ := examplestore.ReadSplit(out, "test")
	if diff := cmp.Diff([]int64{2, 1, 1, 0}, test.Q.Int64s()); diff != "" {
		t.Fatalf("test caption tokens (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 3, 2, 2}, test.X.Shape); diff != "" {
		t.Fatal(diff)
	}
}

func TestAnnotatedErrors(t *testing.T) {
	dir := t.TempDir()
	ham10000Fixture(t, dir)
	for name, tc := range map[string]struct{ config, want string }{
		"missing column":         {strings.Replace(hamConfig, `label_column = "dx"`, `label_column = "diagnosis"`, 1), `no column "diagnosis"; its columns are "lesion_id", "image_id", "dx"`},
		"ambiguous image":        {strings.Replace(hamConfig, `images       = ["HAM10000_images_part_*"]`, "", 1), "ambiguous"},
		"images not a directory": {strings.Replace(hamConfig, `"HAM10000_images_part_*"`, `"HAM10000_metadata.csv"`, 1), "not a directory"},
	} {
		t.Run(name, func(t *testing.T) {
			n, diags := decode(t, dir, strings.Replace(tc.config, "%s", "", 1))
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			_, _, err := runErr(t, n)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	for name, tc := range map[string]struct{ src, want string }{
		"no annotations":         {"source { url = \"a.zip\" }\nformat = \"image_csv\"\nimage_column = \"i\"\nlabel_column = \"l\"\nimage_size = [2, 2]", "needs annotations"},
		"no label column":        {"source { url = \"a.zip\" }\nformat = \"image_csv\"\nannotations = [\"a.csv\"]\nimage_column = \"i\"\nimage_size = [2, 2]", "needs label_column"},
		"no image size":          {"source { url = \"a.zip\" }\nformat = \"image_csv\"\nannotations = [\"a.csv\"]\nimage_column = \"i\"\nlabel_column = \"l\"", "image_size"},
		"separator single":       {"source { url = \"a.zip\" }\nformat = \"image_csv\"\nannotations = [\"a.csv\"]\nimage_column = \"i\"\nlabel_column = \"l\"\nlabel_separator = \"|\"\nimage_size = [2, 2]", "needs task = \"multilabel\""},
		"captions with labels":   {"source { url = \"a.zip\" }\nformat = \"captions_csv\"\nannotations = [\"a.csv\"]\nimage_column = \"i\"\ncaption_column = \"c\"\nlabel_column = \"l\"\nimage_size = [2, 2]", "no labels"},
		"split column and lists": {"source { url = \"a.zip\" }\nformat = \"captions_csv\"\nannotations = [\"a.csv\"]\nimage_column = \"i\"\ncaption_column = \"c\"\nsplit_column = \"s\"\ntrain = [\"t.txt\"]\nimage_size = [2, 2]", "not both"},
		"captions task":          {"source { url = \"a.zip\" }\nformat = \"captions_csv\"\nannotations = [\"a.csv\"]\nimage_column = \"i\"\ncaption_column = \"c\"\ntask = \"classification\"\nimage_size = [2, 2]", "task must be one of retrieval"},
	} {
		t.Run(name, func(t *testing.T) {
			_, diags := decode(t, dir, tc.src)
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
				t.Fatalf("diags %v, want %q", diags, tc.want)
			}
		})
	}
}
