package safetensors

import (
	"bytes"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := []Tensor{
		F32Tensor("w", []int{2, 2}, []float32{1, -2, 3.5, 0}),
		I64Tensor("idx", []int{3}, []int64{7, -1, 1 << 40}),
		{Name: "px", DType: U8, Shape: []int{2}, Data: []byte{0, 255}},
	}
	if err := Write(&buf, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if hl := buf.Bytes()[0]; (int(hl))%8 != 0 {
		t.Errorf("header length %d not 8-aligned", hl)
	}
	f, err := Parse(buf.Bytes(), "x.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float32{1, -2, 3.5, 0}, f.Tensors["w"].Float32s()); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff([]int64{7, -1, 1 << 40}, f.Tensors["idx"].Int64s()); diff != "" {
		t.Fatal(diff)
	}
	if f.Metadata["k"] != "v" || f.Tensors["px"].Data[1] != 255 {
		t.Fatalf("metadata %v px %v", f.Metadata, f.Tensors["px"].Data)
	}
}

func TestParseErrors(t *testing.T) {
	tests := map[string]struct {
		data []byte
		want string
	}{
		"short":          {[]byte{1, 2}, "byte 0: file too short"},
		"header too big": {[]byte{255, 0, 0, 0, 0, 0, 0, 0, '{', '}'}, "exceeds file size"},
		"bad json":       {append([]byte{2, 0, 0, 0, 0, 0, 0, 0}, '{', 'x'), "byte 8: invalid header JSON"},
		"offsets out":    {withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, nil), "outside the 0 data bytes"},
		"size mismatch":  {withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), "needs 8"},
		"bad dtype":      {withHeader(`{"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)), "unsupported dtype"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.data, "m.safetensors")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "m.safetensors") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func withHeader(h string, data []byte) []byte {
	b := []byte{byte(len(h)), 0, 0, 0, 0, 0, 0, 0}
	b = append(b, h...)
	return append(b, data...)
}

func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, []Tensor{F32Tensor("w", []int{2}, []float32{1, 2})}, nil)
	f.Add(buf.Bytes())
	f.Add(withHeader(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		for _, tensor := range file.Tensors {
			if len(tensor.Data) != tensor.NumElements()*tensor.DType.Size() {
				t.Fatalf("tensor %q: %d bytes for shape %v", tensor.Name, len(tensor.Data), tensor.Shape)
			}
			_ = tensor.Float32s()
		}
	})
}

func TestHalfPrecisionLoadsAsFloat32(t *testing.T) {
	tests := []struct {
		dtype DType
		bits  uint16
		want  float32
	}{
		{F16, 0x3c00, 1},
		{F16, 0xc000, -2},
		{F16, 0x7bff, 65504},
		{F16, 0x3555, 0.333251953125},
		{F16, 0x0001, 1.0 / (1 << 24)},      // smallest subnormal
		{F16, 0x83ff, -1023.0 / (1 << 24)},  // largest negative subnormal
		{F16, 0x0400, 1.0 / (1 << 14)},      // smallest normal
		{F16, 0x7c00, float32(math.Inf(1))}, // infinity
		{F16, 0x8000, float32(math.Copysign(0, -1))},
		{BF16, 0x3f80, 1},
		{BF16, 0xc0a0, -5},
		{BF16, 0x4049, 3.140625},
	}
	for _, tc := range tests {
		tensor := Tensor{Name: "h", DType: tc.dtype, Shape: []int{1}, Data: []byte{byte(tc.bits), byte(tc.bits >> 8)}}
		var buf bytes.Buffer
		if err := Write(&buf, []Tensor{tensor}, nil); err != nil {
			t.Fatal(err)
		}
		f, err := Parse(buf.Bytes(), "h.safetensors")
		if err != nil {
			t.Fatal(err)
		}
		got := f.Tensors["h"].Float32s()[0]
		if math.Float32bits(got) != math.Float32bits(tc.want) {
			t.Errorf("%s %#04x = %g, want %g", tc.dtype, tc.bits, got, tc.want)
		}
	}
	nan := HalfToFloat32(0x7e00)
	if !math.IsNaN(float64(nan)) {
		t.Errorf("F16 0x7e00 = %g, want NaN", nan)
	}
}

// TestParseRefusesTensorsThatDoNotTile: as the reference library does, a
// file whose tensors overlap, leave bytes of no tensor between, before or
// after them, or whose shapes overflow a byte count is refused, naming
// the file and the tensors involved.
func TestParseRefusesTensorsThatDoNotTile(t *testing.T) {
	tests := map[string]struct {
		header string
		data   int
		want   string
	}{
		"bias inside weight": {
			`{"weight":{"dtype":"F32","shape":[16],"data_offsets":[0,64]},"bias":{"dtype":"F32","shape":[8],"data_offsets":[8,40]}}`, 64,
			`tensor "bias" [8, 40) overlaps tensor "weight" [0, 64)`,
		},
		"same bytes twice": {
			`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, 4,
			`tensor "b" [0, 4) overlaps tensor "a" [0, 4)`,
		},
		"empty tensor inside another": {
			`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"e":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}}`, 4,
			`tensor "e" [2, 2) overlaps tensor "a" [0, 4)`,
		},
		"gap between": {
			`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}`, 6,
			`data bytes [2, 4) between tensor "a" [0, 2) and tensor "b" [4, 6) belong to no tensor`,
		},
		"gap before": {
			`{"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, 4,
			`data bytes [0, 2) before tensor "a" [2, 4) belong to no tensor`,
		},
		"bytes after": {
			`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, 5,
			`data bytes [2, 5) after the last tensor "a" [0, 2) belong to no tensor`,
		},
		"bytes and no tensor": {`{}`, 3, `data bytes [0, 3) after the header belong to no tensor`},
		"overflowing shape": {
			`{"a":{"dtype":"F32","shape":[2147483648,2147483648],"data_offsets":[0,0]}}`, 0,
			`tensor "a": shape [2147483648 2147483648] of F32 is larger than any file (overflows 64-bit byte count)`,
		},
		"overflowing elements": {
			`{"a":{"dtype":"U8","shape":[4294967296,4294967296,4],"data_offsets":[0,0]}}`, 0,
			`is larger than any file`,
		},
		"negative dimension": {`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, 0, "negative dimension"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(withHeader(tc.header, make([]byte, tc.data)), "m.safetensors")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "m.safetensors: byte ") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParseAcceptsExactTiling: tensors in any header order, empty ones
// included, that tile the data exactly are read.
func TestParseAcceptsExactTiling(t *testing.T) {
	h := `{"z":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"e":{"dtype":"F32","shape":[0,3],"data_offsets":[2,2]},` +
		`"f":{"dtype":"U8","shape":[0],"data_offsets":[2,2]},"a":{"dtype":"U16","shape":[1],"data_offsets":[2,4]}}`
	f, err := Parse(withHeader(h, []byte{1, 2, 3, 0}), "m.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Tensors["a"].Int64s(); len(got) != 1 || got[0] != 3 {
		t.Fatalf("a = %v", got)
	}
}

// TestWritersRefuseOverflowingShapes: Write and Create say why a shape
// whose byte count overflows cannot be written, rather than a wrapped size.
func TestWritersRefuseOverflowingShapes(t *testing.T) {
	const want = "shape [2147483648 2147483648] of F32 is larger than any file (overflows 64-bit byte count)"
	shape := []int{1 << 31, 1 << 31}
	err := Write(io.Discard, []Tensor{{Name: "w", DType: F32, Shape: shape}}, nil)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Write: %v, want %q", err, want)
	}
	_, err = Create(filepath.Join(t.TempDir(), "w.safetensors"), []Spec{{"w", F32, shape}}, nil)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Create: %v, want %q", err, want)
	}
}
