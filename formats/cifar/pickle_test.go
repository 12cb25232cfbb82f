package cifar

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/cifarfixture"
)

func TestReadPickleAsTheAuthorsPickledIt(t *testing.T) {
	pixels := make([]byte, 2*Pixels)
	for i := range pixels {
		pixels[i] = byte(i % 251)
	}
	data := cifarfixture.Py2Batch(pixels, 2, map[string][]int{"fine_labels": {42, 99}, "coarse_labels": {3, 19}})
	if !IsPickle(data) {
		t.Fatal("IsPickle does not recognise a protocol-2 pickle")
	}
	b, err := ReadPickle(bytes.NewReader(data), CIFAR100, "train")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Images, pixels) || !slices.Equal(b.Labels, []int64{42, 99}) || !slices.Equal(b.Coarse, []int64{3, 19}) {
		t.Fatalf("batch: %d image bytes, labels %v, coarse %v", len(b.Images), b.Labels, b.Coarse)
	}
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"label out of range": {cifarfixture.Py2Batch(pixels, 2, map[string][]int{"fine_labels": {42, 100}, "coarse_labels": {3, 19}}), "fine_labels[1] = 100"},
		"labels missing":     {cifarfixture.Py2Batch(pixels, 2, map[string][]int{"fine_labels": {1, 2}}), `no list "coarse_labels"`},
		"short labels":       {cifarfixture.Py2Batch(pixels, 2, map[string][]int{"fine_labels": {1}, "coarse_labels": {3, 19}}), "1 labels for 2 images"},
		"wrong shape":        {cifarfixture.Py2Batch(pixels[:Pixels], 2, map[string][]int{"fine_labels": {1, 2}, "coarse_labels": {3, 19}}), "want [N, 3072]"},
		"truncated":          {data[:len(data)/2], "not a CIFAR pickle"},
		"foreign global":     {[]byte("\x80\x02cos\nsystem\n."), "does not use"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadPickle(bytes.NewReader(tc.data), CIFAR100, "train")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "train") {
				t.Fatalf("err = %v, want one naming the file and %q", err, tc.want)
			}
		})
	}
	if IsPickle([]byte{19, 42}) {
		t.Error("a binary record (coarse 19, fine 42) taken for a pickle")
	}
}

// TestReadPickleFromPython3: a batch and a meta file pickled by Python 3
// with numpy at protocol 2 (bytes through _codecs.encode) read the same.
func TestReadPickleFromPython3(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import numpy").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("/usr/bin/python3 with numpy is needed (make test installs python3-torch)")
		}
		t.Skip("no numpy for /usr/bin/python3")
	}
	dir := t.TempDir()
	script := `
import pickle, sys, numpy as np
d = {b"data": np.arange(2 * 3072, dtype=np.uint8).reshape(2, 3072), b"labels": [7, 0], b"batch_label": b"training batch 1 of 5"}
pickle.dump(d, open(sys.argv[1] + "/data_batch_1", "wb"), protocol=2)
pickle.dump({b"label_names": [b"airplane", b"automobile"], b"num_vis": 3072}, open(sys.argv[1] + "/batches.meta", "wb"), protocol=2)
`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	f, _ := os.Open(filepath.Join(dir, "data_batch_1"))
	defer f.Close()
	b, err := ReadPickle(f, CIFAR10, "data_batch_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Images) != 2*Pixels || b.Images[3073] != byte(3073%256) || !slices.Equal(b.Labels, []int64{7, 0}) {
		t.Fatalf("batch: %d bytes, labels %v", len(b.Images), b.Labels)
	}
	m, _ := os.Open(filepath.Join(dir, "batches.meta"))
	defer m.Close()
	names, err := ReadPickleNames(m, "label_names", "batches.meta")
	if err != nil || !slices.Equal(names, []string{"airplane", "automobile"}) {
		t.Fatalf("names %q, %v", names, err)
	}
}

func FuzzReadPickle(f *testing.F) {
	f.Add(cifarfixture.Py2Batch(make([]byte, Pixels), 1, map[string][]int{"fine_labels": {1}, "coarse_labels": {2}}))
	f.Add([]byte("\x80\x02}q\x00."))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		ReadPickle(bytes.NewReader(data), CIFAR100, "fuzz")
	})
}
