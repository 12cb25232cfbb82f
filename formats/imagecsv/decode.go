package imagecsv

import (
	"context"
	"fmt"
	"io/fs"
	"runtime"
	"sync"

	"github.com/gatepipe/gatepipe/formats/imagefolder"
)

// Decode reads the image files at paths (names in fsys, or paths on disk
// when fsys is nil), scaled to height x width, as
// [len(paths), channels, height, width] bytes in the order given. Files are
// decoded on all CPUs; the first error (naming the file) stops the work.
// progress, when not nil, hears how many files were handed out so far.
// An image declaring more than maxPixels pixels (0: the default bound) is
// refused before it is decoded.
func Decode(ctx context.Context, fsys fs.FS, paths []string, channels, height, width int, maxPixels int64, progress func(done int)) ([]byte, error) {
	return DecodeInto(ctx, nil, fsys, paths, channels, height, width, maxPixels, progress)
}

// DecodeInto is Decode into dst's storage when it is large enough (else a
// new slice): a caller decoding batch after batch reuses its buffers, and
// each image is decoded straight into its place.
func DecodeInto(ctx context.Context, dst []byte, fsys fs.FS, paths []string, channels, height, width int, maxPixels int64, progress func(done int)) ([]byte, error) {
	if channels != 1 && channels != 3 {
		return nil, fmt.Errorf("channels must be 1 or 3, not %d", channels)
	}
	if height <= 0 || width <= 0 {
		return nil, fmt.Errorf("image size must be positive, not %dx%d", height, width)
	}
	size := channels * height * width
	out := dst[:0]
	if cap(out) < len(paths)*size {
		out = make([]byte, len(paths)*size)
	}
	out = out[:len(paths)*size]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	workers := min(runtime.GOMAXPROCS(0), max(len(paths), 1))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := imagefolder.NewReader(maxPixels)
			for i := range next {
				// The image's place, with no room beyond it: the decoder
				// appends there in place.
				place := out[i*size : i*size : (i+1)*size]
				got, err := r.Append(place, fsys, paths[i], channels, height, width)
				if err != nil {
					once.Do(func() { first = err; cancel() })
					continue
				}
				if len(got) != size {
					err := fmt.Errorf("%s: %d bytes decoded, want %d (internal error)", paths[i], len(got), size)
					once.Do(func() { first = err; cancel() })
					continue
				}
				if &got[0] != &out[i*size] {
					copy(out[i*size:], got)
				}
			}
		}()
	}
feed:
	for i := range paths {
		if progress != nil && i%64 == 0 {
			progress(i)
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if progress != nil && first == nil && ctx.Err() == nil {
		progress(len(paths))
	}
	if first != nil {
		return nil, first
	}
	return out, ctx.Err()
}
