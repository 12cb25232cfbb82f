//go:build !turbojpeg || !cgo

package imagedec

const backend = noTurbo

// turbo is absent from this build: every JPEG goes through Go's decoder.
type turbo struct{}

func (turbo) decode(buf, _ []byte, _, _ int, _ int64) ([]byte, int, int, int, error) {
	return buf, 0, 0, 0, errNotTurbo
}

// turboEncoder is absent from this build: Go's encoder compresses.
type turboEncoder struct{}

func (turboEncoder) encode(dst, _ []byte, _, _, _, _ int) ([]byte, error) { return dst, errNotTurbo }
