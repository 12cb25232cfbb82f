package hfparquet

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// BenchmarkReadLargeFileMemory reads a Hub-layout Parquet file of about
// 2 GB (GATEPIPE_PARQUET_BENCH_GB sets the size; generated once under
// /tmp) into 32x32 examples and reports the Go heap's peak while reading:
// rows are read one at a time, so the peak follows one row (an image of
// ~0.8 MB) and the decoded output, not the file.
func BenchmarkReadLargeFileMemory(b *testing.B) {
	gb := 2.0
	if s := os.Getenv("GATEPIPE_PARQUET_BENCH_GB"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 {
			b.Fatalf("GATEPIPE_PARQUET_BENCH_GB=%q: want a positive number", s)
		}
		gb = v
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("gatepipe-bench-%.2fGB.parquet", gb))
	if _, err := os.Stat(path); err != nil {
		if err := writeLargeFile(path, int64(gb*(1<<30))); err != nil {
			os.Remove(path)
			b.Fatal(err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peak atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // sample the heap in use while reading
			defer close(done)
			var m runtime.MemStats
			for {
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		start := time.Now()
		d, err := Read(context.Background(), []string{path}, Options{Height: 32, Width: 32, Channels: 3})
		close(stop)
		<-done
		if err != nil {
			b.Fatal(err)
		}
		secs := time.Since(start).Seconds()
		b.ReportMetric(float64(st.Size())/(1<<20), "file_MB")
		b.ReportMetric(float64(peak.Load()-min(peak.Load(), base.HeapInuse))/(1<<20), "peak_heap_MB")
		b.ReportMetric(float64(len(d.U8))/(1<<20), "output_MB")
		b.ReportMetric(float64(st.Size())/(1<<20)/secs, "MB/s")
		b.Logf("%s: %d rows, %.0f MB read in %.1f s, peak heap %.0f MB above the start", path, len(d.Y), float64(st.Size())/(1<<20), secs, float64(peak.Load()-min(peak.Load(), base.HeapInuse))/(1<<20))
	}
}

// writeLargeFile writes about size bytes of rows {image: struct{bytes,
// path}, label} in the Hub's layout (row groups of 100), one record batch
// at a time so that writing is bounded too. Images are 512x512 PNGs of
// noise (incompressible, ~0.8 MB).
func writeLargeFile(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "image", Type: arrow.StructOf(
			arrow.Field{Name: "bytes", Type: arrow.BinaryTypes.Binary, Nullable: true},
			arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: "label", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(100), parquet.WithDictionaryDefault(false))
	cw := &countingWriter{w: f}
	fw, err := pqarrow.NewFileWriter(sc, cw, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// A few distinct noise images, reused (encoding would dominate
	// otherwise); dictionary encoding is off so each row stores its own.
	var pngs [][]byte
	for range 8 {
		img := image.NewRGBA(image.Rect(0, 0, 512, 512))
		for i := range img.Pix {
			img.Pix[i] = uint8(rng.Uint32())
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			return err
		}
		pngs = append(pngs, buf.Bytes())
	}
	for row := 0; cw.n < size; {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for range 100 {
			sb := bld.Field(0).(*array.StructBuilder)
			sb.Append(true)
			p := pngs[row%len(pngs)]
			sb.FieldBuilder(0).(*array.BinaryBuilder).Append(p)
			sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprintf("%08d.png", row))
			bld.Field(1).(*array.Int64Builder).Append(int64(row % 10))
			row++
		}
		rec := bld.NewRecordBatch()
		err := fw.Write(rec)
		rec.Release()
		bld.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}

type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
