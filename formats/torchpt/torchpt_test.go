package torchpt

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/pickle"
	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// TestReadsTorchSave: the fixture torch.save wrote (make_fixture.py) reads
// back with PyTorch's values: float32, float16 and bfloat16 tensors, an
// int64 counter, a transposed view, a view at an offset into a shared
// storage.
func TestReadsTorchSave(t *testing.T) {
	f, err := ReadFile(filepath.Join("testdata", "state_dict.pth"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join("testdata", "state_dict.json"))
	var ref struct {
		Tensors map[string]struct {
			Shape  []int
			Values []float64
			Dtype  string
		}
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != len(ref.Tensors) {
		t.Fatalf("%d tensors, PyTorch saved %d", len(f.Tensors), len(ref.Tensors))
	}
	for name, want := range ref.Tensors {
		got := f.Tensors[name]
		if got == nil {
			t.Fatalf("%s missing", name)
		}
		if !equalInts(got.Shape, want.Shape) {
			t.Errorf("%s: shape %v, want %v", name, got.Shape, want.Shape)
		}
		var vals []float32
		if got.DType == safetensors.I64 {
			for _, v := range got.Int64s() {
				vals = append(vals, float32(v))
			}
		} else {
			vals = got.Float32s()
		}
		if len(vals) != len(want.Values) {
			t.Fatalf("%s: %d values, want %d", name, len(vals), len(want.Values))
		}
		for i := range vals {
			if math.Abs(float64(vals[i])-want.Values[i]) > 1e-6 {
				t.Fatalf("%s[%d] = %v, PyTorch %v (%s)", name, i, vals[i], want.Values[i], want.Dtype)
			}
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rewrite returns the fixture with data.pkl replaced by edit(data.pkl).
func rewrite(t *testing.T, edit func([]byte) []byte) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "state_dict.pth"))
	if err != nil {
		t.Fatal(err)
	}
	z, err := zip.NewReader(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range z.File {
		rc, _ := f.Open()
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		data := b.Bytes()
		if strings.HasSuffix(f.Name, "/data.pkl") {
			data = edit(data)
		}
		fw, _ := w.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
		fw.Write(data)
	}
	w.Close()
	return buf.Bytes()
}

// TestRefusesWhatAStateDictDoesNotHold: a checkpoint naming another
// global (os.system) is refused without running anything; a view beyond
// its storage, a legacy (non-zip) file and a truncated archive fail with
// errors that say so.
func TestRefusesWhatAStateDictDoesNotHold(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"os.system", rewrite(t, func(p []byte) []byte {
			return bytes.Replace(p, []byte("ctorch._utils\n_rebuild_tensor_v2\n"), []byte("cos\nsystem\n"), 1)
		}), "os.system"},
		{"more elements than its storage", rewrite(t, func(p []byte) []byte {
			// conv1.weight's size (3, 2, 3, 3) becomes (9, 2, 3, 3).
			return bytes.Replace(p, []byte("(K\x03K\x02K\x03K\x03t"), []byte("(K\x09K\x02K\x03K\x03t"), 1)
		}), "more elements than its storage"},
		{"view beyond its storage", rewrite(t, func(p []byte) []byte {
			// conv1.weight's stride (18, 9, 3, 1) becomes (18, 9, 3, 2).
			return bytes.Replace(p, []byte("(K\x12K\x09K\x03K\x01t"), []byte("(K\x12K\x09K\x03K\x02t"), 1)
		}), "reaches beyond its storage"},
		{"legacy format", []byte("\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19."), "legacy format"},
	}
	full, _ := os.ReadFile(filepath.Join("testdata", "state_dict.pth"))
	tests = append(tests, struct {
		name string
		data []byte
		want string
	}{"truncated", full[:len(full)/2], "zip"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// FuzzRead: no input panics or allocates beyond its bounds.
func FuzzRead(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "state_dict.pth"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, b []byte) {
		Read(bytes.NewReader(b), int64(len(b)))
	})
}

// TestRebuildTensorRefusesOverflow: sizes, strides and offsets whose
// products overflow are errors, never a panic or an empty tensor of a
// huge shape.
func TestRebuildTensorRefusesOverflow(t *testing.T) {
	s := &storage{typ: storageTypes["FloatStorage"], data: make([]byte, 4*12)}
	tuple := func(v ...int64) pickle.Tuple {
		out := make(pickle.Tuple, len(v))
		for i, x := range v {
			out[i] = x
		}
		return out
	}
	cases := []struct {
		name           string
		off            int64
		shape, strides pickle.Tuple
		wantErr        string
	}{
		{"offset 2^63-1", 1<<63 - 1, tuple(2), tuple(1), "reaches beyond"},
		{"offset past the end", 12, tuple(1), tuple(1), "reaches beyond"},
		{"element count overflows", 0, tuple(1<<23, 1<<40, 2), tuple(1<<40, 2, 1), "more elements"},
		{"stride overflows", 0, tuple(2, 2), tuple(1<<40, 1), "reaches beyond"},
		{"stride times size overflows", 3, tuple(3, 2), tuple(1<<40, 1<<40), "reaches beyond"},
		{"last element one past", 1, tuple(3, 4), tuple(4, 1), "reaches beyond"},
	}
	for _, c := range cases {
		_, err := rebuildTensor{}.Call(pickle.Tuple{s, c.off, c.shape, c.strides, false, nil})
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.wantErr)
		}
	}
	// The whole storage, and an empty tensor, are fine.
	for _, ok := range []struct{ shape, strides pickle.Tuple }{{tuple(3, 4), tuple(4, 1)}, {tuple(0, 1<<40), tuple(1, 1)}} {
		tt, err := rebuildTensor{}.Call(pickle.Tuple{s, int64(0), ok.shape, ok.strides, false, nil})
		if err != nil {
			t.Fatalf("%v: %v", ok.shape, err)
		}
		if _, err := tt.(*tensor).contiguous("w"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStorageElementCountCannotWrap: a storage declaring 2^62 floats
// over an empty entry used to load as a tensor of shape [0] (2^62 x 4
// wraps to 0 bytes); the count is now checked without overflow.
func TestStorageElementCountCannotWrap(t *testing.T) {
	for _, numel := range []int64{1 << 62, 1<<62 + 1, 1 << 63 / 2} {
		c := &checkpoint{dir: "m", size: 100, storages: map[string]*storage{},
			entries: map[string]*zip.File{"m/data/0": {FileHeader: zip.FileHeader{Name: "m/data/0", UncompressedSize64: 0}}}}
		_, err := c.persistent(pickle.Tuple{"storage", storageTypes["FloatStorage"], "0", "cpu", numel})
		if err == nil || !strings.Contains(err.Error(), "elements of 4 bytes") {
			t.Fatalf("numel %d: %v", numel, err)
		}
	}
}

// TestLegacyCheckpointIsNamed: a file in the format of PyTorch < 1.6 is
// told apart from a damaged safetensors file.
func TestLegacyCheckpointIsNamed(t *testing.T) {
	head := append(append([]byte(nil), legacyMagic...), "\x2e\x80\x02"...)
	if !IsLegacy(head) || IsLegacy([]byte("PK\x03\x04")) || IsLegacy(head[:5]) || IsCheckpoint(head) {
		t.Fatal("legacy detection")
	}
}

// FuzzRebuildTensor: any offset, sizes and strides (seeded with the
// overflowing ones above) give an error or a tensor whose elements all
// lie in its storage, never a panic.
func FuzzRebuildTensor(f *testing.F) {
	f.Add(int64(1<<63-1), int64(2), int64(1), int64(1), int64(1))
	f.Add(int64(0), int64(1<<23), int64(1<<40), int64(1<<40), int64(2))
	f.Add(int64(0), int64(2), int64(2), int64(1<<40), int64(1))
	f.Add(int64(3), int64(3), int64(2), int64(1<<40), int64(1<<40))
	f.Add(int64(1), int64(3), int64(4), int64(4), int64(1))
	f.Add(int64(-1), int64(3), int64(-4), int64(-4), int64(1))
	f.Fuzz(func(t *testing.T, off, d0, d1, s0, s1 int64) {
		s := &storage{typ: storageTypes["FloatStorage"], data: make([]byte, 4*12)}
		v, err := rebuildTensor{}.Call(pickle.Tuple{s, off, pickle.Tuple{d0, d1}, pickle.Tuple{s0, s1}, false, nil})
		if err != nil {
			return
		}
		if _, err := v.(*tensor).contiguous("w"); err != nil {
			t.Fatalf("rebuilt (offset %d, shape [%d %d], strides [%d %d]) but cannot read it: %v", off, d0, d1, s0, s1, err)
		}
	})
}
