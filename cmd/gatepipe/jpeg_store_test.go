package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commandnode "github.com/gatepipe/gatepipe/nodes/command"
)

// colourFolderTar writes imgs.tar under dir: an image_folder of n 24 x 32
// PNGs in three classes, each a smooth field around its own colour.
func colourFolderTar(t *testing.T, dir string, n int) {
	t.Helper()
	files := map[string][]byte{}
	base := []color.NRGBA{{200, 60, 60, 255}, {60, 200, 60, 255}, {60, 60, 200, 255}}
	for i := range n {
		c := base[i%3]
		img := image.NewNRGBA(image.Rect(0, 0, 32, 24))
		for y := range 24 {
			for x := range 32 {
				img.Set(x, y, color.NRGBA{c.R - byte(x+i%7), c.G - byte(y), c.B - byte((x+y)/2), 255})
			}
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		files[fmt.Sprintf("imgs/c%d/%03d.png", i%3, i)] = b.Bytes()
	}
	writeTar(t, filepath.Join(dir, "imgs.tar"), files)
}

// jpegStorePipeline stores imgs.tar raw and as JPEGs and trains a small
// convnet on each store on both runtimes.
const jpegStorePipeline = `
locals {
  stores   = { raw = "raw", jpeg = "jpeg" }
  runtimes = { go = "go", torch = "torch" }
  runs     = { for p in setproduct(keys(local.stores), keys(local.runtimes)) : "${p[0]}-${p[1]}" => { store = p[0], runtime = p[1] } }
}
dataset "imgs" {
  for_each      = local.stores
  source { url = "imgs.tar" }
  format        = "image_folder"
  train         = ["imgs"]
  image_size    = [24, 32]
  val_fraction  = 0.2
  test_fraction = 0.2
  store         = each.value
}
benchmark "b" {
  for_each = local.stores
  dataset  = dataset.imgs[each.key].path
  id       = "colours-${each.key}"
  category = "Img Class"
}
encoder "cnn" {
  arch     = "convnet"
  channels = [4]
}
adapter "head" {}
recipe "r" {
  batch_size     = 8
  iterations     = 30
  validate_every = 10
  top_k          = 1
}
train "t" {
  for_each  = local.runs
  encoder   = encoder.cnn
  adapter   = adapter.head
  recipe    = recipe.r
  benchmark = benchmark.b[each.value.store]
  runtime   = each.value.runtime
  python    = each.value.runtime == "torch" ? "@PYTHON@" : null
}
features "f" {
  for_each  = local.runs
  encoder   = encoder.cnn
  benchmark = benchmark.b[each.value.store]
  runtime   = each.value.runtime
  python    = each.value.runtime == "torch" ? "@PYTHON@" : null
}
output "feature_splits" { value = { for k, f in features.f : k => f.splits } }
`

// TestJPEGStoreTrainsOnBothRuntimes: a JPEG store trains on the Go
// runtime and on the torch runtime (its worker decoding the JPEGs) as the
// raw store of the same images does: three colours told apart, the same
// accuracy on every run; the features block reads it on both runtimes.
func TestJPEGStoreTrainsOnBothRuntimes(t *testing.T) {
	needTorch(t)
	dir := t.TempDir()
	colourFolderTar(t, dir, 60)
	writeFile(t, filepath.Join(dir, "main.hcl"), withPython(jpegStorePipeline))
	cache := t.TempDir()
	r := gpWith(t, append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache), "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	accs := map[string]float64{}
	filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.Name() != commandnode.MetricsFile {
			return nil
		}
		m, err := commandnode.ReadMetrics(p)
		if err != nil {
			t.Fatal(err)
		}
		accs[m.Benchmark+" "+fmt.Sprint(m.Metrics["Acc@1"].Value)]++
		return nil
	})
	var jpegStores int
	filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, "train.jpeg") {
			jpegStores++
		}
		return nil
	})
	if jpegStores != 1 {
		t.Errorf("%d JPEG stores written, want 1", jpegStores)
	}
	total := 0.0
	for k, n := range accs {
		total += n
		if !strings.HasSuffix(k, " 100") {
			t.Errorf("runs of %s: not every colour told apart", k)
		}
	}
	if total != 4 || math.IsNaN(total) {
		t.Errorf("%v runs, want 4: %v", total, accs)
	}
	for _, run := range []string{"jpeg-go", "jpeg-torch", "raw-go", "raw-torch"} {
		if !strings.Contains(r.stdout, fmt.Sprintf(`"%s":{"test":12,"train":36,"val":12}`, run)) {
			t.Errorf("features of %s: not every split's examples:\n%s", run, r.stdout)
		}
	}
}
