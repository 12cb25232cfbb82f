package h5fixture

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/hdf5"
)

func nyu(t *testing.T) []byte {
	rgb := make([]byte, 3*4*5)
	for i := range rgb {
		rgb[i] = byte(i * 3)
	}
	depth := make([]float32, 4*5)
	for i := range depth {
		depth[i] = float32(i) * 0.25
	}
	data, err := Write([]Dataset{{Name: "rgb", Shape: []int{3, 4, 5}, U8: rgb}, {Name: "depth", Shape: []int{4, 5}, F32: depth}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReaderReadsTheFixture: formats/hdf5 reads back what was written.
func TestReaderReadsTheFixture(t *testing.T) {
	f, err := hdf5.Parse(nyu(t), "nyu.h5")
	if err != nil {
		t.Fatal(err)
	}
	names, _ := f.Names()
	if !slices.Equal(names, []string{"depth", "rgb"}) {
		t.Fatalf("names %v", names)
	}
	d, err := f.Dataset("depth")
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.Float32s()
	if err != nil || v[19] != 4.75 || !slices.Equal(d.Shape, []int{4, 5}) {
		t.Fatalf("depth %v %v %v", d.Shape, v, err)
	}
	r, _ := f.Dataset("rgb")
	px, err := r.Uint8s()
	if err != nil || px[59] != byte(59*3) {
		t.Fatalf("rgb: %v", err)
	}
}

// TestH5pyReadsTheFixture: the real HDF5 library (through Debian's
// python3-h5py) reads the fixture as written; skipped where h5py is
// missing (make deps-test installs it).
func TestH5pyReadsTheFixture(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import h5py").Run() != nil {
		t.Skip("python3-h5py is not installed")
	}
	p := filepath.Join(t.TempDir(), "nyu.h5")
	if err := os.WriteFile(p, nyu(t), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", `
import h5py, sys
f = h5py.File(sys.argv[1], "r")
print(sorted(f.keys()), f["rgb"].shape, f["rgb"].dtype, f["rgb"][2, 3, 4], f["depth"].dtype, f["depth"][3, 4])
`, p).CombinedOutput()
	if err != nil {
		t.Fatalf("h5py: %v\n%s", err, out)
	}
	want := "['depth', 'rgb'] (3, 4, 5) uint8 177 float32 4.75"
	if strings.TrimSpace(string(out)) != want {
		t.Fatalf("h5py read %q, want %q", out, want)
	}
}
