// Package idx reads the IDX format of the MNIST family (MNIST,
// Fashion-MNIST, KMNIST): a magic number giving the element type and rank,
// big-endian dimension sizes, then the data.
package idx

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Array is a parsed IDX file, with elements converted to float64 only on
// request. Unsigned bytes (the common case) are kept as bytes.
type Array struct {
	Dims []int
	// Type is the IDX element type code (0x08 ubyte, 0x09 byte, 0x0B
	// short, 0x0C int, 0x0D float, 0x0E double).
	Type  byte
	Bytes []byte // raw big-endian data
}

var typeSize = map[byte]int{0x08: 1, 0x09: 1, 0x0B: 2, 0x0C: 4, 0x0D: 4, 0x0E: 8}

// maxElements bounds what a header may claim (1<<31 elements).
const maxElements = 1 << 31

// Read parses an IDX stream; name is used in errors, which give the byte
// offset where the data stopped making sense.
func Read(r io.Reader, name string) (*Array, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var magic [4]byte
	if n, err := io.ReadFull(br, magic[:]); err != nil {
		return nil, fmt.Errorf("%s: byte %d: truncated IDX header", name, n)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("%s: byte 0: not an IDX file (magic %02x%02x%02x%02x)", name, magic[0], magic[1], magic[2], magic[3])
	}
	size, ok := typeSize[magic[2]]
	if !ok {
		return nil, fmt.Errorf("%s: byte 2: unknown IDX element type 0x%02x", name, magic[2])
	}
	rank := int(magic[3])
	if rank == 0 {
		return nil, fmt.Errorf("%s: byte 3: IDX rank is 0", name)
	}
	a := &Array{Type: magic[2], Dims: make([]int, rank)}
	total := 1
	for i := range a.Dims {
		var d [4]byte
		if _, err := io.ReadFull(br, d[:]); err != nil {
			return nil, fmt.Errorf("%s: byte %d: truncated IDX dimensions", name, 4+4*i)
		}
		v := int(binary.BigEndian.Uint32(d[:]))
		if v < 0 || (v > 0 && total > maxElements/v) {
			return nil, fmt.Errorf("%s: byte %d: IDX dimension %d is too large", name, 4+4*i, v)
		}
		a.Dims[i] = v
		total *= v
	}
	header := 4 + 4*rank
	want := total * size
	a.Bytes = make([]byte, 0, min(want, 1<<26))
	buf := make([]byte, 1<<16)
	for len(a.Bytes) < want {
		chunk := buf[:min(len(buf), want-len(a.Bytes))]
		n, err := io.ReadFull(br, chunk)
		a.Bytes = append(a.Bytes, chunk[:n]...)
		if err != nil {
			return nil, fmt.Errorf("%s: byte %d: truncated IDX data: header promises %d bytes of data, file ends after %d", name, header+len(a.Bytes), want, len(a.Bytes))
		}
	}
	if n, _ := br.Read(buf[:1]); n > 0 {
		return nil, fmt.Errorf("%s: byte %d: unexpected data after the %d elements the header declares", name, header+want, total)
	}
	return a, nil
}

// Len returns the number of items (the first dimension).
func (a *Array) Len() int { return a.Dims[0] }

// ItemSize returns the number of elements per item.
func (a *Array) ItemSize() int {
	n := 1
	for _, d := range a.Dims[1:] {
		n *= d
	}
	return n
}

// Float64 returns element i converted to float64.
func (a *Array) Float64(i int) float64 {
	b := a.Bytes
	switch a.Type {
	case 0x08:
		return float64(b[i])
	case 0x09:
		return float64(int8(b[i]))
	case 0x0B:
		return float64(int16(binary.BigEndian.Uint16(b[2*i:])))
	case 0x0C:
		return float64(int32(binary.BigEndian.Uint32(b[4*i:])))
	case 0x0D:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b[4*i:])))
	case 0x0E:
		return math.Float64frombits(binary.BigEndian.Uint64(b[8*i:]))
	}
	return 0
}
