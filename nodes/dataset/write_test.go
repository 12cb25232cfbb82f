package dataset

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// TestSplitsWrittenInBatchesEqualOneBatch writes the same stores a batch
// of one example at a time and in one batch: every split file and
// meta.json (the normalisation accumulated as batches stream by) must be
// equal byte for byte, for pixels (lazily decoded images and IDX bytes),
// F32 tables and kept classes.
func TestSplitsWrittenInBatchesEqualOneBatch(t *testing.T) {
	dir := t.TempDir()
	writeIDXFixture(t, dir, 40)
	writeImageFolder(t, dir, 12)
	tarTree(t, dir, "imgs")
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte("a,b,label\n1,2.5,x\n3,4,y\n5,6.25,x\n7,8,y\n9,10,x\n11,12.5,y\n13,1,x\n"), 0o644)
	configs := map[string]string{
		"idx": fmt.Sprintf(idxConfig, 3),
		"image_folder": `
source {
  url = "imgs.tar"
}
format       = "image_folder"
train        = ["imgs"]
image_size   = [6, 5]
val_fraction = 0.25
`,
		"keep_classes": `
source {
  url = "imgs.tar"
}
format       = "image_folder"
train        = ["imgs"]
image_size   = [4, 4]
keep_classes = ["c2", "c0"]
`,
		"csv": `
source {
  url = "t.csv"
}
format       = "csv"
train        = ["t.csv"]
label_column = "label"
test_fraction = 0.3
`,
	}
	for name, src := range configs {
		t.Run(name, func(t *testing.T) {
			var outs []string
			for _, batch := range []int{defaultBatchBytes, 1} {
				n, diags := decode(t, dir, src)
				if diags.HasErrors() {
					t.Fatal(diags)
				}
				n.batchBytes = batch
				_, out := run(t, n)
				outs = append(outs, out)
			}
			meta, err := examplestore.ReadMeta(outs[0])
			if err != nil {
				t.Fatal(err)
			}
			files := []string{"meta.json"}
			for split, count := range meta.Splits {
				if count < 2 {
					t.Fatalf("split %s has %d examples: too few to batch", split, count)
				}
				files = append(files, split+".safetensors")
			}
			for _, f := range files {
				a, errA := os.ReadFile(filepath.Join(outs[0], f))
				b, errB := os.ReadFile(filepath.Join(outs[1], f))
				if errA != nil || errB != nil || !bytes.Equal(a, b) {
					t.Errorf("%s differs between one batch and batches of one example (%v, %v)", f, errA, errB)
				}
			}
		})
	}
}

// writeImageFolder writes n small PNGs in three class folders under
// dir/imgs, each with its own pixels.
func writeImageFolder(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		p := filepath.Join(dir, "imgs", fmt.Sprintf("c%d", i%3), fmt.Sprintf("%02d.png", i))
		writeGradientPNG(t, p, 9, 7, byte(i*17))
	}
}

// writeGradientPNG writes a w x h RGB PNG whose pixels vary with x, y and
// base.
func writeGradientPNG(t *testing.T, p string, w, h int, base byte) {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{base + byte(x*20), byte(y * 30), base ^ byte(x*y), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The byte counts give the per-channel mean and std of float64 sums
// taken value by value in example order (within 1e-12), whatever the
// batches.
func TestChannelStatsFromCountsEqualRunningSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const count, channels, inner = 37, 3, 101
	x := make([]byte, count*channels*inner)
	for i := range x {
		x[i] = byte(rng.IntN(256) * (i % 7) / 6)
	}
	s := (&Node{normalize: "standard"}).newChannelStats(&examples{dtype: safetensors.U8, shape: []int{channels, 1, inner}})
	size := channels * inner
	for _, n := range []int{1, 10, 26} { // batches of 1, 10 and 26 examples
		s.add(x[:n*size], safetensors.U8, size)
		x = x[n*size:]
	}
	got := s.normalization()
	x = x[:0:0]
	rng = rand.New(rand.NewPCG(7, 8))
	for i := range count * size {
		x = append(x, byte(rng.IntN(256)*(i%7)/6))
	}
	for c := range channels {
		var sum, sq float64
		for e := range count {
			for _, v := range x[(e*channels+c)*inner : (e*channels+c+1)*inner] {
				f := float64(v) / 255
				sum += f
				sq += f * f
			}
		}
		mean := sum / (count * inner)
		std := math.Sqrt(sq/(count*inner) - mean*mean)
		if math.Abs(got.Mean[c]-mean) > 1e-12 || math.Abs(got.Std[c]-std) > 1e-12 {
			t.Errorf("channel %d: mean %g std %g, want %g %g", c, got.Mean[c], got.Std[c], mean, std)
		}
	}
}

func TestChunkExamples(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		name                    string
		batch, row, cores, want int
	}{
		{"images fill the batch", 16 * mb, 150536, 16, 111},
		{"clips: two per core", 16 * mb, 1204232, 16, 32},
		{"clips on two cores: the batch's", 16 * mb, 1204232, 2, 13},
		{"huge examples: capped by maxChunkBytes", 16 * mb, 100 * mb, 16, 2},
		{"an example past the cap: one", 16 * mb, 300 * mb, 16, 1},
		{"tiny batches (tests)", 1, 64, 2, 4},
	}
	for _, tc := range tests {
		if got := chunkExamples(tc.batch, tc.row, tc.cores); got != tc.want {
			t.Errorf("%s: chunkExamples(%d, %d, %d) = %d, want %d", tc.name, tc.batch, tc.row, tc.cores, got, tc.want)
		}
	}
}
