package dataset

import (
	"image"
	"image/color"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/hffixture"
)

// writeMaskShard writes an ADE20K-layout shard of n rows: 10 x 8 images
// and masks whose pixel (x, y) of row i is class (13i+x+10y) % classes (so
// the largest class occurs), as grey PNGs, or paletted ones whose palette
// colours are not their indices.
func writeMaskShard(t *testing.T, p string, n, classes int, paletted bool) [][]int64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(2, uint64(n)))
	var imgs, masks [][]byte
	var want [][]int64
	pal := color.Palette{}
	for k := range 256 {
		pal = append(pal, color.RGBA{uint8(255 - k), uint8(k), 7, 255})
	}
	for i := range n {
		img := image.NewRGBA(image.Rect(0, 0, 10, 8))
		var m image.Image
		grey, idx := image.NewGray(img.Bounds()), image.NewPaletted(img.Bounds(), pal)
		var vals []int64
		for y := range 8 {
			for x := range 10 {
				v := (i*13 + x + y*10) % classes
				grey.Pix[y*grey.Stride+x], idx.Pix[y*idx.Stride+x] = uint8(v), uint8(v)
				img.Set(x, y, color.RGBA{uint8(rng.IntN(255)), uint8(v), 0, 255})
				vals = append(vals, int64(v))
			}
		}
		m = grey
		if paletted {
			m = idx
		}
		imgs, masks, want = append(imgs, hffixture.PNG(img)), append(masks, hffixture.PNG(m)), append(want, vals)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := hffixture.Segmentation(f, imgs, masks, 4); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestParquetMasksAreStoredCompact: masks stored as images are read a
// batch at a time and stored as U8, each example's the mask of its source
// row (index), with classes numbered up to the largest value seen; a
// paletted mask's values are its palette indices.
func TestParquetMasksAreStoredCompact(t *testing.T) {
	for _, c := range []struct {
		name     string
		paletted bool
	}{{"grey", false}, {"paletted", true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			const rows, classes = 23, 151
			want := writeMaskShard(t, filepath.Join(dir, "train.parquet"), rows, classes, c.paletted)
			n, diags := decode(t, dir, `
source { url = "train.parquet" }
format        = "parquet"
train         = ["train.parquet"]
label_column  = "annotation"
image_size    = [8, 10]
val_fraction  = 0.2
test_fraction = 0.2
`)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			n.batchBytes = 3 * 8 * 10 * 4 // four examples a batch
			_, out := run(t, n)
			meta, err := examplestore.ReadMeta(out)
			if err != nil {
				t.Fatal(err)
			}
			if meta.Task != "segmentation" || meta.NumClasses != classes {
				t.Fatalf("task %q with %d classes, want segmentation with %d", meta.Task, meta.NumClasses, classes)
			}
			seen := 0
			for _, name := range []string{"train", "val", "test"} {
				s, err := examplestore.ReadSplit(out, name)
				if err != nil {
					t.Fatal(err)
				}
				if s.Y.DType != safetensors.U8 || !slices.Equal(s.Y.Shape, []int{s.Len(), 8, 10}) {
					t.Fatalf("%s masks are %s %v, want U8 [%d 8 10]", name, s.Y.DType, s.Y.Shape, s.Len())
				}
				ys := s.Y.Int64s()
				for k, row := range s.Index {
					if got := ys[k*80 : (k+1)*80]; !slices.Equal(got, want[row]) {
						t.Fatalf("%s example %d (row %d): mask %v, want %v", name, k, row, got[:10], want[row][:10])
					}
				}
				seen += s.Len()
			}
			if seen != rows {
				t.Fatalf("%d examples stored of %d", seen, rows)
			}
		})
	}
}
