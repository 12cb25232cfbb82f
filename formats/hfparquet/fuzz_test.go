package hfparquet

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatepipe/gatepipe/internal/hffixture"
)

// FuzzRead: any bytes give rows or an error, never a panic.
func FuzzRead(f *testing.F) {
	var good bytes.Buffer
	rng := rand.New(rand.NewPCG(5, 6))
	img := hffixture.PNG(hffixture.ClassImage(0, 4, 4, rng))
	if err := hffixture.ImageClassification(&good, [][]byte{img, img}, []int64{0, 1}, []string{"a", "b"}, 1); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())
	var arrays bytes.Buffer
	hffixture.Arrays(&arrays, [][][]float32{{{1, 2}}}, [][][]int64{{{0, 1}}}, 1)
	f.Add(arrays.Bytes())
	var pairs bytes.Buffer
	hffixture.Winoground(&pairs, [][2][]byte{{img, img}}, [][2]string{{"a b", "b a"}}, 1)
	f.Add(pairs.Bytes())
	f.Add([]byte("PAR1"))
	dir := f.TempDir()
	winoground := []Pair{{"image_0", "caption_0"}, {"image_1", "caption_1"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "f.parquet")
		if err := os.WriteFile(p, data, 0o666); err != nil {
			t.Fatal(err)
		}
		Read(context.Background(), []string{p}, Options{Height: 4, Width: 4})
		d, err := Read(context.Background(), []string{p}, Options{Height: 4, Width: 4, Pairs: winoground})
		if err == nil && (len(d.Text) != d.Rows || len(d.U8) != d.Rows*3*4*4) {
			t.Fatalf("%d examples, %d captions, %d pixel bytes", d.Rows, len(d.Text), len(d.U8))
		}
	})
}
