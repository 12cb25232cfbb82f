package hfparquet

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/color"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/gatepipe/gatepipe/internal/hffixture"
)

func writeFile(t *testing.T, name string, fn func(f *os.File) error) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func TestImageClassificationShards(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	classes := []string{"cat", "dog", "eel"}
	var paths []string
	var want []int64
	for shard := 0; shard < 2; shard++ {
		var imgs [][]byte
		var labels []int64
		for i := 0; i < 250; i++ {
			k := int64(rng.IntN(3))
			imgs = append(imgs, hffixture.PNG(hffixture.ClassImage(int(k), 20, 14, rng)))
			labels = append(labels, k)
		}
		want = append(want, labels...)
		paths = append(paths, writeFile(t, "train.parquet", func(f *os.File) error {
			return hffixture.ImageClassification(f, imgs, labels, classes, 100)
		}))
	}
	pf, err := file.OpenParquetFile(paths[0], false)
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRowGroups() != 3 {
		t.Fatalf("fixture has %d row groups, want 3 of at most 100 rows", pf.NumRowGroups())
	}
	pf.Close()
	d, err := Read(context.Background(), paths, Options{Height: 8, Width: 10, Channels: 3})
	if err != nil {
		t.Fatal(err)
	}
	if d.Rows != 500 || !slices.Equal(d.Y, want) || !slices.Equal(d.Classes, classes) || d.Task != Classification {
		t.Fatalf("rows %d, classes %v, task %s, labels equal %v", d.Rows, d.Classes, d.Task, slices.Equal(d.Y, want))
	}
	if !slices.Equal(d.Shape, []int{3, 8, 10}) || len(d.U8) != 500*3*8*10 {
		t.Fatalf("shape %v, %d bytes", d.Shape, len(d.U8))
	}
	// Two passes, as a capped split reads: the labels alone, then the
	// inputs of chosen rows only (row 3, rows across a row group and a
	// file boundary), the same bytes as the full read.
	o := Options{Height: 8, Width: 10, Channels: 3, LabelsOnly: true}
	labels, err := Read(context.Background(), paths, o)
	if err != nil || labels.U8 != nil || !slices.Equal(labels.Y, want) || !slices.Equal(labels.Shape, []int{3, 8, 10}) {
		t.Fatalf("labels-only pass: %v, %d bytes of pixels, shape %v", err, len(labels.U8), labels.Shape)
	}
	rows := []int{3, 99, 100, 249, 250, 499}
	o.LabelsOnly, o.Rows = false, rows
	some, err := Read(context.Background(), paths, o)
	if err != nil {
		t.Fatal(err)
	}
	size := 3 * 8 * 10
	for k, r := range rows {
		if !slices.Equal(some.U8[k*size:(k+1)*size], d.U8[r*size:(r+1)*size]) {
			t.Fatalf("row %d read alone differs from the full read", r)
		}
	}
	if _, err := Read(context.Background(), paths, Options{Height: 8, Width: 10, Rows: []int{5, 500}}); err == nil {
		t.Error("a row past the files was not refused")
	}
	// Grey.
	g, err := Read(context.Background(), paths[:1], Options{Height: 4, Width: 4, Channels: 1})
	if err != nil || len(g.U8) != 250*16 {
		t.Fatalf("grey: %v, %d bytes", err, len(g.U8))
	}
}

