package idx

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func makeIDX(typ byte, dims []int, data []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, typ, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(data)
	return b.Bytes()
}

func TestRead(t *testing.T) {
	tests := map[string]struct {
		in      []byte
		wantErr string
		dims    []int
	}{
		"images":    {in: makeIDX(0x08, []int{2, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8}), dims: []int{2, 2, 2}},
		"labels":    {in: makeIDX(0x08, []int{3}, []byte{0, 9, 4}), dims: []int{3}},
		"truncated": {in: makeIDX(0x08, []int{2, 2, 2}, []byte{1, 2, 3}), wantErr: "byte 19: truncated IDX data"},
		"bad magic": {in: []byte{1, 2, 8, 1, 0, 0, 0, 1, 0}, wantErr: "byte 0: not an IDX file"},
		"bad type":  {in: []byte{0, 0, 0x42, 1, 0, 0, 0, 1, 0}, wantErr: "byte 2: unknown IDX element type"},
		"short hdr": {in: []byte{0, 0}, wantErr: "byte 2: truncated IDX header"},
		"trailing":  {in: append(makeIDX(0x08, []int{1}, []byte{1}), 7), wantErr: "byte 9: unexpected data"},
		"huge dims": {in: makeIDX(0x08, []int{1 << 30, 1 << 30}, nil), wantErr: "too large"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := Read(bytes.NewReader(tc.in), "f.idx")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "f.idx") {
					t.Fatalf("err = %v, want it to name the file and contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Dims) != len(tc.dims) || a.Len() != tc.dims[0] {
				t.Fatalf("dims %v, want %v", a.Dims, tc.dims)
			}
		})
	}
}

func TestFloat64Types(t *testing.T) {
	a, err := Read(bytes.NewReader(makeIDX(0x0B, []int{2}, []byte{0xff, 0xfe, 0x00, 0x05})), "s")
	if err != nil {
		t.Fatal(err)
	}
	if a.Float64(0) != -2 || a.Float64(1) != 5 {
		t.Fatalf("got %v %v", a.Float64(0), a.Float64(1))
	}
}

func FuzzRead(f *testing.F) {
	f.Add(makeIDX(0x08, []int{2, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	f.Add(makeIDX(0x0D, []int{1}, []byte{0, 0, 0x80, 0x3f}))
	f.Add([]byte{0, 0, 8, 3, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Read(bytes.NewReader(data), "fuzz")
		if err == nil && len(a.Bytes) != a.Len()*a.ItemSize()*typeSize[a.Type] {
			t.Fatalf("accepted %d bytes for dims %v", len(a.Bytes), a.Dims)
		}
	})
}
