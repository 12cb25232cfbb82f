package imagedec

import (
	"bytes"
	"errors"
	"fmt"
	"image"
)

// DefaultMaxPixels is the most pixels (width x height) an image may
// declare before it is refused without being decoded: PIL's bound for a
// DecompressionBombError (twice Image.MAX_IMAGE_PIXELS, 2 x 89,478,485).
// A PNG of a few kilobytes can declare 100,000 x 100,000 pixels, 40 GB
// once decoded.
const DefaultMaxPixels int64 = 2 * 89_478_485

// ErrBadImage marks an image that cannot be decoded (damaged data, an
// unknown format) or may not be (more pixels than the limit). A dataset
// node refuses it with the file's name, or skips and counts it
// (on_bad_example = "skip").
var ErrBadImage = errors.New("bad image")

// BadImageError is an image that cannot or may not be decoded.
type BadImageError struct{ Err error }

func (e *BadImageError) Error() string { return e.Err.Error() }

// Unwrap gives the decoder's error.
func (e *BadImageError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBadImage) true.
func (e *BadImageError) Is(target error) bool { return target == ErrBadImage }

// errNotTurbo is libjpeg-turbo declining an image (absent from the build,
// CMYK, damage): Go's decoder decides instead.
var errNotTurbo = errors.New("not decoded by libjpeg-turbo")

func badImage(err error) error { return &BadImageError{Err: err} }

// TooLargeError is an image that declares more pixels than the limit.
type TooLargeError struct {
	Width, Height int
	Limit         int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("image declares %d x %d = %d pixels, more than the limit of %d (a decompression bomb, or raise max_image_pixels if the image is trusted)",
		e.Width, e.Height, int64(e.Width)*int64(e.Height), e.Limit)
}

// CheckSize refuses a declared size of more than limit pixels (limit <= 0:
// DefaultMaxPixels), or a negative one, before anything is allocated.
func CheckSize(width, height int, limit int64) error {
	if limit <= 0 {
		limit = DefaultMaxPixels
	}
	if width < 0 || height < 0 {
		return badImage(fmt.Errorf("image declares a negative size %d x %d", width, height))
	}
	// Both are below 2^31 from every decoder, so the product fits.
	if int64(width)*int64(height) > limit {
		return badImage(&TooLargeError{Width: width, Height: height, Limit: limit})
	}
	return nil
}

// DecodeLimited decodes an image (JPEG, PNG or GIF) after checking its
// header's size against limit pixels (0: DefaultMaxPixels), so that a
// decompression bomb is refused before its pixels are allocated. Errors
// are BadImageErrors.
func DecodeLimited(data []byte, limit int64) (image.Image, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, badImage(err)
	}
	if err := CheckSize(cfg.Width, cfg.Height, limit); err != nil {
		return nil, err
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, badImage(err)
	}
	return img, nil
}
