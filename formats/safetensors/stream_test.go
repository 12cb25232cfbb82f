package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileWriterEqualsWriteFile streams rows in a shuffled order and
// compares the file with WriteFile's for the same tensors, byte for byte.
func TestFileWriterEqualsWriteFile(t *testing.T) {
	dir := t.TempDir()
	x := Tensor{Name: "x", DType: U8, Shape: []int{5, 2, 3}, Data: []byte("abcdefghijklmnopqrstuvwxyz0123")}
	y := I64Tensor("y", []int{5}, []int64{4, 3, 2, 1, 0})
	idx := I64Tensor("index", []int{5}, []int64{10, 11, 12, 13, 14})
	meta := map[string]string{"split": "train"}
	want := filepath.Join(dir, "want.safetensors")
	if err := WriteFile(want, []Tensor{x, y, idx}, meta); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(dir, "got.safetensors")
	w, err := Create(got, []Spec{{"x", U8, x.Shape}, {"y", I64, y.Shape}, {"index", I64, idx.Shape}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{3, 0, 4, 1, 2} {
		if err := w.WriteRows("x", k, x.Data[k*6:(k+1)*6]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteRows("y", 0, y.Data); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows("index", 2, idx.Data[16:]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows("index", 0, idx.Data[:16]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(want)
	b, _ := os.ReadFile(got)
	if !bytes.Equal(a, b) {
		t.Fatalf("streamed file differs from WriteFile's:\n%q\n%q", a, b)
	}
}

// TestFileWriterWritesLargeRowsInPieces writes rows of several
// writePieces (and a ragged end) at an offset and reads them back whole.
func TestFileWriterWritesLargeRowsInPieces(t *testing.T) {
	row := writePiece + writePiece/2 + 7
	x := Tensor{Name: "x", DType: U8, Shape: []int{3, row}, Data: make([]byte, 3*row)}
	for i := range x.Data {
		x.Data[i] = byte(i*7 + i/writePiece)
	}
	y := I64Tensor("y", []int{3}, []int64{1, 2, 3})
	dir := t.TempDir()
	want, got := filepath.Join(dir, "want.safetensors"), filepath.Join(dir, "got.safetensors")
	if err := WriteFile(want, []Tensor{x, y}, nil); err != nil {
		t.Fatal(err)
	}
	w, err := Create(got, []Spec{{"x", U8, x.Shape}, {"y", I64, y.Shape}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows("x", 1, x.Data[row:]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows("x", 0, x.Data[:row]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRows("y", 0, y.Data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(want)
	b, _ := os.ReadFile(got)
	if !bytes.Equal(a, b) {
		t.Fatalf("a %d-byte file written in pieces differs from WriteFile's", len(b))
	}
}

func TestFileWriterRefusesShortAndMisfitRows(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "short.safetensors")
	w, err := Create(p, []Spec{{"x", U8, []int{4, 2}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		first int
		data  string
	}{{0, "abc"}, {3, "abcd"}, {-1, "ab"}, {4, "ab"}} {
		if err := w.WriteRows("x", c.first, []byte(c.data)); err == nil {
			t.Errorf("row %d of %q accepted", c.first, c.data)
		}
	}
	if err := w.WriteRows("nope", 0, []byte("ab")); err == nil {
		t.Error("unknown tensor accepted")
	}
	w.WriteRows("x", 0, []byte("abcd"))
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "4 of its 8 bytes") {
		t.Fatalf("short file closed: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("a short file was left: %v", err)
	}
}
