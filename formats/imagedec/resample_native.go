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

// resizeBackend names the resampler in use, for `gatepipe version`.
var resizeBackend = C.GoString(C.gp_resample_backend())
