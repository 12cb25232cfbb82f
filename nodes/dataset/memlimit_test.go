package dataset

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/train"
)

// heapPeak samples the live heap (as the last collection marked it)
// every few milliseconds until stop is called, and returns the largest.
func heapPeak() (stop func() uint64) {
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// TestStoreLargerThanMemoryLimit builds a store of 800 images at 256 x
// 256 (157 MB of pixels) with the process's memory limit at 96 MB, then
// reads its training split back through train.OpenSplitFor a batch at a
// time: the live heap must stay under the limit on both sides (holding
// the training split whole would need 1.5 times the limit, as float32s
// six times), and every value read must be
// the stored byte, normalised.
func TestStoreLargerThanMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 157 MB store")
	}
	const limit = 96 << 20
	dir := t.TempDir()
	writeImageFolder(t, dir, 800)
	tarTree(t, dir, "imgs")
	n, diags := decode(t, dir, `
source {
  url = "imgs.tar"
}
format       = "image_folder"
train        = ["imgs"]
image_size   = [256, 256]
val_fraction = 0.1
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	runtime.GC()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	stop := heapPeak()
	_, out := run(t, n)
	if peak := stop(); peak > limit {
		t.Errorf("writing the store: heap peaked at %.1f MB, over the %d MB limit", float64(peak)/1e6, limit>>20)
	} else {
		t.Logf("writing the store: heap peak %.1f MB (limit %d MB)", float64(peak)/1e6, limit>>20)
	}
	info, err := os.Stat(filepath.Join(out, "train.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("train split: %.1f MB", float64(info.Size())/1e6)
	if info.Size() <= limit {
		t.Fatalf("the train split is %d bytes, not larger than the %d MB limit", info.Size(), limit>>20)
	}
	meta, err := examplestore.ReadMeta(out)
	if err != nil {
		t.Fatal(err)
	}
	raw, unmap, err := examplestore.MapSplit(out, "train")
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	runtime.GC()
	stop = heapPeak()
	d, _, err := train.OpenSplitFor(out, "train", meta, train.Classification, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Len() != 720 {
		t.Fatalf("%d training examples, want 720", d.Len())
	}
	const batch = 8
	size := 3 * 256 * 256
	xs := make([]float32, batch*size)
	for off := 0; off < d.Len(); off += batch {
		cnt := min(batch, d.Len()-off)
		idx := make([]int, cnt)
		for i := range idx {
			idx[i] = off + i
		}
		if err := d.Source.Read(xs[:cnt*size], idx); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < cnt; i += 7 { // every seventh example, every 97th value
			for j := 0; j < size; j += 97 {
				c := j / (256 * 256)
				v := raw.X.Data[(off+i)*size+j]
				want := float32((float64(float32(v))*meta.Normalize.Scale - meta.Normalize.Mean[c]) / meta.Normalize.Std[c])
				if got := xs[i*size+j]; got != want {
					t.Fatalf("example %d, value %d: read %v, want %v (stored byte %d)", off+i, j, got, want, v)
				}
			}
		}
	}
	if peak := stop(); peak > limit {
		t.Errorf("reading the store: heap peaked at %.1f MB, over the %d MB limit", float64(peak)/1e6, limit>>20)
	} else {
		t.Logf("reading the store: heap peak %.1f MB (limit %d MB)", float64(peak)/1e6, limit>>20)
	}
}
