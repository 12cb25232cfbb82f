//go:build !turbojpeg || !cgo

package imagedec

const backend = noTurbo

// turbo is absent from this build: every JPEG goes through Go's decoder.
type turbo struct{}

func (turbo) decode(buf, _ []byte, _, _ int) ([]byte, int, int, int, bool) {
	return buf, 0, 0, 0, false
}

func (turbo) header([]byte) (int, int, bool) { return 0, 0, false }
