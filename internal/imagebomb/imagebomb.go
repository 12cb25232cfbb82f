// Package imagebomb writes hostile image files for tests: images that
// declare far more pixels than their bytes hold (decompression bombs), as
// a crawl of the web turns them up.
package imagebomb

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
)

// PNG returns a valid 8-bit greyscale PNG of w x h black pixels: a few
// hundred kilobytes that decode to w*h bytes (14,000 x 14,000: 196 MB).
func PNG(w, h int) []byte {
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, w+1) // filter byte 0, then w zero pixels
	for range h {
		zw.Write(row)
	}
	zw.Close()
	return png(w, h, idat.Bytes())
}

// DeclaredPNG returns a PNG whose header declares w x h pixels but whose
// data stops after a few rows: a file of a few kilobytes that asks a
// decoder for w*h*4 bytes before it finds out (100,000 x 100,000: 40 GB).
func DeclaredPNG(w, h int) []byte {
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, w+1)
	for range min(h, 8) {
		zw.Write(row)
	}
	zw.Flush()
	return png(w, h, idat.Bytes())
}

func png(w, h int, idat []byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 0 // 8-bit greyscale
	chunk(&b, "IHDR", ihdr)
	chunk(&b, "IDAT", idat)
	chunk(&b, "IEND", nil)
	return b.Bytes()
}

func chunk(b *bytes.Buffer, kind string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	b.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(kind))
	crc.Write(data)
	b.WriteString(kind)
	b.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	b.Write(n[:])
}

// JPEG returns a small JPEG whose frame header is patched to declare w x h
// pixels (each at most 65,535): a decoder that trusts it allocates the
// whole frame before it reads the scan.
func JPEG(w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, 16, 16))
	for i := range img.Pix {
		img.Pix[i] = color.Gray{Y: uint8(i)}.Y
	}
	var b bytes.Buffer
	jpeg.Encode(&b, img, nil)
	data := b.Bytes()
	// The baseline frame header: FF C0, length, precision, height, width.
	if i := bytes.Index(data, []byte{0xff, 0xc0}); i >= 0 && i+9 <= len(data) {
		binary.BigEndian.PutUint16(data[i+5:], uint16(h))
		binary.BigEndian.PutUint16(data[i+7:], uint16(w))
	}
	return data
}
