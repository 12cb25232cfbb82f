// Package safetensors reads and writes the safetensors format: an 8-byte
// little-endian header length, a JSON header mapping tensor names to dtype,
// shape and byte offsets (plus optional string metadata), then the raw
// little-endian tensor data. It is the format PyTorch users export
// state_dicts in, and gatepipe stores datasets and checkpoints in it.
package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
)

// DType names an element type as safetensors spells it.
type DType string

// Supported element types.
const (
	U8 DType = "U8"
	// U16 holds segmentation masks of more than 256 classes.
	U16 DType = "U16"
	I64 DType = "I64"
	F32 DType = "F32"
	F64 DType = "F64"
	I32 DType = "I32"
	// F16 is IEEE half precision; BF16 bfloat16 (float32's top 16 bits).
	// Both are converted to float32 on load.
	F16  DType = "F16"
	BF16 DType = "BF16"
)

// Size returns the element size in bytes.
func (d DType) Size() int {
	switch d {
	case U8:
		return 1
	case F16, BF16, U16:
		return 2
	case I32, F32:
		return 4
	case I64, F64:
		return 8
	}
	return 0
}

// Tensor is one named tensor.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte // little-endian
}

// NumElements returns the product of the shape.
func (t *Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// F32Tensor builds a float32 tensor.
func F32Tensor(name string, shape []int, v []float32) Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Tensor{Name: name, DType: F32, Shape: shape, Data: b}
}

// I64Tensor builds an int64 tensor.
func I64Tensor(name string, shape []int, v []int64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return Tensor{Name: name, DType: I64, Shape: shape, Data: b}
}

// I32Tensor builds an int32 tensor.
func I32Tensor(name string, shape []int, v []int32) Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return Tensor{Name: name, DType: I32, Shape: shape, Data: b}
}

// F64Tensor builds a float64 tensor.
func F64Tensor(name string, shape []int, v []float64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return Tensor{Name: name, DType: F64, Shape: shape, Data: b}
}

// Float32s decodes a F32 tensor (or converts F16/BF16/U8/F64/I64/I32) to
// float32.
func (t *Tensor) Float32s() []float32 {
	n := t.NumElements()
	out := make([]float32, n)
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:])))
		}
	case F16:
		for i := range out {
			out[i] = HalfToFloat32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[2*i:])) << 16)
		}
	case U8:
		for i := range out {
			out[i] = float32(t.Data[i])
		}
	case I64:
		for i := range out {
			out[i] = float32(int64(binary.LittleEndian.Uint64(t.Data[8*i:])))
		}
	case I32:
		for i := range out {
			out[i] = float32(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
	}
	return out
}

// HalfToFloat32 converts an IEEE 754 half-precision value (exactly: every
// half, subnormals, infinities and NaN included, is a float32).
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac x 2^-24
		v := float32(frac) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// Int64s decodes an integer tensor (I64, or the compact U8, U16 and I32
// that class indices and masks are stored in); nil for another type.
func (t *Tensor) Int64s() []int64 {
	if !t.DType.Integer() {
		return nil
	}
	return AppendInt64s(nil, t.DType, t.Data)
}

// Integer reports whether d holds integers that Int64s reads.
func (d DType) Integer() bool {
	switch d {
	case U8, U16, I32, I64:
		return true
	}
	return false
}

// AppendInt64s appends the integers of data, little-endian values of the
// integer type d, to dst.
func AppendInt64s(dst []int64, d DType, data []byte) []int64 {
	n := len(data) / max(d.Size(), 1)
	dst = slices.Grow(dst, n)
	switch d {
	case U8:
		for _, v := range data {
			dst = append(dst, int64(v))
		}
	case U16:
		for i := range n {
			dst = append(dst, int64(binary.LittleEndian.Uint16(data[2*i:])))
		}
	case I32:
		for i := range n {
			dst = append(dst, int64(int32(binary.LittleEndian.Uint32(data[4*i:]))))
		}
	case I64:
		for i := range n {
			dst = append(dst, int64(binary.LittleEndian.Uint64(data[8*i:])))
		}
	}
	return dst
}

