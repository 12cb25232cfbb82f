package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/internal/cifarfixture"
)

// TestCIFAR100PythonTarball reads cifar-100-python.tar.gz as torchvision
// downloads it: pickled train, test and meta files.
func TestCIFAR100PythonTarball(t *testing.T) {
	dir := t.TempDir()
	batch := func(n int) []byte {
		px := make([]byte, n*3072)
		fine, coarse := make([]int, n), make([]int, n)
		for i := range n {
			fine[i], coarse[i] = i%3, i%3/2
			for k := range 3072 {
				px[i*3072+k] = byte(fine[i] * 80)
			}
		}
		return cifarfixture.Py2Batch(px, n, map[string][]int{"fine_labels": fine, "coarse_labels": coarse})
	}
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("class%02d", i)
	}
	os.WriteFile(filepath.Join(dir, "cifar-100-python.tar.gz"), cifarfixture.Tarball100(batch(9), batch(3), names), 0o644)
	n, diags := decode(t, dir, `
source { url = "cifar-100-python.tar.gz" }
format = "cifar100"
train  = ["cifar-100-python/train"]
test   = ["cifar-100-python/test"]
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out := run(t, n)
	classes := v.GetAttr("classes").AsValueSlice()
	if len(classes) != 100 || classes[2].AsString() != "class02" {
		t.Fatalf("classes %v: want the meta file's 100 names", classes)
	}
	test, err := examplestore.ReadSplit(out, "test")
	if err != nil {
		t.Fatal(err)
	}
	for k, y := range test.Y.Int64s() {
		if test.X.Data[k*3072] != byte(y*80) {
			t.Fatalf("test example %d of class %d has pixel %d", k, y, test.X.Data[k*3072])
		}
	}
}
