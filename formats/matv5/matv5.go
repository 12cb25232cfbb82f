// Package matv5 reads numeric matrices from MATLAB's Level 5 MAT-files
// (MATLAB 5 to 7.x: the 128-byte header, then tagged data elements, each
// miMATRIX either as is or inside an miCOMPRESSED (zlib) element), as
// PASCAL-Context's per-image LabelMap files are written. Only real,
// non-sparse numeric arrays are read; every size is checked against the
// bytes that hold it, so a damaged file is an error, never a large
// allocation.
package matv5

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Data types of data elements.
const (
	miINT8       = 1
	miUINT8      = 2
	miINT16      = 3
	miUINT16     = 4
	miINT32      = 5
	miUINT32     = 6
	miSINGLE     = 7
	miDOUBLE     = 9
	miINT64      = 12
	miUINT64     = 13
	miMATRIX     = 14
	miCOMPRESSED = 15
)

// Matrix is a two-dimensional numeric array, row-major (MAT-files store
// column-major; Read transposes).
type Matrix struct {
	Name       string
	Rows, Cols int
	Data       []float64
}

// At returns the element at row r, column c.
func (m *Matrix) At(r, c int) float64 { return m.Data[r*m.Cols+c] }

// MaxElements bounds a matrix's element count (4096 x 4096: far above any
// image mask).
const MaxElements = 1 << 24

// Read returns the two-dimensional numeric variable called name from the
// MAT-file data (the file's bytes; name for errors is file). Other
// variables are skipped.
func Read(data []byte, file, name string) (*Matrix, error) {
	if len(data) < 128 {
		return nil, fmt.Errorf("%s: %d bytes, shorter than a MAT-file header", file, len(data))
	}
	var order binary.ByteOrder
	switch string(data[126:128]) {
	case "IM":
		order = binary.LittleEndian
	case "MI":
		order = binary.BigEndian
	default:
		return nil, fmt.Errorf("%s: not a Level 5 MAT-file (endian indicator %q)", file, data[126:128])
	}
	off := 128
	for off < len(data) {
		typ, _, body, next, err := element(data, off, order)
		if err != nil {
			return nil, fmt.Errorf("%s at byte %d: %w", file, off, err)
		}
		if typ == miCOMPRESSED {
			zr, err := zlib.NewReader(bytes.NewReader(body))
			if err != nil {
				return nil, fmt.Errorf("%s at byte %d: compressed element: %w", file, off, err)
			}
			// The inflated element cannot exceed its matrix's bound by much.
			inflated, err := io.ReadAll(io.LimitReader(zr, 8*MaxElements+1<<16))
			if err != nil {
				return nil, fmt.Errorf("%s at byte %d: compressed element: %w", file, off, err)
			}
			if typ, _, body, _, err = element(inflated, 0, order); err != nil {
				return nil, fmt.Errorf("%s at byte %d (inflated): %w", file, off, err)
			}
		}
		if typ == miMATRIX {
			m, err := matrix(body, order)
			if err != nil {
				return nil, fmt.Errorf("%s at byte %d: %w", file, off, err)
			}
			if m != nil && m.Name == name {
				return m, nil
			}
		}
		off = next
	}
	return nil, fmt.Errorf("%s: no numeric variable %q", file, name)
}

// element reads the data element at off: its type, size, body and the
// offset of the next element (bodies are padded to 8 bytes; a small data
// element packs up to 4 bytes into its tag).
func element(data []byte, off int, order binary.ByteOrder) (typ, size uint32, body []byte, next int, err error) {
	if off+8 > len(data) {
		return 0, 0, nil, 0, errors.New("truncated element tag")
	}
	first := order.Uint32(data[off:])
	if small := first >> 16; small != 0 { // small data element format
		typ, size = first&0xffff, small
		if size > 4 {
			return 0, 0, nil, 0, fmt.Errorf("small data element of %d bytes", size)
		}
		return typ, size, data[off+4 : off+4+int(size)], off + 8, nil
	}
	typ, size = first, order.Uint32(data[off+4:])
	start := off + 8
	if uint64(size) > uint64(len(data)-start) {
		return 0, 0, nil, 0, fmt.Errorf("element of %d bytes in the %d left", size, len(data)-start)
	}
	end := start + int(size)
	next = end
	if typ != miCOMPRESSED {
		next = start + (int(size)+7)/8*8
	}
	return typ, size, data[start:end], min(next, len(data)), nil
}

