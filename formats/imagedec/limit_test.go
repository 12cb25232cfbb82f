package imagedec

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"runtime"
	"testing"

	"github.com/gatepipe/gatepipe/internal/imagebomb"
)

// TestRefusesDecompressionBombs: an image whose header declares more
// pixels than the limit is refused before its pixels are allocated, as
// PIL raises DecompressionBombError: the 10 KB PNG declaring 100,000 x
// 100,000 pixels that took a whole apply down, a real 14,000 x 14,000
// PNG, and a JPEG declaring 65,000 x 65,000. A limit raised on purpose
// lets a large image through.
func TestRefusesDecompressionBombs(t *testing.T) {
	cases := []struct {
		name string
		data []byte
	}{
		{"declared png 100000x100000", imagebomb.DeclaredPNG(100_000, 100_000)},
		{"png 14000x14000", imagebomb.PNG(14_000, 14_000)},
		{"jpeg 65000x65000", imagebomb.JPEG(65_000, 65_000)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := New().AppendCHW(nil, c.data, 3, 8, 8)
			runtime.ReadMemStats(&after)
			var tl *TooLargeError
			if !errors.Is(err, ErrBadImage) || !errors.As(err, &tl) {
				t.Fatalf("got %v, want a refused decompression bomb", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Fatalf("%d MB allocated before refusing it", grew>>20)
			}
		})
	}
	// Under a limit it fits, the 14,000-pixel image decodes.
	d := New()
	d.MaxPixels = 14_000 * 14_000
	if _, err := d.AppendCHW(nil, imagebomb.PNG(14_000, 14_000), 1, 8, 8); err != nil {
		t.Fatalf("raised limit: %v", err)
	}
	// Damaged data is a bad image too.
	if _, err := New().AppendCHW(nil, []byte("not an image"), 3, 8, 8); !errors.Is(err, ErrBadImage) {
		t.Fatalf("garbage: %v", err)
	}
}

// FuzzDecode feeds arbitrary bytes, seeded with images declaring
// sizes from 1 x 1 to 100,000 x 100,000: decoding returns pixels of the
// asked size or a BadImageError, never panics, and never allocates an
// image larger than the limit.
func FuzzDecode(f *testing.F) {
	var small bytes.Buffer
	png.Encode(&small, image.NewGray(image.Rect(0, 0, 3, 2)))
	f.Add(small.Bytes(), int64(0))
	f.Add([]byte{0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F'}, int64(0))
	f.Add([]byte("\x89PNG\r\n\x1a\n"), int64(0))
	f.Add(imagebomb.DeclaredPNG(100_000, 100_000), int64(0))
	f.Add(imagebomb.DeclaredPNG(3000, 3000), int64(1_000_000))
	f.Add(imagebomb.JPEG(65_000, 65_000), int64(0))
	f.Add(imagebomb.JPEG(40, 30), int64(100))
	f.Add([]byte("GIF89a\xff\xff\xff\xff\x00\x00\x00"), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		if limit <= 0 || limit > 1<<22 {
			limit = 1 << 22 // 4 M pixels: what a fuzz worker may allocate
		}
		d := New()
		d.MaxPixels = limit
		out, err := d.AppendCHW(nil, data, 3, 4, 5)
		switch {
		case err != nil && !errors.Is(err, ErrBadImage):
			t.Fatalf("an error that is not a BadImageError: %v", err)
		case err == nil && len(out) != 3*4*5:
			t.Fatalf("%d bytes, want %d", len(out), 3*4*5)
		}
	})
}
