package imagedec

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
)

// Encoder compresses channel-major images to JPEG: libjpeg-turbo in a
// build with the turbojpeg tag, Go's encoder otherwise. An Encoder is
// not safe for concurrent use.
type Encoder struct {
	turbo turboEncoder
	pix   []byte
}

// AppendJPEG compresses the image chw ([channels, h, w] bytes, channels
// 1 or 3) at quality (1-100) and appends the JPEG to dst.
func (e *Encoder) AppendJPEG(dst, chw []byte, channels, h, w, quality int) ([]byte, error) {
	if channels != 1 && channels != 3 {
		return dst, fmt.Errorf("a JPEG holds 1 or 3 channels, not %d", channels)
	}
	if h <= 0 || w <= 0 || len(chw) != channels*h*w {
		return dst, fmt.Errorf("%d bytes for a %d x %d x %d image", len(chw), channels, h, w)
	}
	if quality < 1 || quality > 100 {
		return dst, fmt.Errorf("JPEG quality %d is outside 1-100", quality)
	}
	pix := chw
	if channels == 3 {
		// Interleaved, as both encoders take it.
		e.pix = grow(e.pix, len(chw))
		pix = e.pix[:len(chw)]
		plane := h * w
		r, g, b := chw[:plane], chw[plane:2*plane], chw[2*plane:]
		for i := range plane {
			p := pix[i*3 : i*3+3 : i*3+3]
			p[0], p[1], p[2] = r[i], g[i], b[i]
		}
	}
	out, err := e.turbo.encode(dst, pix, channels, w, h, quality)
	if !errors.Is(err, errNotTurbo) {
		return out, err
	}
	var img image.Image
	if channels == 1 {
		img = &image.Gray{Pix: pix, Stride: w, Rect: image.Rect(0, 0, w, h)}
	} else {
		rgba := image.NewRGBA(image.Rect(0, 0, w, h))
		for i := range h * w {
			copy(rgba.Pix[i*4:i*4+3], pix[i*3:i*3+3])
			rgba.Pix[i*4+3] = 255
		}
		img = rgba
	}
	buf := bytes.NewBuffer(dst)
	if err := jpeg.Encode(buf, img, &jpeg.Options{Quality: quality}); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}
