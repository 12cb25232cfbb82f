package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/internal/hffixture"
)

// BenchmarkSegmentationStore measures an ADE20K-layout dataset at 1,500 and
// 3,000 examples: a Hugging Face Parquet shard of 256 x 256 JPEG images
// and PNG masks of 150 classes (plus "other", 0), stored at 224 px by the
// real binary, then 10 iterations of 8 of Go-runtime segmentation training on
// the store (a small convnet, validation and a test pass). It prints the
// peak RSS of each apply, the store's bytes beside what plan predicted,
// and the masks' dtype: the dataset node and training must stay flat in
// memory as the examples double, and the masks be U8.
func BenchmarkSegmentationStore(b *testing.B) {
	b.Logf("%-8s %12s %12s %12s %10s %14s %12s", "examples", "store MiB", "planned MiB", "plan/store", "masks", "store RSS MB", "train RSS MB")
	for range b.N {
		for _, n := range []int{1500, 3000} {
			work := b.TempDir()
			writeADE20KLike(b, filepath.Join(work, "train-00000-of-00001.parquet"), n)
			writeFile(&testing.T{}, filepath.Join(work, "main.hcl"), fmt.Sprintf(`
dataset "ade" {
  source { url = "train-00000-of-00001.parquet" }
  format        = "parquet"
  train         = ["train-00000-of-00001.parquet"]
  label_column  = "annotation"
  examples      = { train = %d }
  image_size    = [224, 224]
  val_fraction  = 0.1
  test_fraction = 0.1
}
output "splits" { value = dataset.ade.splits }
`, n))
			cache := b.TempDir()
			planned := plannedStoreMiB(b, work, cache)
			_, _, storeRSS := timedApply(b, work, cache)
			dir, err := storeDirOf(cache, "parquet")
			if err != nil {
				b.Fatal(err)
			}
			var size int64
			filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if err == nil && strings.HasSuffix(p, ".safetensors") {
					size += info.Size()
				}
				return nil
			})
			s, unmap, err := examplestore.MapSplit(dir, "train")
			if err != nil {
				b.Fatal(err)
			}
			masks := string(s.Y.DType)
			unmap()
			appendBlocks(b, work, segmentationBlocks)
			_, _, trainRSS := timedApply(b, work, cache)
			mib := float64(size) / (1 << 20)
			b.Logf("%-8d %12.1f %12.1f %12.3f %10s %14.0f %12.0f", n, mib, planned, planned/mib, masks, storeRSS, trainRSS)
		}
	}
}

// segmentationBlocks train a small convnet's segmentation head on the
// store on the Go runtime.
const segmentationBlocks = `
encoder "convnet" {
  arch     = "convnet"
  channels = [8, 16]
  hidden   = [32]
}
adapter "seg" { task = "segmentation" }
recipe "short" {
  lr             = 1e-3
  batch_size     = 8
  iterations     = 10
  validate_every = 10
  top_k          = 1
}
benchmark "ade" {
  dataset  = dataset.ade.path
  id       = "ade20k"
  category = "Img Seg"
  task     = "segmentation"
}
train "convnet" {
  encoder   = encoder.convnet
  adapter   = adapter.seg
  recipe    = recipe.short
  benchmark = benchmark.ade
  runtime   = "go"
}
`

// appendBlocks adds blocks to work's main.hcl.
func appendBlocks(b *testing.B, work, blocks string) {
	b.Helper()
	f, err := os.OpenFile(filepath.Join(work, "main.hcl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(blocks); err != nil {
		b.Fatal(err)
	}
}

// plannedStore matches plan's line for a store's size on disk.
var plannedStore = regexp.MustCompile(`examples of \[[0-9 ]+\] U8: ([0-9.]+) (KiB|MiB|GiB) on disk`)

// plannedStoreMiB runs plan on work and returns the store size it
// predicts, in MiB.
func plannedStoreMiB(b *testing.B, work, cache string) float64 {
	b.Helper()
	cmd := exec.Command(binPath, "plan", work)
	cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("plan: %v\n%s", err, out)
	}
	m := plannedStore.FindSubmatch(out)
	if m == nil {
		b.Fatalf("plan names no store size:\n%s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	switch string(m[2]) {
	case "KiB":
		v /= 1 << 10
	case "GiB":
		v *= 1 << 10
	}
	return v
}

// writeADE20KLike writes an ADE20K-layout shard of n rows: 256 x 256
// JPEGs (quality 90) of smooth colour fields with noise, and grey PNG
// masks of rectangles of classes 0-150, 100 rows a row group.
func writeADE20KLike(b *testing.B, path string, n int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	images, masks := make([][]byte, n), make([][]byte, n)
	for i := range n {
		img := image.NewRGBA(image.Rect(0, 0, 256, 256))
		mask := image.NewGray(img.Bounds())
		base := [3]int{rng.IntN(200), rng.IntN(200), rng.IntN(200)}
		for range 6 {
			x0, y0 := rng.IntN(224), rng.IntN(224)
			w, h := 16+rng.IntN(128), 16+rng.IntN(128)
			class := uint8(rng.IntN(151))
			for y := y0; y < min(y0+h, 256); y++ {
				for x := x0; x < min(x0+w, 256); x++ {
					mask.Pix[y*mask.Stride+x] = class
				}
			}
		}
		for y := range 256 {
			for x := range 256 {
				c := int(mask.Pix[y*mask.Stride+x])
				img.Set(x, y, color.RGBA{uint8((base[0] + c + x/4 + rng.IntN(16)) % 256), uint8((base[1] + 2*c + y/4 + rng.IntN(16)) % 256), uint8((base[2] + 3*c + rng.IntN(16)) % 256), 255})
			}
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
			b.Fatal(err)
		}
		images[i], masks[i] = buf.Bytes(), hffixture.PNG(mask)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := hffixture.Segmentation(f, images, masks, 100); err != nil {
		b.Fatal(err)
	}
}