func TestPixelsMatchTheDecodedImage(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{10, 20, 30, 255})
	img.Set(1, 0, color.RGBA{40, 50, 60, 255})
	img.Set(0, 1, color.RGBA{70, 80, 90, 255})
	img.Set(1, 1, color.RGBA{100, 110, 120, 255})
	p := writeFile(t, "x.parquet", func(f *os.File) error {
		return hffixture.ImageClassification(f, [][]byte{hffixture.PNG(img)}, []int64{0}, []string{"a"}, 100)
	})
	d, err := Read(context.Background(), []string{p}, Options{Height: 2, Width: 2, Channels: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{10, 40, 70, 100, 20, 50, 80, 110, 30, 60, 90, 120} // channel-major
	if !slices.Equal(d.U8, want) {
		t.Fatalf("pixels %v, want %v", d.U8, want)
	}
}

func TestNestedFloatArraysAndMasks(t *testing.T) {
	images := [][][]float32{{{1, 2, 3}, {4, 5, 6}}, {{7, 8, 9}, {10, 11, 12}}}
	masks := [][][]int64{{{0, 1, 2}, {3, 0, 1}}, {{2, 2, 2}, {0, 0, 0}}}
	p := writeFile(t, "acdc.parquet", func(f *os.File) error { return hffixture.Arrays(f, images, masks, 1) })
	d, err := Read(context.Background(), []string{p}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Shape, []int{2, 3}) || !slices.Equal(d.F32, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) {
		t.Fatalf("shape %v, values %v", d.Shape, d.F32)
	}
	if d.Task != Segmentation || !slices.Equal(d.YShape, []int{2, 3}) || !slices.Equal(d.Y, []int64{0, 1, 2, 3, 0, 1, 2, 2, 2, 0, 0, 0}) {
		t.Fatalf("task %s, mask shape %v, masks %v", d.Task, d.YShape, d.Y)
	}
	// A row of another shape is refused with its row number.
	bad := writeFile(t, "bad.parquet", func(f *os.File) error {
		return hffixture.Arrays(f, [][][]float32{{{1, 2}}, {{1, 2, 3}}}, [][][]int64{{{0, 0}}, {{0, 0, 0}}}, 10)
	})
	if _, err := Read(context.Background(), []string{bad}, Options{}); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Fatalf("ragged rows: %v", err)
	}
}

