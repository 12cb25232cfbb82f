package imagedec

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"testing"
)

// imagenetLikeJPEG is a 500 x 375 JPEG at quality 90 (ImageNet's typical
// size): smooth shapes under noise, so it decodes about as a photo does.
func imagenetLikeJPEG(b *testing.B) []byte {
	b.Helper()
	const w, h = 500, 375
	rng := rand.New(rand.NewPCG(1, 2))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			n := uint8(rng.IntN(60))
			img.Set(x, y, color.RGBA{uint8(x/2) + n, uint8(y/2) + n, uint8((x+y)/4) + n, 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkAppendCHW decodes an ImageNet-like JPEG and resizes it to
// 224 x 224 RGB, as a dataset node stores it (one core).
func BenchmarkAppendCHW(b *testing.B) {
	data := imagenetLikeJPEG(b)
	d := New()
	out := make([]byte, 0, 3*224*224)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var err error
		if out, err = d.AppendCHW(out[:0], data, 3, 224, 224); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkResize is the resize alone: 500 x 375 RGB to 224 x 224.
func BenchmarkResize(b *testing.B) {
	const iw, ih = 500, 375
	src := make([]byte, iw*ih*3)
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst := make([]byte, 224*224*3)
	var r resizer
	for b.Loop() {
		r.resize(dst, src, iw*3, 3, iw, ih, 224, 224)
	}
}

func BenchmarkPasses(b *testing.B) {
	const iw, ih = 500, 375
	src := make([]byte, iw*ih*3)
	for i := range src {
		src[i] = byte(i * 7)
	}
	h, v := bilinearTaps(iw, 224), bilinearTaps(ih, 224)
	tmp := make([]byte, ih*224*3)
	dst := make([]byte, 224*224*3)
	b.Run("horizontal", func(b *testing.B) {
		for b.Loop() {
			resizeHorizontal(tmp, src, iw*3, 3, h, 224, 0, ih)
		}
	})
	b.Run("vertical", func(b *testing.B) {
		for b.Loop() {
			resizeVertical(dst, tmp, 224*3, 224*3, v, 0)
		}
	})
}
