package dataset

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/gatepipe/gatepipe/train"
	"github.com/rs/zerolog"
)

// writeSmoothFolder writes n 64 x 48 RGB PNGs of smooth colour fields, in
// three classes: photograph-like content, which JPEG keeps closely.
func writeSmoothFolder(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		img := image.NewNRGBA(image.Rect(0, 0, 64, 48))
		for y := range 48 {
			for x := range 64 {
				img.Set(x, y, color.NRGBA{byte(40 + x + i), byte(60 + y*2), byte(90 + (x+y)/2 + 10*(i%3)), 255})
			}
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "imgs", fmt.Sprintf("c%d", i%3), fmt.Sprintf("%02d.png", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// storeBytes is the size of a store's split files.
func storeBytes(t *testing.T, dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".safetensors") || strings.HasSuffix(e.Name(), examplestore.JPEGSuffix) {
			info, _ := e.Info()
			n += info.Size()
		}
	}
	return n
}

// TestJPEGStore: store = "jpeg" keeps each image as a JPEG in a sidecar
// of a fraction of the raw store's bytes; both of the Go runtime's
// readers (a split loaded whole, and read a batch at a time from the
// map) give the raw store's values within JPEG's error, the same from
// either; the targets and index are the raw store's.
func TestJPEGStore(t *testing.T) {
	dir := t.TempDir()
	writeSmoothFolder(t, dir, 30)
	tarTree(t, dir, "imgs")
	block := `
source { url = "imgs.tar" }
format        = "image_folder"
train         = ["imgs"]
image_size    = [48, 64]
val_fraction  = 0.2
test_fraction = 0.2
`
	stores := map[string]string{}
	for name, extra := range map[string]string{"raw": "", "jpeg": "store = \"jpeg\"\njpeg_quality = 90\n"} {
		n, diags := decode(t, dir, block+extra)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		_, stores[name] = run(t, n)
	}
	meta, err := examplestore.ReadMeta(stores["jpeg"])
	if err != nil {
		t.Fatal(err)
	}
	if meta.Encoding != examplestore.EncodingJPEG || meta.Quality != 90 {
		t.Fatalf("meta encoding %q quality %d", meta.Encoding, meta.Quality)
	}
	raw, jpg := storeBytes(t, stores["raw"]), storeBytes(t, stores["jpeg"])
	if jpg*3 > raw {
		t.Errorf("the JPEG store is %d bytes, the raw one %d", jpg, raw)
	}
	rawMeta, _ := examplestore.ReadMeta(stores["raw"])
	want, _, err := train.LoadSplit(stores["raw"], "train", rawMeta, train.Classification)
	if err != nil {
		t.Fatal(err)
	}
	loaded, _, err := train.LoadSplit(stores["jpeg"], "train", meta, train.Classification)
	if err != nil {
		t.Fatal(err)
	}
	opened, _, err := train.OpenSplitFor(stores["jpeg"], "train", meta, train.Classification, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	if opened.Len() != want.Len() || loaded.Len() != want.Len() {
		t.Fatalf("%d and %d examples, want %d", opened.Len(), loaded.Len(), want.Len())
	}
	got := make([]float32, len(want.X))
	idx := make([]int, want.Len())
	for i := range idx {
		idx[i] = i
	}
	if err := opened.Source.Read(got, idx); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for i := range want.X {
		if got[i] != loaded.X[i] {
			t.Fatalf("value %d: %v read a batch at a time, %v loaded whole", i, got[i], loaded.X[i])
		}
		// In raw bytes: the normalised difference times std, times 255.
		c := (i / (48 * 64)) % 3
		sum += math.Abs(float64(got[i]-want.X[i])) * meta.Normalize.Std[c] * 255
	}
	mean := sum / float64(len(want.X))
	t.Logf("raw store %d bytes, JPEG store %d (%.1fx smaller); mean error %.2f levels", raw, jpg, float64(raw)/float64(jpg), mean)
	if mean > 2 {
		t.Errorf("the JPEG store's values are %.2f levels from the raw store's on average", mean)
	}
	for i := range want.Y {
		if opened.Y[i] != want.Y[i] {
			t.Fatalf("label %d: %d, want %d", i, opened.Y[i], want.Y[i])
		}
	}
	// Only images can be kept as JPEGs.
	_, diags := decode(t, dir, block+"store = \"png\"\n")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "store is") {
		t.Errorf("store = png: %v", diags)
	}
	_, diags = decode(t, dir, block+"jpeg_quality = 50\n")
	if !diags.HasErrors() {
		t.Error("jpeg_quality on a raw store was accepted")
	}
}

// TestKeepSourcesFalseDropsTheBlobs: with keep_sources = false the
// source's blob leaves the cache once the store is written, unless
// another node uses it (UseBlob); a later run fetches it again.
func TestKeepSourcesFalseDropsTheBlobs(t *testing.T) {
	dir := t.TempDir()
	writeSmoothFolder(t, dir, 12)
	tarTree(t, dir, "imgs")
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runIn := func() (*Node, error) {
		n, diags := decode(t, dir, `
source { url = "imgs.tar" }
format        = "image_folder"
train         = ["imgs"]
image_size    = [24, 32]
val_fraction  = 0.25
test_fraction = 0.25
keep_sources  = false
`)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		out, _ := c.TempDir("dataset")
		_, err := n.Run(context.Background(), &nodes.Env{OutDir: out, Blobs: c, Log: zerolog.Nop(), Progress: nodes.NoProgress{}})
		return n, err
	}
	blobs := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(c.Dir(), "blobs"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".stat") {
				n++
			}
			return nil
		})
		return n
	}
	if _, err := runIn(); err != nil {
		t.Fatal(err)
	}
	if n := blobs(); n != 0 {
		t.Fatalf("%d blobs left after a keep_sources = false run", n)
	}
	sum, err := sources.FileSHA256(filepath.Join(dir, "imgs.tar"))
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := c.UseBlob(context.Background(), sum)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runIn(); err != nil { // fetched again, and kept: in use
		t.Fatal(err)
	}
	if n := blobs(); n != 1 {
		t.Fatalf("%d blobs after a run whose source another node uses, want 1", n)
	}
	unlock()
	if ok, err := c.DropBlob(sum); !ok || err != nil {
		t.Fatalf("a blob no one uses was not dropped: %v %v", ok, err)
	}
}
