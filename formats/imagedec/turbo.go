//go:build turbojpeg && cgo

package imagedec

/*
#cgo LDFLAGS: -lturbojpeg
#include <turbojpeg.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

const backend = "libjpeg-turbo (TurboJPEG API)"

// turbo is a libjpeg-turbo decompressor, made on first use and destroyed
// when its decoder is collected.
type turbo struct {
	h *handle
}

type handle struct{ tj C.tjhandle }

// init makes the handle on first use; false when libjpeg-turbo cannot.
func (t *turbo) init() bool {
	if t.h == nil {
		tj := C.tjInitDecompress()
		if tj == nil {
			return false
		}
		t.h = &handle{tj: tj}
		runtime.AddCleanup(t.h, func(tj C.tjhandle) { C.tjDestroy(tj) }, tj)
	}
	return true
}

// decode decodes a JPEG into buf as interleaved RGB (grey JPEGs as one
// band), at the draft scale for a w x h result. A JPEG whose header
// declares more than limit pixels is refused (CheckSize) before anything
// is allocated: libjpeg-turbo reads headers Go's parser refuses
// (arithmetic coding), so its header decides. errNotTurbo says that
// libjpeg-turbo cannot or will not decode it (CMYK, damage, even a
// warning): Go's decoder then decides.
func (t *turbo) decode(buf, data []byte, w, h int, limit int64) (out []byte, bands, iw, ih int, err error) {
	if !t.init() {
		return buf, 0, 0, 0, errNotTurbo
	}
	var width, height, subsamp, colorspace C.int
	src := (*C.uchar)(unsafe.Pointer(&data[0]))
	if C.tjDecompressHeader3(t.h.tj, src, C.ulong(len(data)), &width, &height, &subsamp, &colorspace) != 0 {
		return buf, 0, 0, 0, errNotTurbo
	}
	if err := CheckSize(int(width), int(height), limit); err != nil {
		return buf, 0, 0, 0, err
	}
	pf, bands := C.int(C.TJPF_RGB), 3
	switch colorspace {
	case C.TJCS_GRAY:
		pf, bands = C.TJPF_GRAY, 1
	case C.TJCS_CMYK, C.TJCS_YCCK:
		return buf, 0, 0, 0, errNotTurbo
	}
	a := draftScale(int(width), int(height), w, h)
	iw, ih = (int(width)+a-1)/a, (int(height)+a-1)/a
	if iw <= 0 || ih <= 0 || iw*ih > 1<<28 {
		return buf, 0, 0, 0, errNotTurbo
	}
	buf = grow(buf, iw*ih*bands)
	dst := (*C.uchar)(unsafe.Pointer(&buf[0]))
	if C.tjDecompress2(t.h.tj, src, C.ulong(len(data)), dst, C.int(iw), C.int(iw*bands), C.int(ih), pf, 0) != 0 {
		return buf, 0, 0, 0, errNotTurbo
	}
	runtime.KeepAlive(data)
	return buf, bands, iw, ih, nil
}

// turboEncoder is a libjpeg-turbo compressor, made on first use.
type turboEncoder struct {
	h *handle
}

// encode compresses interleaved pixels (bands 1 or 3) at quality, 4:2:0
// for colour as PIL saves by default; errNotTurbo when libjpeg-turbo
// cannot.
func (t *turboEncoder) encode(dst, pix []byte, bands, w, h, quality int) ([]byte, error) {
	if t.h == nil {
		tj := C.tjInitCompress()
		if tj == nil {
			return dst, errNotTurbo
		}
		t.h = &handle{tj: tj}
		runtime.AddCleanup(t.h, func(tj C.tjhandle) { C.tjDestroy(tj) }, tj)
	}
	pf, samp := C.int(C.TJPF_RGB), C.int(C.TJSAMP_420)
	if bands == 1 {
		pf, samp = C.TJPF_GRAY, C.TJSAMP_GRAY
	}
	var out *C.uchar
	var size C.ulong
	if C.tjCompress2(t.h.tj, (*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), C.int(w*bands), C.int(h), pf, &out, &size, samp, C.int(quality), 0) != 0 {
		if out != nil {
			C.tjFree(out)
		}
		return dst, errNotTurbo
	}
	dst = append(dst, unsafe.Slice((*byte)(unsafe.Pointer(out)), int(size))...)
	C.tjFree(out)
	runtime.KeepAlive(pix)
	return dst, nil
}
