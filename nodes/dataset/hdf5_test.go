package dataset

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/internal/h5fixture"
)

// writeNYUFrame writes a fast-depth-layout file: a 6x8 image whose red
// plane is k and a depth map rising left to right from 0.5 to ~7.5 m.
func writeNYUFrame(t *testing.T, p string, k int) {
	t.Helper()
	rgb := make([]byte, 3*6*8)
	for i := range 6 * 8 {
		rgb[i] = byte(k)
	}
	depth := make([]float32, 6*8)
	for y := range 6 {
		for x := range 8 {
			depth[y*8+x] = 0.5 + float32(x)
		}
	}
	data, err := h5fixture.Write([]h5fixture.Dataset{{Name: "rgb", Shape: []int{3, 6, 8}, U8: rgb}, {Name: "depth", Shape: []int{6, 8}, F32: depth}})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(p), 0o777)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tarTree packs dir/sub into dir/sub.tar (the shards' layout: paths
// start with sub/).
func tarTree(t *testing.T, dir, sub string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	filepath.Walk(filepath.Join(dir, sub), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, _ := os.ReadFile(p)
		tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data))})
		tw.Write(data)
		return nil
	})
	tw.Close()
	if err := os.WriteFile(filepath.Join(dir, sub+".tar"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

const nyuConfig = `
source { url = "train.tar" }
source { url = "val.tar" }
format       = "hdf5"
train        = ["train/*/*.h5"]
test         = ["val/*/*.h5"]
val_fraction = 0.1
image_column = "rgb"
label_column = "depth"
image_size   = [6, 4]
class_names  = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"]
`

// TestNYUFramesAreDepthSegmentation: each HDF5 file is one example, its
// depth map in whole metres (truncated, as GATE's .long()) the label
// image, resized by nearest neighbour; a capped run reads the same
// examples as the full read.
func TestNYUFramesAreDepthSegmentation(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		writeNYUFrame(t, filepath.Join(dir, "train", fmt.Sprintf("scene_%d", i%3), fmt.Sprintf("%05d.h5", i)), i)
	}
	for i := range 4 {
		writeNYUFrame(t, filepath.Join(dir, "val", "official", fmt.Sprintf("%05d.h5", i)), 100+i)
	}
	tarTree(t, dir, "train")
	tarTree(t, dir, "val")
	full, diags := decode(t, dir, nyuConfig)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out := run(t, full)
	if v.GetAttr("task").AsString() != "segmentation" {
		t.Fatalf("task %v", v.GetAttr("task"))
	}
	meta, _ := examplestore.ReadMeta(out)
	if meta.Splits["train"] != 18 || meta.Splits["val"] != 2 || meta.Splits["test"] != 4 || len(meta.Classes) != 10 {
		t.Fatalf("splits %v, %d classes", meta.Splits, len(meta.Classes))
	}
	test, _ := examplestore.ReadSplit(out, "test")
	// Columns 0..3 of the 4-wide mask sample source columns 1, 3, 5, 7:
	// depths 1.5, 3.5, 5.5, 7.5 m, so classes 1, 3, 5, 7.
	if got := test.Y.Int64s()[:4]; !slices.Equal(got, []int64{1, 3, 5, 7}) {
		t.Fatalf("first mask row %v, want [1 3 5 7]", got)
	}
	if test.X.Data[0] != 100 || test.X.Data[3*6*4] != 101 {
		t.Fatalf("test images are not the val files in order: %d, %d", test.X.Data[0], test.X.Data[3*6*4])
	}

	capped, _ := decode(t, dir, nyuConfig+"max_train = 5\n")
	_, cout := run(t, capped)
	all, _ := examplestore.ReadSplit(out, "train")
	some, _ := examplestore.ReadSplit(cout, "train")
	if some.Len() != 5 {
		t.Fatalf("%d training examples, want 5", some.Len())
	}
	size := 3 * 6 * 4
	for k, i := range some.Index {
		j := slices.Index(all.Index, i)
		if j < 0 || !bytes.Equal(some.X.Data[k*size:(k+1)*size], all.X.Data[j*size:(j+1)*size]) || !slices.Equal(some.Y.Int64s()[k*24:(k+1)*24], all.Y.Int64s()[j*24:(j+1)*24]) {
			t.Fatalf("kept example %d (file %d) differs from the full read", k, i)
		}
	}
}

// TestNYUBadFilesAreErrors: a damaged file and a depth beyond the classes
// are errors naming the file.
func TestNYUBadFilesAreErrors(t *testing.T) {
	dir := t.TempDir()
	for i := range 4 {
		writeNYUFrame(t, filepath.Join(dir, "train", "a", fmt.Sprintf("%05d.h5", i)), i)
		writeNYUFrame(t, filepath.Join(dir, "val", "official", fmt.Sprintf("%05d.h5", i)), i)
	}
	bad := filepath.Join(dir, "train", "a", "00002.h5")
	data, _ := os.ReadFile(bad)
	os.WriteFile(bad, data[:300], 0o644)
	tarTree(t, dir, "train")
	tarTree(t, dir, "val")
	n, _ := decode(t, dir, nyuConfig)
	if _, _, err := runErr(t, n); err == nil || !strings.Contains(err.Error(), "00002.h5") {
		t.Fatalf("a truncated file: %v", err)
	}
	writeNYUFrame(t, bad, 2)
	tarTree(t, dir, "train")
	few := strings.Replace(nyuConfig, `"c4", "c5", "c6", "c7", "c8", "c9"`, `"c4"`, 1)
	n, _ = decode(t, dir, few)
	if _, _, err := runErr(t, n); err == nil || !strings.Contains(err.Error(), "not one of the 5 classes") {
		t.Fatalf("depth beyond the classes: %v", err)
	}
	_, diags := decode(t, dir, "source { url = \"train.tar\" }\nformat = \"hdf5\"\ntrain = [\"train/*/*.h5\"]\nimage_size = [4, 4]\nclass_names = [\"a\", \"b\"]")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "label_column") {
		t.Fatalf("missing datasets: %v", diags)
	}
}
