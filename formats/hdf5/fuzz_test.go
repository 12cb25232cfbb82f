package hdf5

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
)

// FuzzRead: any bytes give datasets or an error, never a panic; what reads
// has the length its shape says.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"contiguous.h5", "chunked.h5", "many.h5"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	// Dimensions doctored far beyond what the file holds.
	chunked, _ := os.ReadFile("testdata/chunked.h5")
	six, big := binary.LittleEndian.AppendUint64(nil, 6), binary.LittleEndian.AppendUint64(nil, 6_000_000)
	f.Add(bytes.ReplaceAll(chunked, six, big))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "f.h5")
		if err != nil {
			return
		}
		file.MaxBytes = 1 << 20
		file.Names()
		for _, path := range []string{"rgb", "depth", "nested/inner/rgb", "nested/inner/depth", "depth_be", "d07"} {
			d, err := file.Dataset(path)
			if err != nil {
				continue
			}
			if v, err := d.Float32s(); err == nil && len(v) != d.Len() {
				t.Fatalf("%s: %d values for shape %v", path, len(v), d.Shape)
			}
		}
	})
}
