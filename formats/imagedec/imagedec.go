// Package imagedec turns encoded images (JPEG, PNG, GIF) into fixed-size
// channel-major pixels the way a PyTorch data pipeline does with PIL:
//
//	Image.open(f).convert("RGB").resize((w, h), Image.BILINEAR)
//
// JPEGs are decoded by libjpeg-turbo through cgo when gatepipe is built
// with the turbojpeg tag (make finds Debian's libturbojpeg0-dev as it
// finds OpenBLAS), with the same settings PIL gives libjpeg (accurate
// integer IDCT, fancy upsampling), so the decoded pixels are PIL's. A
// JPEG at least twice the asked size in each direction is decoded at a
// reduced scale first (1/2, 1/4 or 1/8, chosen as PIL's draft chooses it
// for twice the size). Other images, and every image in a build without
// the tag, go through Go's decoders. The resize is Pillow's 8-bit
// resampler (antialiased triangle filter, 22-bit fixed-point weights),
// reimplemented, so equal inputs give PIL's bytes: in C (resample.h, SSE4.1
// and AVX2 where the processor has them) in the native build, in Go in the
// portable one.
package imagedec

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // registered decoders
	_ "image/jpeg"
	_ "image/png"
	"slices"
)

// Decoder holds one goroutine's scratch space: the decoded pixels, the
// resize's buffers and weights, and a libjpeg-turbo handle. It is not
// safe for concurrent use; make one per worker.
type Decoder struct {
	// MaxPixels bounds the pixels an image may declare (0:
	// DefaultMaxPixels); a larger one is refused before it is decoded.
	MaxPixels int64
	pix       []byte // decoded, interleaved
	small     []byte // resized, interleaved
	rs        resizer
	turbo     turbo
}

// New returns a decoder.
func New() *Decoder { return &Decoder{} }

// Backend names the JPEG decoder in use, for `gatepipe version`.
func Backend() string { return backend }

// ResizeBackend names the resampler in use: C in a build with the
// turbojpeg tag (with the vector instructions this processor has), Go
// otherwise. Both give the same bytes.
func ResizeBackend() string { return resizeBackend }

// AppendCHW decodes the encoded image data, converts it to channels
// (1: PIL's "L", 3: "RGB"), resizes it to h x w and appends it to out
// channel-major ([C, H, W]). An image that cannot be decoded, or that
// declares more than MaxPixels pixels, is a BadImageError (ErrBadImage).
func (d *Decoder) AppendCHW(out, data []byte, channels, h, w int) ([]byte, error) {
	if channels != 1 && channels != 3 {
		return out, fmt.Errorf("channels must be 1 or 3, not %d", channels)
	}
	if h <= 0 || w <= 0 {
		return out, fmt.Errorf("image size must be positive, not %dx%d", h, w)
	}
	if isJPEG(data) {
		pix, bands, iw, ih, err := d.turbo.decode(d.pix[:0], data, w, h, d.MaxPixels)
		switch {
		case err == nil:
			d.pix = pix
			return d.appendPacked(out, pix, bands, iw, ih, channels, h, w), nil
		case !errors.Is(err, errNotTurbo):
			return out, err
		}
	}
	img, err := DecodeLimited(data, d.MaxPixels)
	if err != nil {
		return out, err
	}
	return d.AppendImageCHW(out, img, channels, h, w), nil
}

// Interleaved decodes a JPEG of exactly h x w pixels and channels bands (a
// JPEG store's image) with libjpeg-turbo, returning its pixels
// interleaved ([H, W, C]), valid until the decoder's next use; false when
// it cannot (another size or band count, Go's decoder, damage): AppendCHW
// then decodes it. It saves a reader that lays the pixels out itself a
// pass over them.
func (d *Decoder) Interleaved(data []byte, channels, h, w int) ([]byte, bool) {
	if !isJPEG(data) {
		return nil, false
	}
	pix, bands, iw, ih, err := d.turbo.decode(d.pix[:0], data, w, h, d.MaxPixels)
	if err != nil {
		return nil, false
	}
	d.pix = pix
	if bands != channels || iw != w || ih != h {
		return nil, false
	}
	return pix[:h*w*bands], true
}

// AppendImageCHW does what AppendCHW does for an image already decoded.
func (d *Decoder) AppendImageCHW(out []byte, img image.Image, channels, h, w int) []byte {
	pix, bands := packed(d.pix[:0], img)
	d.pix = pix
	b := img.Bounds()
	return d.appendPacked(out, pix, bands, b.Dx(), b.Dy(), channels, h, w)
}

func isJPEG(data []byte) bool { return len(data) > 3 && data[0] == 0xff && data[1] == 0xd8 }

