package matv5

import (
	"os"
	"slices"
	"strings"
	"testing"
)

var want = []float64{0, 2, 459, 14, 14, 65535} // 2 x 3, row-major

// TestReadsScipysFiles reads MAT-files scipy.io.savemat wrote
// (testdata: uncompressed uint16 with a second variable, zlib-compressed
// with the variable second, a double matrix).
func TestReadsScipysFiles(t *testing.T) {
	for _, f := range []string{"scipy_v5.mat", "scipy_compressed.mat", "scipy_double.mat"} {
		data, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Read(data, f, "LabelMap")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if m.Rows != 2 || m.Cols != 3 || !slices.Equal(m.Data, want) || m.At(1, 2) != 65535 {
			t.Errorf("%s: %dx%d %v", f, m.Rows, m.Cols, m.Data)
		}
	}
}

func TestEncodeRoundTrips(t *testing.T) {
	for _, compress := range []bool{false, true} {
		data := EncodeUint16("LabelMap", 2, 3, []uint16{0, 2, 459, 14, 14, 65535}, compress)
		m, err := Read(data, "x.mat", "LabelMap")
		if err != nil || !slices.Equal(m.Data, want) {
			t.Fatalf("compress %v: %v %v", compress, m, err)
		}
	}
}

func TestDamagedFiles(t *testing.T) {
	good := EncodeUint16("LabelMap", 2, 3, []uint16{0, 2, 459, 14, 14, 65535}, false)
	zipped := EncodeUint16("LabelMap", 2, 3, []uint16{0, 2, 459, 14, 14, 65535}, true)
	lying := append([]byte(nil), good...)
	lying[128+8+16+8] = 0xff // the first dimension: 255 rows
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"short", good[:100], "shorter than a MAT-file header"},
		{"not a MAT-file", append(make([]byte, 126), 'x', 'y'), "not a Level 5 MAT-file"},
		{"truncated", good[:len(good)-9], "x.mat at byte 128"},
		{"truncated compressed", zipped[:len(zipped)-6], "x.mat at byte 128"},
		{"lying dimensions", lying, "values for a 255x3 array"},
		{"other name", good, `no numeric variable "Nope"`},
	} {
		name := "LabelMap"
		if tc.name == "other name" {
			name = "Nope"
		}
		if _, err := Read(tc.data, "x.mat", name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzRead: any input is a matrix whose size matches its data, or an
// error, never a panic or a huge allocation.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"scipy_v5.mat", "scipy_compressed.mat", "scipy_double.mat"} {
		data, _ := os.ReadFile("testdata/" + name)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Read(data, "f.mat", "LabelMap")
		if err != nil {
			return
		}
		if len(m.Data) != m.Rows*m.Cols || len(m.Data) > MaxElements {
			t.Fatalf("%dx%d with %d values", m.Rows, m.Cols, len(m.Data))
		}
	})
}
