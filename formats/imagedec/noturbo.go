//go:build !turbojpeg || !cgo

package imagedec

const backend = noTurbo

// turbo is absent from this build: every JPEG goes through Go's decoder.
type turbo struct{}

func (turbo) decode(buf, _ []byte, _, _ int, _ int64) ([]byte, int, int, int, error) {
	return buf, 0, 0, 0, errNotTurbo
}