// matrix decodes an miMATRIX body: a numeric two-dimensional array, or
// nil for any other class (cells, structs, chars, sparse).
func matrix(body []byte, order binary.ByteOrder) (*Matrix, error) {
	off := 0
	sub := func() (uint32, []byte, error) {
		typ, _, b, next, err := element(body, off, order)
		if err != nil {
			return 0, nil, err
		}
		off = next
		return typ, b, nil
	}
	_, flags, err := sub()
	if err != nil || len(flags) < 8 {
		return nil, fmt.Errorf("array flags: %v", errOr(err, "short"))
	}
	class := order.Uint32(flags) & 0xff
	complexFlag := order.Uint32(flags)&0x0800 != 0
	if class < 6 || class > 15 || complexFlag { // 6..15: double .. uint64
		return nil, nil
	}
	dtyp, dims, err := sub()
	if err != nil || dtyp != miINT32 || len(dims) != 8 {
		return nil, fmt.Errorf("dimensions: %v (want two)", errOr(err, fmt.Sprintf("%d bytes of type %d", len(dims), dtyp)))
	}
	rows, cols := int(int32(order.Uint32(dims))), int(int32(order.Uint32(dims[4:])))
	if rows < 0 || cols < 0 || (cols > 0 && rows > MaxElements/cols) {
		return nil, fmt.Errorf("dimensions %dx%d", rows, cols)
	}
	_, nameBytes, err := sub()
	if err != nil {
		return nil, fmt.Errorf("array name: %w", err)
	}
	ptyp, real, err := sub()
	if err != nil {
		return nil, fmt.Errorf("real part: %w", err)
	}
	values, err := decodeNumbers(real, ptyp, order)
	if err != nil {
		return nil, err
	}
	if len(values) != rows*cols {
		return nil, fmt.Errorf("%d values for a %dx%d array", len(values), rows, cols)
	}
	m := &Matrix{Name: string(nameBytes), Rows: rows, Cols: cols, Data: make([]float64, rows*cols)}
	for c := range cols { // column-major to row-major
		for r := range rows {
			m.Data[r*cols+c] = values[c*rows+r]
		}
	}
	return m, nil
}

func decodeNumbers(b []byte, typ uint32, order binary.ByteOrder) ([]float64, error) {
	size := map[uint32]int{miINT8: 1, miUINT8: 1, miINT16: 2, miUINT16: 2, miINT32: 4, miUINT32: 4, miSINGLE: 4, miDOUBLE: 8, miINT64: 8, miUINT64: 8}[typ]
	if size == 0 || len(b)%size != 0 {
		return nil, fmt.Errorf("real part: %d bytes of data type %d", len(b), typ)
	}
	out := make([]float64, len(b)/size)
	for i := range out {
		p := b[i*size:]
		switch typ {
		case miINT8:
			out[i] = float64(int8(p[0]))
		case miUINT8:
			out[i] = float64(p[0])
		case miINT16:
			out[i] = float64(int16(order.Uint16(p)))
		case miUINT16:
			out[i] = float64(order.Uint16(p))
		case miINT32:
			out[i] = float64(int32(order.Uint32(p)))
		case miUINT32:
			out[i] = float64(order.Uint32(p))
		case miSINGLE:
			out[i] = float64(math.Float32frombits(order.Uint32(p)))
		case miDOUBLE:
			out[i] = math.Float64frombits(order.Uint64(p))
		case miINT64:
			out[i] = float64(int64(order.Uint64(p)))
		case miUINT64:
			out[i] = float64(order.Uint64(p))
		}
	}
	return out, nil
}

func errOr(err error, what string) string {
	if err != nil {
		return err.Error()
	}
	return what
}

// EncodeUint16 writes a Level 5 MAT-file (little-endian) holding one
// uint16 matrix (row-major data, rows x cols) called name, compressed
// with zlib as MATLAB 7 saves by default when compress is set: what
// PASCAL-Context's LabelMap files hold, for fixtures and tools.
func EncodeUint16(name string, rows, cols int, data []uint16, compress bool) []byte {
	le := binary.LittleEndian
	var m bytes.Buffer
	tag := func(b *bytes.Buffer, typ uint32, n int) {
		var t [8]byte
		le.PutUint32(t[:], typ)
		le.PutUint32(t[4:], uint32(n))
		b.Write(t[:])
	}
	pad := func(b *bytes.Buffer, n int) { b.Write(make([]byte, (8-n%8)%8)) }
	var body bytes.Buffer
	tag(&body, miUINT32, 8)
	var flags [8]byte
	le.PutUint32(flags[:], 11) // mxUINT16_CLASS
	body.Write(flags[:])
	tag(&body, miINT32, 8)
	var dims [8]byte
	le.PutUint32(dims[:], uint32(rows))
	le.PutUint32(dims[4:], uint32(cols))
	body.Write(dims[:])
	tag(&body, miINT8, len(name))
	body.WriteString(name)
	pad(&body, len(name))
	tag(&body, miUINT16, 2*len(data))
	for c := range cols {
		for r := range rows {
			var v [2]byte
			le.PutUint16(v[:], data[r*cols+c])
			body.Write(v[:])
		}
	}
	pad(&body, 2*len(data))
	tag(&m, miMATRIX, body.Len())
	m.Write(body.Bytes())
	header := make([]byte, 128)
	copy(header, "MATLAB 5.0 MAT-file, written by gatepipe")
	for i := len("MATLAB 5.0 MAT-file, written by gatepipe"); i < 116; i++ {
		header[i] = ' '
	}
	le.PutUint16(header[124:], 0x0100)
	copy(header[126:], "IM")
	out := bytes.NewBuffer(header)
	if !compress {
		out.Write(m.Bytes())
		return out.Bytes()
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(m.Bytes())
	zw.Close()
	tag(out, miCOMPRESSED, z.Len())
	out.Write(z.Bytes())
	return out.Bytes()
}