// appendPacked converts interleaved pixels (bands 1 or 3) to channels,
// resizes them and appends them channel-major.
func (d *Decoder) appendPacked(out, pix []byte, bands, iw, ih, channels, h, w int) []byte {
	if iw == 0 || ih == 0 {
		return append(out, make([]byte, channels*h*w)...)
	}
	if bands == 3 && channels == 1 {
		// PIL's convert("L"): ITU-R 601-2 luma in 16-bit fixed point.
		for i := range iw * ih {
			p := pix[i*3 : i*3+3 : i*3+3]
			pix[i] = byte((uint32(p[0])*19595 + uint32(p[1])*38470 + uint32(p[2])*7471 + 0x8000) >> 16)
		}
		pix, bands = pix[:iw*ih], 1
	}
	// Every byte of the appended planes is written below.
	start := len(out)
	out = slices.Grow(out, channels*h*w)[:start+channels*h*w]
	px := out[start:]
	var small []byte
	if iw == w && ih == h {
		small = pix[:h*w*bands] // at its size already (a JPEG store's image): no copy
	} else {
		if cap(d.small) < h*w*bands {
			d.small = make([]byte, h*w*bands)
		}
		small = d.small[:h*w*bands]
		if bands == channels && d.rs.resizePlanar(px, small, pix, iw*bands, bands, iw, ih, w, h) {
			return out
		}
		d.rs.resize(small, pix, iw*bands, bands, iw, ih, w, h)
	}
	plane := h * w
	switch {
	case bands == 1:
		for c := range channels {
			copy(px[c*plane:(c+1)*plane], small)
		}
	default:
		r, g, b := px[:plane], px[plane:2*plane], px[2*plane:3*plane]
		for i := range plane {
			p := small[i*3 : i*3+3 : i*3+3]
			r[i], g[i], b[i] = p[0], p[1], p[2]
		}
	}
	return out
}

// packed lays img out as interleaved RGB (3 bands) or grey (1 band),
// dropping alpha as PIL's convert("RGB") does.
func packed(buf []byte, img image.Image) ([]byte, int) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	switch m := img.(type) {
	case *image.Gray:
		buf = grow(buf, w*h)
		for y := range h {
			copy(buf[y*w:(y+1)*w], m.Pix[y*m.Stride:y*m.Stride+w])
		}
		return buf, 1
	case *image.YCbCr:
		buf = grow(buf, w*h*3)
		for y := range h {
			for x := range w {
				yi := m.YOffset(b.Min.X+x, b.Min.Y+y)
				ci := m.COffset(b.Min.X+x, b.Min.Y+y)
				r, g, bl := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				o := buf[(y*w+x)*3 : (y*w+x)*3+3 : (y*w+x)*3+3]
				o[0], o[1], o[2] = r, g, bl
			}
		}
		return buf, 3
	case *image.NRGBA:
		buf = grow(buf, w*h*3)
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+4*w]
			for x := range w {
				o := buf[(y*w+x)*3 : (y*w+x)*3+3 : (y*w+x)*3+3]
				o[0], o[1], o[2] = row[4*x], row[4*x+1], row[4*x+2]
			}
		}
		return buf, 3
	case *image.RGBA:
		// Go's PNG decoder gives RGBA only for opaque images; a
		// translucent pixel is un-premultiplied below.
		buf = grow(buf, w*h*3)
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+4*w]
			for x := range w {
				o := buf[(y*w+x)*3 : (y*w+x)*3+3 : (y*w+x)*3+3]
				if a := row[4*x+3]; a != 255 {
					c := color.NRGBAModel.Convert(color.RGBA{row[4*x], row[4*x+1], row[4*x+2], a}).(color.NRGBA)
					o[0], o[1], o[2] = c.R, c.G, c.B
					continue
				}
				o[0], o[1], o[2] = row[4*x], row[4*x+1], row[4*x+2]
			}
		}
		return buf, 3
	}
	buf = grow(buf, w*h*3)
	for y := range h {
		for x := range w {
			c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
			o := buf[(y*w+x)*3 : (y*w+x)*3+3 : (y*w+x)*3+3]
			o[0], o[1], o[2] = c.R, c.G, c.B
		}
	}
	return buf, 3
}

func grow(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, n)
	}
	return buf[:n]
}

// draftScale is the reduction PIL's draft(mode, (2w, 2h)) picks for an
// iw x ih JPEG: the largest of 8, 4, 2 and 1 that keeps the image at least
// twice the asked size.
func draftScale(iw, ih, w, h int) int {
	s := min(iw/(2*w), ih/(2*h))
	for _, a := range []int{8, 4, 2} {
		if s >= a {
			return a
		}
	}
	return 1
}

// noTurbo is Backend in a build without libjpeg-turbo.
const noTurbo = "Go image/jpeg (portable; build with Debian's libturbojpeg0-dev for libjpeg-turbo)"

// LibjpegTurbo reports whether this build decodes JPEGs with
// libjpeg-turbo.
func LibjpegTurbo() bool { return backend != noTurbo }