// LabelType is the smallest dtype that holds class indices 0..classes-1:
// U8 up to 256 classes, U16 up to 65,536, I64 beyond.
func LabelType(classes int) DType {
	switch {
	case classes <= 1<<8:
		return U8
	case classes <= 1<<16:
		return U16
	}
	return I64
}

// PutLabels writes labels as little-endian values of the integer type d
// (LabelType's) into a new slice; a label d cannot hold is an error.
func PutLabels(d DType, labels []int64) ([]byte, error) {
	b := make([]byte, len(labels)*d.Size())
	limit := int64(math.MaxInt64)
	switch d {
	case U8:
		limit = math.MaxUint8
	case U16:
		limit = math.MaxUint16
	case I32:
		limit = math.MaxInt32
	case I64:
	default:
		return nil, fmt.Errorf("safetensors: labels cannot be stored as %s", d)
	}
	for i, v := range labels {
		if v < 0 && d != I64 && d != I32 || v > limit {
			return nil, fmt.Errorf("safetensors: label %d does not fit %s", v, d)
		}
		switch d {
		case U8:
			b[i] = byte(v)
		case U16:
			binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
		case I32:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(v)))
		default:
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
	}
	return b, nil
}

// Int32s decodes an I32 tensor (nil for another type).
func (t *Tensor) Int32s() []int32 {
	if t.DType != I32 {
		return nil
	}
	out := make([]int32, t.NumElements())
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out
}