func TestSegmentationMasksAsImages(t *testing.T) {
	mask := image.NewGray(image.Rect(0, 0, 4, 4))
	for i := range mask.Pix {
		mask.Pix[i] = uint8(i % 3)
	}
	rgb := hffixture.PNG(hffixture.ClassImage(0, 4, 4, rand.New(rand.NewPCG(0, 0))))
	p := writeFile(t, "ade.parquet", func(f *os.File) error {
		return hffixture.Segmentation(f, [][]byte{rgb}, [][]byte{hffixture.PNG(mask)}, 100)
	})
	d, err := Read(context.Background(), []string{p}, Options{LabelColumn: "annotation", Height: 2, Width: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Nearest neighbour at (0,0), (2,0), (0,2), (2,2) of the 4x4 mask.
	if d.Task != Segmentation || !slices.Equal(d.Y, []int64{0, 2, 2, 1}) {
		t.Fatalf("task %s, mask %v", d.Task, d.Y)
	}
}

func TestStringLabelsAndColumnErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var imgs [][]byte
	names := []string{"wren", "auk", "wren", "tit"}
	for range names {
		imgs = append(imgs, hffixture.PNG(hffixture.ClassImage(1, 4, 4, rng)))
	}
	p := writeFile(t, "birds.parquet", func(f *os.File) error { return hffixture.StringLabels(f, imgs, names, 100) })
	_, err := Read(context.Background(), []string{p}, Options{Height: 4, Width: 4})
	if err == nil || !strings.Contains(err.Error(), "label_column") || !strings.Contains(err.Error(), "species") {
		t.Fatalf("no label column: %v", err)
	}
	d, err := Read(context.Background(), []string{p}, Options{LabelColumn: "species", Height: 4, Width: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Classes, []string{"auk", "tit", "wren"}) || !slices.Equal(d.Y, []int64{2, 0, 2, 1}) {
		t.Fatalf("classes %v labels %v", d.Classes, d.Y)
	}
	// Test shards use the training classes; an unknown one is an error.
	if _, err := Read(context.Background(), []string{p}, Options{LabelColumn: "species", Height: 4, Width: 4, Classes: []string{"auk", "wren"}}); err == nil || !strings.Contains(err.Error(), `"tit"`) {
		t.Fatalf("unknown class: %v", err)
	}
	if _, err := Read(context.Background(), []string{p}, Options{LabelColumn: "nope"}); err == nil || !strings.Contains(err.Error(), "img, species") {
		t.Fatalf("missing column: %v", err)
	}
	// Not a parquet file.
	junk := writeFile(t, "junk.parquet", func(f *os.File) error { _, err := f.WriteString("PAR1 not really"); return err })
	if _, err := Read(context.Background(), []string{junk}, Options{}); err == nil || !strings.Contains(err.Error(), "junk.parquet") {
		t.Fatalf("junk: %v", err)
	}
}

// TestClassNamesFromMetadata: class names are read from the label
// column's feature whatever shape the others have, single-label and
// multi-label as each datasets version writes them.
func TestClassNamesFromMetadata(t *testing.T) {
	const cl = `{"names": ["cat", "dog"], "_type": "ClassLabel"}`
	meta := func(features string) string { return `{"info": {"features": {` + features + `}}}` }
	tests := []struct {
		name, meta string
		want       []string
		err        bool
	}{
		{"ClassLabel", meta(`"label": ` + cl), []string{"cat", "dog"}, false},
		{"beside a JSON-array feature (datasets 2/3)", meta(`"tokens": [{"dtype": "string", "_type": "Value"}], "label": ` + cl), []string{"cat", "dog"}, false},
		{"Sequence(ClassLabel), datasets 2/3", meta(`"label": {"feature": ` + cl + `, "_type": "Sequence"}`), []string{"cat", "dog"}, false},
		{"List(ClassLabel), datasets 4", meta(`"label": {"feature": ` + cl + `, "_type": "List"}`), []string{"cat", "dog"}, false},
		{"[ClassLabel]", meta(`"label": [` + cl + `]`), []string{"cat", "dog"}, false},
		{"a Value label", meta(`"label": {"dtype": "int64", "_type": "Value"}`), nil, false},
		{"no feature for the column", meta(`"other": ` + cl), nil, false},
		{"not JSON", `{"info": `, nil, true},
	}
	for _, tc := range tests {
		got, err := namesInMetadata(tc.meta, "label")
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestNullImageBytesAreNamed: an image struct whose bytes are null (the
// datasets library keeps only the path of an image it did not embed) is
// an error naming the row and the path, not "unknown format".
func TestNullImageBytesAreNamed(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	imgs := [][]byte{hffixture.PNG(hffixture.ClassImage(0, 8, 8, rng)), nil}
	p := writeFile(t, "train.parquet", func(f *os.File) error {
		return hffixture.ImageClassification(f, imgs, []int64{0, 1}, []string{"a", "b"}, 10)
	})
	_, err := Read(context.Background(), []string{p}, Options{Height: 4, Width: 4, Channels: 3})
	if err == nil || !strings.Contains(err.Error(), `row 1, column "image": the image's bytes are null`) {
		t.Fatalf("err = %v", err)
	}
}

// TestHadoopLZ4IsNamed: a file whose column chunks say the deprecated
// (Hadoop-framed) LZ4 codec is refused before reading, naming the codec
// and what to rewrite it with, not the library's bare codec error. The fixture is a
// snappy file whose footer's codec fields are rewritten to LZ4 (the
// Parquet writer here cannot write that codec).
func TestHadoopLZ4IsNamed(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	imgs := [][]byte{hffixture.PNG(hffixture.ClassImage(0, 8, 8, rng))}
	p := writeFile(t, "train.parquet", func(f *os.File) error {
		return hffixture.ImageClassification(f, imgs, []int64{0}, []string{"a"}, 10)
	})
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Thrift compact: ColumnMetaData's codec (field 4, an i32: header
	// 0x15, then the zigzag value, SNAPPY 1 = 0x02, LZ4 5 = 0x0a) follows
	// its path_in_schema, whose last element is the leaf's name. The
	// footer is the N bytes before the last 8.
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	footer := data[len(data)-8-n : len(data)-8]
	for _, leaf := range []string{"bytes", "path", "label"} {
		at := []byte(leaf + "\x15\x02")
		if c := bytes.Count(footer, at); c != 1 {
			t.Fatalf("column %s: %d codec fields found, want 1", leaf, c)
		}
		copy(footer, bytes.ReplaceAll(footer, at, []byte(leaf+"\x15\x0a")))
	}
	os.WriteFile(p, data, 0o644)
	_, err = Read(context.Background(), []string{p}, Options{Height: 4, Width: 4, Channels: 3})
	if err == nil || !strings.Contains(err.Error(), "deprecated Hadoop-framed LZ4 codec") || !strings.Contains(err.Error(), "zstd") {
		t.Fatalf("err = %v", err)
	}
}
