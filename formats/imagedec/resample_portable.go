//go:build !turbojpeg || !cgo

package imagedec

// The portable build resizes in Go only.

func nativeHorizontal(tmp, src []byte, stride, bands int, t *filterTaps, first, rows int) bool {
	return false
}

func nativeVertical(dst, src []byte, stride, width int, t *filterTaps, shift int) bool {
	return false
}

func nativeResizePlanar(planes, small, tmp, src []byte, stride, bands int, h, v *filterTaps, first, rows int) bool {
	return false
}

// resizeBackend names the resampler in use, for `gatepipe version`.
const resizeBackend = "Go"