type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// Write writes tensors (in name order) and metadata to w.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	sorted := append([]Tensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, t := range sorted {
		want, err := ByteSize(t.DType, t.Shape)
		if err != nil {
			return fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
		}
		if want != int64(len(t.Data)) {
			return fmt.Errorf("safetensors: tensor %q has %d bytes, shape %v of %s needs %d", t.Name, len(t.Data), t.Shape, t.DType, want)
		}
		header[t.Name] = headerEntry{DType: t.DType, Shape: append([]int{}, t.Shape...), DataOffsets: [2]int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 { // the format aligns data to 8 bytes with spaces
		hb = append(hb, ' ')
	}
	bw := bufio.NewWriter(w)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hb)))
	bw.Write(lenBuf[:])
	bw.Write(hb)
	for _, t := range sorted {
		// In writePieces, as WriteRows writes (a large write passes
		// through bufio as one call).
		for p := 0; p < len(t.Data); p += writePiece {
			if _, err := bw.Write(t.Data[p:min(len(t.Data), p+writePiece)]); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// WriteFile writes a safetensors file.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, tensors, metadata); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// File is a parsed safetensors file.
type File struct {
	Tensors  map[string]*Tensor
	Metadata map[string]string
}

// maxHeader bounds the JSON header (100 MB, as the reference does).
const maxHeader = 100 << 20

// Parse parses a whole safetensors file held in memory; name is used in
// error messages. As the reference library does, it refuses a file whose
// tensors do not tile the data exactly (see checkTiling).
func Parse(data []byte, name string) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("%s: byte 0: file too short for a safetensors header (%d bytes)", name, len(data))
	}
	n := binary.LittleEndian.Uint64(data[:8])
	if n > maxHeader || n > uint64(len(data)-8) {
		return nil, fmt.Errorf("%s: byte 0: header length %d exceeds file size %d", name, n, len(data))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &raw); err != nil {
		return nil, fmt.Errorf("%s: byte 8: invalid header JSON: %w", name, err)
	}
	base := 8 + int64(n)
	body := data[base:]
	f := &File{Tensors: map[string]*Tensor{}}
	spans := make([]span, 0, len(raw))
	for key, msg := range raw {
		if key == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("%s: byte 8: invalid __metadata__: %w", name, err)
			}
			continue
		}
		h, err := parseEntry(key, msg, base, int64(len(body)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		b, e := h.DataOffsets[0], h.DataOffsets[1]
		spans = append(spans, span{name: key, begin: b, end: e})
		f.Tensors[key] = &Tensor{Name: key, DType: h.DType, Shape: h.Shape, Data: body[b:e]}
	}
	if err := checkTiling(spans, base, int64(len(body))); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// parseEntry decodes the header entry of tensor key and checks it alone:
// a known dtype, a valid shape, offsets inside the bodyLen data bytes
// (which start at byte base of the file) and a byte length that the
// shape and dtype need.
func parseEntry(key string, msg json.RawMessage, base, bodyLen int64) (headerEntry, error) {
	var h headerEntry
	if err := json.Unmarshal(msg, &h); err != nil {
		return h, fmt.Errorf("byte 8: tensor %q: %w", key, err)
	}
	if h.DType.Size() == 0 {
		return h, fmt.Errorf("byte 8: tensor %q has unsupported dtype %q", key, h.DType)
	}
	want, err := ByteSize(h.DType, h.Shape)
	if err != nil {
		return h, fmt.Errorf("byte 8: tensor %q: %w", key, err)
	}
	b, e := h.DataOffsets[0], h.DataOffsets[1]
	if b < 0 || e < b || e > bodyLen {
		return h, fmt.Errorf("byte %d: tensor %q data offsets [%d, %d] outside the %d data bytes", base, key, b, e, bodyLen)
	}
	if e-b != want {
		return h, fmt.Errorf("byte %d: tensor %q has %d data bytes, shape %v of %s needs %d", base+b, key, e-b, h.Shape, h.DType, want)
	}
	return h, nil
}

// ByteSize returns the bytes a tensor of dtype d and shape takes: the
// element size times the product of the dimensions. A negative dimension
// is an error, and so is a count that overflows 64 bits (no file holds it).
func ByteSize(d DType, shape []int) (int64, error) {
	n := int64(d.Size())
	overflow := false
	for _, dim := range shape {
		if dim < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if dim > 0 && n > math.MaxInt64/int64(dim) {
			overflow = true // keep looking for a negative dimension
		}
		n *= int64(dim)
	}
	if overflow {
		return 0, fmt.Errorf("shape %v of %s is larger than any file (overflows 64-bit byte count)", shape, d)
	}
	return n, nil
}

// span is the bytes [begin, end) of a tensor's data.
type span struct {
	name       string
	begin, end int64
}

// checkTiling checks that spans, the tensors' data in a body of bodyLen
// bytes that starts at byte base of the file, tile it exactly as the
// reference safetensors library demands: in offset order the first
// begins at 0, each begins where the one before ends, and the last ends
// at the end of the file. Overlapping tensors would alias each other's
// bytes (a bias written through the weight); bytes of no tensor are
// damage or a hidden payload.
func checkTiling(spans []span, base, bodyLen int64) error {
	sort.Slice(spans, func(i, j int) bool {
		a, b := spans[i], spans[j]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.name < b.name
	})
	var at int64
	for i, s := range spans {
		switch {
		case s.begin < at:
			p := spans[i-1]
			return fmt.Errorf("byte %d: tensor %q [%d, %d) overlaps tensor %q [%d, %d); safetensors tensors may not share bytes", base+s.begin, s.name, s.begin, s.end, p.name, p.begin, p.end)
		case s.begin > at && i == 0:
			return fmt.Errorf("byte %d: data bytes [0, %d) before tensor %q [%d, %d) belong to no tensor; safetensors data starts with the first tensor", base, s.begin, s.name, s.begin, s.end)
		case s.begin > at:
			p := spans[i-1]
			return fmt.Errorf("byte %d: data bytes [%d, %d) between tensor %q [%d, %d) and tensor %q [%d, %d) belong to no tensor", base+at, at, s.begin, p.name, p.begin, p.end, s.name, s.begin, s.end)
		}
		at = s.end
	}
	if at != bodyLen {
		after := "the header"
		if len(spans) > 0 {
			p := spans[len(spans)-1]
			after = fmt.Sprintf("the last tensor %q [%d, %d)", p.name, p.begin, p.end)
		}
		return fmt.Errorf("byte %d: data bytes [%d, %d) after %s belong to no tensor; a safetensors file ends with its last tensor", base+at, at, bodyLen, after)
	}
	return nil
}

// ReadFile reads and parses a safetensors file.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}
