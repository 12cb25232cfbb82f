//go:build turbojpeg && cgo

package imagedec

/*
#cgo CFLAGS: -O3
#include "resample.h"
*/
import "C"

import "unsafe"

// The native build runs the resize's two passes in C (resample.h): the
// same integer sums as the Go passes, with AVX2 for both passes (SSE4.1
// for RGB rows without it) where the processor has them.

// nativeHorizontal scales rows [first, first+rows) of src into tmp with
// t's uniform weights.
func nativeHorizontal(tmp, src []byte, stride, bands int, t *filterTaps, first, rows int) bool {
	if len(tmp) == 0 || len(src) == 0 || t.n == 0 {
		return false
	}
	outW := len(t.ufirst)
	if len(tmp) < rows*outW*bands || len(src) < (first+rows-1)*stride+int(t.ufirst[outW-1]+int32(t.n))*bands {
		return false
	}
	// The source's length goes as a number: a Go pointer just past an
	// object's end confuses the garbage collector.
	C.gp_horizontal((*C.uint8_t)(unsafe.Pointer(&tmp[0])), (*C.uint8_t)(unsafe.Pointer(&src[first*stride])),
		C.long(len(src)-first*stride), C.long(stride), C.int(bands), C.int(rows),
		(*C.int32_t)(unsafe.Pointer(&t.ufirst[0])), (*C.uint32_t)(unsafe.Pointer(&t.uw[0])), C.int(t.n), C.int(outW))
	return true
}

// nativeVertical scales the columns of src (its first row being input
// row shift) into dst with t's uniform weights.
func nativeVertical(dst, src []byte, stride, width int, t *filterTaps, shift int) bool {
	outH := len(t.ufirst)
	if len(dst) == 0 || len(src) == 0 || t.n == 0 || len(dst) < outH*width {
		return false
	}
	_, last := t.rowsRead()
	if len(src) < (last-shift-1)*stride+width {
		return false
	}
	C.gp_vertical((*C.uint8_t)(unsafe.Pointer(&dst[0])), (*C.uint8_t)(unsafe.Pointer(&src[0])), C.long(stride), C.int(width),
		C.int(shift), (*C.int32_t)(unsafe.Pointer(&t.ufirst[0])), (*C.uint32_t)(unsafe.Pointer(&t.uw[0])), C.int(t.n), C.int(outH))
	return true
}

// nativeResizePlanar runs both passes and the split into channel-major
// planes in one call: rows [first, first+rows) of src through tmp (rows x
// outW x bands) and small (outH x outW x bands, interleaved) into planes
// (bands planes of outH x outW).
func nativeResizePlanar(planes, small, tmp, src []byte, stride, bands int, h, v *filterTaps, first, rows int) bool {
	outW, outH := len(h.ufirst), len(v.ufirst)
	if h.n == 0 || v.n == 0 || len(src) == 0 || len(tmp) < rows*outW*bands || len(small) < outH*outW*bands || len(planes) < outH*outW*bands {
		return false
	}
	if len(src) < (first+rows-1)*stride+int(h.ufirst[outW-1]+int32(h.n))*bands {
		return false
	}
	if _, last := v.rowsRead(); last-first > rows {
		return false
	}
	C.gp_resize_planar((*C.uint8_t)(unsafe.Pointer(&planes[0])), (*C.uint8_t)(unsafe.Pointer(&small[0])),
		(*C.uint8_t)(unsafe.Pointer(&tmp[0])), (*C.uint8_t)(unsafe.Pointer(&src[0])), C.long(len(src)), C.long(stride),
		C.int(bands), C.int(first), C.int(rows),
		(*C.int32_t)(unsafe.Pointer(&h.ufirst[0])), (*C.uint32_t)(unsafe.Pointer(&h.uw[0])), C.int(h.n), C.int(outW),
		(*C.int32_t)(unsafe.Pointer(&v.ufirst[0])), (*C.uint32_t)(unsafe.Pointer(&v.uw[0])), C.int(v.n), C.int(outH))
	return true
}

// resizeBackend names the resampler in use, for `gatepipe version`.
var resizeBackend = C.GoString(C.gp_resample_backend())
