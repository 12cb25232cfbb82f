package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rowsAt is one WriteRows call.
type rowsAt struct {
	name  string
	first int
	data  []byte
}

// streamEqualsWriteFile writes tensors with WriteFile, and with a
// FileWriter through writes in their order, and fails unless the two
// files are the same bytes.
func streamEqualsWriteFile(t *testing.T, tensors []Tensor, meta map[string]string, writes []rowsAt) {
	t.Helper()
	dir := t.TempDir()
	want, got := filepath.Join(dir, "want.safetensors"), filepath.Join(dir, "got.safetensors")
	if err := WriteFile(want, tensors, meta); err != nil {
		t.Fatal(err)
	}
	var specs []Spec
	for _, x := range tensors {
		specs = append(specs, Spec{x.Name, x.DType, x.Shape})
	}
	w, err := Create(got, specs, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range writes {
		if err := w.WriteRows(r.name, r.first, r.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(want)
	b, _ := os.ReadFile(got)
	if !bytes.Equal(a, b) {
		t.Fatalf("the %d-byte streamed file differs from WriteFile's %d bytes", len(b), len(a))
	}
}

// TestFileWriterEqualsWriteFile streams rows in a shuffled order and
// compares the file with WriteFile's for the same tensors, byte for byte.
func TestFileWriterEqualsWriteFile(t *testing.T) {
	x := Tensor{Name: "x", DType: U8, Shape: []int{5, 2, 3}, Data: []byte("abcdefghijklmnopqrstuvwxyz0123")}
	y := I64Tensor("y", []int{5}, []int64{4, 3, 2, 1, 0})
	idx := I64Tensor("index", []int{5}, []int64{10, 11, 12, 13, 14})
	var writes []rowsAt
	for _, k := range []int{3, 0, 4, 1, 2} {
		writes = append(writes, rowsAt{"x", k, x.Data[k*6 : (k+1)*6]})
	}
	writes = append(writes, rowsAt{"y", 0, y.Data}, rowsAt{"index", 2, idx.Data[16:]}, rowsAt{"index", 0, idx.Data[:16]})
	streamEqualsWriteFile(t, []Tensor{x, y, idx}, map[string]string{"split": "train"}, writes)
}

// TestFileWriterWritesLargeRowsInPieces writes rows of several
// writePieces (and a ragged end) at an offset, and WriteFile writes the
// same tensors in pieces too.
func TestFileWriterWritesLargeRowsInPieces(t *testing.T) {
	row := writePiece + writePiece/2 + 7
	x := Tensor{Name: "x", DType: U8, Shape: []int{3, row}, Data: make([]byte, 3*row)}
	for i := range x.Data {
		x.Data[i] = byte(i*7 + i/writePiece)
	}
	y := I64Tensor("y", []int{3}, []int64{1, 2, 3})
	streamEqualsWriteFile(t, []Tensor{x, y}, nil, []rowsAt{{"x", 1, x.Data[row:]}, {"x", 0, x.Data[:row]}, {"y", 0, y.Data}})
	// WriteFile's pieces against the data itself.
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteFile(path, []Tensor{x}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Tensors["x"].Data; !bytes.Equal(got, x.Data) {
		t.Fatalf("WriteFile's %d bytes of x read back differ", len(got))
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
