package imagedec

import (
	"math"
	"testing"
)

// TestJPEGRoundTrip: an image compressed by AppendJPEG and decoded by
// AppendCHW at its own size comes back close (mean error under 2 levels
// at quality 90 for a smooth image, grey and colour), and a lower quality
// makes a smaller file.
func TestJPEGRoundTrip(t *testing.T) {
	const h, w = 40, 56
	for _, channels := range []int{1, 3} {
		img := make([]byte, channels*h*w)
		for c := range channels {
			for y := range h {
				for x := range w {
					img[(c*h+y)*w+x] = byte(40 + x + y/2 + 30*c)
				}
			}
		}
		var e Encoder
		hi, err := e.AppendJPEG(nil, img, channels, h, w, 90)
		if err != nil {
			t.Fatal(err)
		}
		lo, err := e.AppendJPEG(nil, img, channels, h, w, 20)
		if err != nil {
			t.Fatal(err)
		}
		if len(lo) >= len(hi) {
			t.Errorf("%d channels: quality 20 is %d bytes, 90 is %d", channels, len(lo), len(hi))
		}
		back, err := New().AppendCHW(nil, hi, channels, h, w)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for i := range img {
			sum += math.Abs(float64(img[i]) - float64(back[i]))
		}
		if mean := sum / float64(len(img)); mean > 2 {
			t.Errorf("%d channels (%s): mean error %.2f levels", channels, Backend(), mean)
		}
	}
	var e Encoder
	for _, bad := range []struct {
		c, h, w, q, n int
	}{{2, 4, 4, 90, 32}, {3, 4, 4, 0, 48}, {3, 4, 4, 90, 47}} {
		if _, err := e.AppendJPEG(nil, make([]byte, bad.n), bad.c, bad.h, bad.w, bad.q); err == nil {
			t.Errorf("%+v encoded", bad)
		}
	}
}
