package hdf5

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func open(t *testing.T, name string) *File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// want reads the arrays make_fixtures.py wrote beside the files.
func want(t *testing.T) ([]byte, []float32) {
	rgb, err := os.ReadFile("testdata/rgb.bin")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/depth.bin")
	if err != nil {
		t.Fatal(err)
	}
	depth := make([]float32, len(raw)/4)
	for i := range depth {
		depth[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return rgb, depth
}

// TestReadsWhatH5pyWrote: every layout and filter h5py wrote in testdata
// (make_fixtures.py) reads back the arrays it was given.
func TestReadsWhatH5pyWrote(t *testing.T) {
	rgb, depth := want(t)
	for _, c := range []struct{ file, rgb, depth string }{
		{"contiguous.h5", "rgb", "depth"},
		{"chunked.h5", "/nested/inner/rgb", "nested/inner/depth"},
		{"chunked.h5", "", "depth_be"},
	} {
		f := open(t, c.file)
		if c.rgb != "" {
			d, err := f.Dataset(c.rgb)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Shape, []int{3, 6, 8}) {
				t.Fatalf("%s %s: shape %v", c.file, c.rgb, d.Shape)
			}
			got, err := d.Uint8s()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, rgb) {
				t.Fatalf("%s %s: the bytes differ from what h5py was given", c.file, c.rgb)
			}
		}
		d, err := f.Dataset(c.depth)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d.Shape, []int{6, 8}) || !slices.Equal(got, depth) {
			t.Fatalf("%s %s (%s): shape %v, values differ", c.file, c.depth, d.TypeName(), d.Shape)
		}
	}
	d, err := open(t, "chunked.h5").Dataset("label")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := d.Float32s()
	if d.TypeName() != "int16" || got[47] != 47 || got[1] != 1 {
		t.Fatalf("int16 dataset: %s %v", d.TypeName(), got)
	}
}

// TestGroupsWithManyMembers: a symbol table spread over several B-tree
// leaves lists and finds every member.
func TestGroupsWithManyMembers(t *testing.T) {
	f := open(t, "many.h5")
	names, err := f.Names()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 40 || names[0] != "d00" || names[39] != "d39" {
		t.Fatalf("names %v", names)
	}
	d, err := f.Dataset("d37")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Uint8s(); !slices.Equal(got, []byte{37, 37}) {
		t.Fatalf("d37 = %v", got)
	}
	if _, err := f.Dataset("nope"); err == nil || !strings.Contains(err.Error(), `no object "nope"`) {
		t.Fatalf("a missing dataset: %v", err)
	}
}

// TestDamagedFilesAreErrors: truncations and lying sizes are errors that
// name the file, never a panic or a large allocation.
func TestDamagedFilesAreErrors(t *testing.T) {
	good, _ := os.ReadFile("testdata/contiguous.h5")
	f, _ := Parse(good, "x.h5")
	d, _ := f.Dataset("rgb")
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"not HDF5", []byte("hello world"), "not an HDF5 file"},
		{"truncated", good[:200], "x.h5: offset"},
		{"latest format", append(append([]byte{}, good[:8]...), append([]byte{2}, good[9:]...)...), "libver"},
	} {
		f, err := Parse(c.data, "x.h5")
		if err == nil {
			_, err = f.Dataset("rgb")
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	// A dataspace claiming 2^31 x 2^31 elements is refused before
	// anything is allocated.
	big := &Dataset{f: f, Path: "rgb", Shape: []int{math.MaxInt32, math.MaxInt32}, Class: d.Class, Size: 1, layout: d.layout}
	if _, err := big.Raw(); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("a huge dataspace: %v", err)
	}
}

// TestDoctoredDimensionsAreRefused: chunked.h5 (about 14 KB) with its
// (6, 8) datasets' dimensions raised to (6,000,000, 8) would decode to
// 192 MB of fill value from chunks never written; Raw refuses it (with
// the file, the dataset and the shape) before allocating, while the
// fill value of a small, partly written dataset still reads.
func TestDoctoredDimensionsAreRefused(t *testing.T) {
	good, err := os.ReadFile("testdata/chunked.h5")
	if err != nil {
		t.Fatal(err)
	}
	dims := func(a, b uint64) []byte {
		return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, a), b)
	}
	doctored := []byte(strings.ReplaceAll(string(good), string(dims(6, 8)), string(dims(6_000_000, 8))))
	if string(doctored) == string(good) {
		t.Fatal("the fixture has no (6, 8) dataspace to doctor")
	}
	f, err := Parse(doctored, "doctored.h5")
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Dataset("nested/inner/depth")
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 48_000_000 {
		t.Fatalf("doctored shape %v", d.Shape)
	}
	_, err = d.Float32s()
	if err == nil || !strings.Contains(err.Error(), `doctored.h5: dataset "nested/inner/depth" of shape [6000000 8] would take 192000000 bytes`) {
		t.Fatalf("err = %v, want the doctored dataset refused", err)
	}
}

// TestTrackOrderIsNamed: a file h5py wrote with track_order=True is
// refused naming that option, not only libver="latest".
func TestTrackOrderIsNamed(t *testing.T) {
	data, err := os.ReadFile("testdata/track_order.h5")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data, "track_order.h5")
	if err == nil {
		_, err = f.Dataset("rgb")
	}
	if err == nil || !strings.Contains(err.Error(), "track_order=True") {
		t.Fatalf("err = %v, want track_order named", err)
	}
}
