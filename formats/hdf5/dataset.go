package hdf5

// Datasets: their dataspace, datatype, layout and filters, and reading
// their values.

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Datatype classes read here.
const (
	ClassInteger = 0
	ClassFloat   = 1
)

// Dataset is a dataset's description.
type Dataset struct {
	f    *File
	Path string
	// Shape is the dataset's dimensions (empty for a scalar).
	Shape []int
	// Class is ClassInteger or ClassFloat; Size the bytes per element.
	Class     int
	Size      int
	Signed    bool
	BigEndian bool
	layout    layout
	filters   []filter
}

// Len is the number of elements.
func (d *Dataset) Len() int {
	n := 1
	for _, s := range d.Shape {
		n *= s
	}
	return n
}

type layout struct {
	class   int // 0 compact, 1 contiguous, 2 chunked
	off     uint64
	size    uint64
	chunk   []int // chunk dimensions (chunked), without the element size
	btree   uint64
	keyDims int
}

type filter struct {
	id       uint16
	optional bool
	values   []uint32
}

// maxRank bounds a dataspace's rank (HDF5's own limit is 32).
const maxRank = 32

func (f *File) dataset(path string, obj uint64, h *objectHeader) (*Dataset, error) {
	d := &Dataset{f: f, Path: path}
	space, ok := h.find(msgDataspace)
	if !ok {
		return nil, f.errorf(obj, "%q is not a dataset (no dataspace)", path)
	}
	if err := d.readDataspace(space); err != nil {
		return nil, err
	}
	typ, ok := h.find(msgDatatype)
	if !ok {
		return nil, f.errorf(obj, "dataset %q has no datatype", path)
	}
	if err := d.readDatatype(typ); err != nil {
		return nil, err
	}
	lay, ok := h.find(msgLayout)
	if !ok {
		return nil, f.errorf(obj, "dataset %q has no layout", path)
	}
	if err := d.readLayout(lay); err != nil {
		return nil, err
	}
	if m, ok := h.find(msgFilters); ok {
		if err := d.readFilters(m); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func (d *Dataset) readDataspace(m message) error {
	f := d.f
	r := f.at(m.off)
	version, rank, flags := r.u8(), int(r.u8()), r.u8()
	switch version {
	case 1:
		r.skip(5)
	case 2:
		if typ := r.u8(); typ == 2 {
			rank = 0 // a null dataspace: no elements
		}
	default:
		return f.errorf(m.off, "dataspace version %d (want 1 or 2)", version)
	}
	if rank > maxRank {
		return f.errorf(m.off, "a dataspace of rank %d (at most %d)", rank, maxRank)
	}
	total := uint64(1)
	for range rank {
		n := r.length()
		if r.err != nil {
			return r.err
		}
		if n > math.MaxInt32 || (n > 0 && total > math.MaxInt64/n) {
			return f.errorf(m.off, "a dimension of %d elements", n)
		}
		total *= n
		d.Shape = append(d.Shape, int(n))
	}
	_ = flags // maximum dimensions are not needed to read
	return r.err
}

func (d *Dataset) readDatatype(m message) error {
	f := d.f
	r := f.at(m.off)
	b0, b1 := r.u8(), r.u8()
	r.skip(2)
	size := r.u32()
	if r.err != nil {
		return r.err
	}
	d.Class, d.Size = int(b0&0x0F), int(size)
	switch d.Class {
	case ClassInteger:
		if size != 1 && size != 2 && size != 4 && size != 8 {
			return f.errorf(m.off, "dataset %q: %d-byte integers are not supported", d.Path, size)
		}
		d.BigEndian, d.Signed = b1&1 != 0, b1&8 != 0
	case ClassFloat:
		if size != 4 && size != 8 {
			return f.errorf(m.off, "dataset %q: %d-byte floats are not supported", d.Path, size)
		}
		if b1&0x40 != 0 {
			return f.errorf(m.off, "dataset %q: VAX byte order is not supported", d.Path)
		}
		d.BigEndian = b1&1 != 0
	default:
		return f.errorf(m.off, "dataset %q: datatype class %d is not a number (only integers and floats are read)", d.Path, d.Class)
	}
	return nil
}

func (d *Dataset) readLayout(m message) error {
	f := d.f
	r := f.at(m.off)
	version := r.u8()
	l := &d.layout
	switch version {
	case 3:
		l.class = int(r.u8())
		switch l.class {
		case 0:
			l.size = uint64(r.u16())
			l.off = r.off()
		case 1:
			l.off, l.size = r.addr(), r.length()
		case 2:
			dims := int(r.u8())
			l.btree = r.addr()
			if dims < 1 || dims > maxRank+1 {
				return f.errorf(m.off, "dataset %q: a chunk layout of %d dimensions", d.Path, dims)
			}
			for range dims {
				l.chunk = append(l.chunk, int(r.u32()))
			}
			l.keyDims = dims
		default:
			return f.errorf(m.off, "dataset %q: layout class %d", d.Path, l.class)
		}
	case 1, 2:
		dims := int(r.u8())
		l.class = int(r.u8())
		r.skip(5)
		if dims < 1 || dims > maxRank+1 {
			return f.errorf(m.off, "dataset %q: a layout of %d dimensions", d.Path, dims)
		}
		if l.class != 0 {
			l.off = r.addr()
		}
		for range dims {
			l.chunk = append(l.chunk, int(r.u32()))
		}
		switch l.class {
		case 0:
			l.size = uint64(r.u32())
			l.off = r.off()
		case 1:
			l.size = uint64(d.Len()) * uint64(d.Size)
		case 2:
			l.btree, l.keyDims = l.off, dims
		}
	default:
		return f.errorf(m.off, "dataset %q: layout version %d (files written with libver=\"latest\" are not supported)", d.Path, version)
	}
	if r.err != nil {
		return r.err
	}
	if l.class == 2 {
		if len(l.chunk) != len(d.Shape)+1 {
			return f.errorf(m.off, "dataset %q: chunks of %d dimensions for a rank-%d dataset", d.Path, len(l.chunk)-1, len(d.Shape))
		}
		l.chunk = l.chunk[:len(d.Shape)]
		for _, c := range l.chunk {
			if c < 1 {
				return f.errorf(m.off, "dataset %q: a chunk dimension of %d", d.Path, c)
			}
		}
	}
	return nil
}

// Filters read here.
const (
	filterDeflate    = 1
	filterShuffle    = 2
	filterFletcher32 = 3
)

func (d *Dataset) readFilters(m message) error {
	f := d.f
	r := f.at(m.off)
	version, n := r.u8(), int(r.u8())
	if version == 1 {
		r.skip(6)
	} else if version != 2 {
		return f.errorf(m.off, "filter pipeline version %d", version)
	}
	for range n {
		id := r.u16()
		nameLen := 0
		if version == 1 || id >= 256 {
			nameLen = int(r.u16())
		}
		flags, nvalues := r.u16(), int(r.u16())
		if version == 1 {
			nameLen = (nameLen + 7) &^ 7
		}
		r.skip(nameLen)
		ft := filter{id: id, optional: flags&1 != 0}
		for range nvalues {
			ft.values = append(ft.values, r.u32())
		}
		if version == 1 && nvalues%2 == 1 {
			r.skip(4)
		}
		if r.err != nil {
			return r.err
		}
		switch id {
		case filterDeflate, filterShuffle, filterFletcher32:
		default:
			return f.errorf(m.off, "dataset %q: filter %d is not supported (deflate, shuffle and Fletcher-32 are)", d.Path, id)
		}
		d.filters = append(d.filters, ft)
	}
	return nil
}

// A dataset decodes to at most maxInflation bytes for each byte of its
// file (deflate's limit is 1032:1), plus inflationSlack for small files
// whose datasets were partly never written (the fill value costs no
// bytes): a few kilobytes with doctored dimensions would otherwise make
// Raw allocate and decode up to MaxBytes.
const (
	maxInflation   = 1032
	inflationSlack = 16 << 20
)

// Raw returns the dataset's elements as stored, in C order, in the file's
// byte order.
func (d *Dataset) Raw() ([]byte, error) {
	f := d.f
	limit := f.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	want := uint64(d.Len()) * uint64(d.Size)
	if want > uint64(limit) {
		return nil, fmt.Errorf("%s: dataset %q would take %d bytes, more than the limit of %d", f.name, d.Path, want, limit)
	}
	if most := maxInflation*uint64(len(f.data)) + inflationSlack; want > most {
		return nil, fmt.Errorf("%s: dataset %q of shape %v would take %d bytes, more than a %d-byte file can hold even deflated (%d:1 at most): its dimensions are damaged, or most of it was never written",
			f.name, d.Path, d.Shape, want, len(f.data), maxInflation)
	}
	l := d.layout
	switch l.class {
	case 0, 1:
		if l.class == 1 && l.off == undefined {
			return make([]byte, want), nil // never written: the fill value
		}
		if l.size < want {
			return nil, f.errorf(l.off, "dataset %q holds %d bytes, its shape needs %d", d.Path, l.size, want)
		}
		r := f.at(l.off)
		b := r.take(int(want))
		if r.err != nil {
			return nil, fmt.Errorf("dataset %q: %w", d.Path, r.err)
		}
		return bytes.Clone(b), nil
	default:
		return d.readChunks(want)
	}
}

// readChunks assembles a chunked dataset; chunks never written read as
// zeros (the default fill value).
func (d *Dataset) readChunks(want uint64) ([]byte, error) {
	f := d.f
	out := make([]byte, want)
	rank := len(d.Shape)
	chunkLen := d.Size
	for _, c := range d.layout.chunk {
		chunkLen *= c
	}
	if want == 0 {
		return out, nil
	}
	// Each chunk of the grid is stored once: a B-tree listing one twice
	// (damaged, or made to repeat the work) is refused.
	placed := map[string]bool{}
	err := f.walkBTree(d.layout.btree, 1, d.layout.keyDims, func(child uint64, key []byte) error {
		size := binary.LittleEndian.Uint32(key[0:4])
		mask := binary.LittleEndian.Uint32(key[4:8])
		offs := make([]int, rank)
		for k := range rank {
			o := binary.LittleEndian.Uint64(key[8+8*k:])
			if o >= uint64(d.Shape[k]) || o%uint64(d.layout.chunk[k]) != 0 {
				return f.errorf(child, "dataset %q: a chunk at offset %d of dimension %d (size %d)", d.Path, o, k, d.Shape[k])
			}
			offs[k] = int(o)
		}
		at := string(key[8 : 8+8*rank])
		if placed[at] {
			return f.errorf(child, "dataset %q: the chunk at %v is listed twice", d.Path, offs)
		}
		placed[at] = true
		r := f.at(child)
		raw := r.take(int(size))
		if r.err != nil {
			return fmt.Errorf("dataset %q: chunk: %w", d.Path, r.err)
		}
		data, err := d.unfilter(raw, mask, chunkLen, child)
		if err != nil {
			return err
		}
		d.place(out, data, offs)
		return nil
	})
	return out, err
}

// unfilter undoes the filters the chunk went through (those its mask does
// not skip), in reverse order.
func (d *Dataset) unfilter(raw []byte, mask uint32, chunkLen int, at uint64) ([]byte, error) {
	data := raw
	for i := len(d.filters) - 1; i >= 0; i-- {
		if mask&(1<<i) != 0 {
			continue
		}
		switch ft := d.filters[i]; ft.id {
		case filterDeflate:
			zr, err := zlib.NewReader(bytes.NewReader(data))
			if err != nil {
				return nil, d.f.errorf(at, "dataset %q: a deflated chunk: %v", d.Path, err)
			}
			// The chunk's own size bounds what inflating may write.
			out, err := io.ReadAll(io.LimitReader(zr, int64(chunkLen)+1))
			if err != nil {
				return nil, d.f.errorf(at, "dataset %q: a deflated chunk: %v", d.Path, err)
			}
			data = out
		case filterShuffle:
			size := d.Size
			if len(ft.values) > 0 {
				size = int(ft.values[0])
			}
			data = unshuffle(data, size)
		case filterFletcher32:
			if len(data) < 4 {
				return nil, d.f.errorf(at, "dataset %q: a chunk too short for its checksum", d.Path)
			}
			data = data[:len(data)-4]
		}
	}
	if len(data) != chunkLen {
		return nil, d.f.errorf(at, "dataset %q: a chunk of %d bytes, want %d", d.Path, len(data), chunkLen)
	}
	return data, nil
}

// unshuffle undoes HDF5's byte shuffle: byte j of every element was
// stored together.
func unshuffle(data []byte, size int) []byte {
	if size <= 1 || len(data) < size {
		return data
	}
	n := len(data) / size
	out := make([]byte, len(data))
	for j := range size {
		for i := range n {
			out[i*size+j] = data[j*n+i]
		}
	}
	copy(out[n*size:], data[n*size:]) // a tail that is not a whole element
	return out
}

// place copies a chunk's elements (chunk dimensions, C order) that fall
// inside the dataset into out.
func (d *Dataset) place(out, chunk []byte, offs []int) {
	rank := len(d.Shape)
	cd := d.layout.chunk
	if rank == 0 {
		copy(out, chunk)
		return
	}
	last := rank - 1
	run := min(cd[last], d.Shape[last]-offs[last]) * d.Size
	idx := make([]int, rank) // position within the chunk, last dimension 0
	for {
		src, dst := 0, 0
		inside := true
		for k := range rank {
			src = src*cd[k] + idx[k]
			g := offs[k] + idx[k]
			if g >= d.Shape[k] {
				inside = false
			}
			dst = dst*d.Shape[k] + g
		}
		if inside {
			copy(out[dst*d.Size:dst*d.Size+run], chunk[src*d.Size:])
		}
		k := last - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < cd[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// Uint8s reads an unsigned 8-bit dataset.
func (d *Dataset) Uint8s() ([]byte, error) {
	if d.Class != ClassInteger || d.Size != 1 || d.Signed {
		return nil, fmt.Errorf("%s: dataset %q holds %s, not unsigned bytes", d.f.name, d.Path, d.TypeName())
	}
	return d.Raw()
}

// Float32s reads a numeric dataset as float32 (integers and float64
// converted).
func (d *Dataset) Float32s() ([]float32, error) {
	raw, err := d.Raw()
	if err != nil {
		return nil, err
	}
	var order binary.ByteOrder = binary.LittleEndian
	if d.BigEndian {
		order = binary.BigEndian
	}
	out := make([]float32, d.Len())
	for i := range out {
		b := raw[i*d.Size : (i+1)*d.Size]
		switch {
		case d.Class == ClassFloat && d.Size == 4:
			out[i] = math.Float32frombits(order.Uint32(b))
		case d.Class == ClassFloat:
			out[i] = float32(math.Float64frombits(order.Uint64(b)))
		default:
			out[i] = float32(d.integer(b, order))
		}
	}
	return out, nil
}

// integer decodes one integer element.
func (d *Dataset) integer(b []byte, order binary.ByteOrder) float64 {
	var u uint64
	switch d.Size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(order.Uint16(b))
	case 4:
		u = uint64(order.Uint32(b))
	default:
		u = order.Uint64(b)
	}
	if !d.Signed {
		return float64(u)
	}
	shift := 64 - 8*d.Size
	return float64(int64(u<<shift) >> shift)
}

// TypeName describes the element type ("uint8", "float32", ">f8"...).
func (d *Dataset) TypeName() string {
	name := "float"
	if d.Class == ClassInteger {
		name = "int"
		if !d.Signed {
			name = "uint"
		}
	}
	name = fmt.Sprintf("%s%d", name, 8*d.Size)
	if d.BigEndian {
		name += " (big-endian)"
	}
	return name
}
