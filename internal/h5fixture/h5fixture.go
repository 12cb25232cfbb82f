// Package h5fixture writes small HDF5 files in the layout h5py gives by
// default (superblock 0, a root symbol table, version 1 object headers,
// contiguous datasets), for tests that need many files such as
// fast-depth's NYU Depth v2 ("rgb" [3, H, W] uint8, "depth" [H, W]
// float32). Its output is checked against h5py where Debian's
// python3-h5py is installed (TestH5pyReadsTheFixture).
package h5fixture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// Dataset is one array to write: U8 or F32 holds its values in C order.
type Dataset struct {
	Name  string
	Shape []int
	U8    []byte
	F32   []float32
}

const (
	leafK     = 4 // symbol table node capacity 2K (the library default)
	internalK = 16
	entrySize = 40 // a symbol table entry with 8-byte addresses
)

var undefined = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Write returns an HDF5 file holding the datasets in its root group (at
// most 8: one symbol table node).
func Write(datasets []Dataset) ([]byte, error) {
	if len(datasets) == 0 || len(datasets) > 2*leafK {
		return nil, fmt.Errorf("h5fixture writes 1 to %d datasets, not %d", 2*leafK, len(datasets))
	}
	ds := append([]Dataset(nil), datasets...)
	sort.Slice(ds, func(a, b int) bool { return ds[a].Name < ds[b].Name })
	l, err := planLayout(ds)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	l.writeSuperblock(&b)
	l.writeGroup(&b, len(ds))
	for _, h := range l.headers {
		b.Write(h)
	}
	for _, d := range ds {
		b.Write(payload(d))
	}
	if b.Len() != l.end {
		return nil, fmt.Errorf("h5fixture: wrote %d bytes, planned %d (internal error)", b.Len(), l.end)
	}
	return b.Bytes(), nil
}

// layout is where everything goes in the file: the superblock (96 bytes),
// the root group's object header, B-tree, local heap and symbol table
// node, then each dataset's object header, then their data.
type layout struct {
	heap                              []byte // the local heap's data
	nameOff                           []int  // each name's offset in heap
	rootHdr, btree, btreeSize         int
	heapHdr, heapData, snod, snodSize int
	headers                           [][]byte // the datasets' object headers
	hdrAt                             []int    // and where they go
	end                               int
}

func planLayout(ds []Dataset) (*layout, error) {
	l := &layout{heap: make([]byte, 8), nameOff: make([]int, len(ds))}
	// The local heap's data: "" at 0, then each name, 8-byte aligned.
	for i, d := range ds {
		l.nameOff[i] = len(l.heap)
		l.heap = append(l.heap, d.Name...)
		l.heap = append(l.heap, 0)
		for len(l.heap)%8 != 0 {
			l.heap = append(l.heap, 0)
		}
	}
	const super = 96
	l.rootHdr = super
	rootHdrSize := 16 + 8 + 16
	l.btree = l.rootHdr + rootHdrSize
	l.btreeSize = 4 + 4 + 16 + (2*internalK+1)*8 + 2*internalK*8
	l.heapHdr = l.btree + l.btreeSize
	l.heapData = l.heapHdr + 32
	l.snod = l.heapData + len(l.heap)
	l.snodSize = 8 + 2*leafK*entrySize
	next := l.snod + l.snodSize
	l.headers = make([][]byte, len(ds))
	l.hdrAt = make([]int, len(ds))
	for i, d := range ds {
		l.hdrAt[i] = next
		h, err := datasetHeader(d, 0) // sized first, addressed below
		if err != nil {
			return nil, err
		}
		next += len(h)
		l.headers[i] = h
	}
	for i, d := range ds {
		h, _ := datasetHeader(d, uint64(next))
		l.headers[i] = h
		next += len(payload(d))
	}
	l.end = next
	return l, nil
}

// writeSuperblock writes the version 0 superblock and the root group's
// object header (one symbol table message).
func (l *layout) writeSuperblock(b *bytes.Buffer) {
	le := func(v any) { binary.Write(b, binary.LittleEndian, v) }
	b.WriteString("\x89HDF\r\n\x1a\n")
	b.Write([]byte{0, 0, 0, 0, 0, 8, 8, 0})
	le(uint16(leafK))
	le(uint16(internalK))
	le(uint32(0))
	le(uint64(0)) // base address
	b.Write(undefined)
	le(uint64(l.end)) // end of file
	b.Write(undefined)
	le(uint64(0)) // root entry: link name offset
	le(uint64(l.rootHdr))
	le(uint32(1)) // cache type: the scratch pad holds the symbol table
	le(uint32(0))
	le(uint64(l.btree))
	le(uint64(l.heapHdr))
	le(uint8(1))
	le(uint8(0))
	le(uint16(1))
	le(uint32(1))
	le(uint32(8 + 16))
	le(uint32(0))
	le(uint16(0x11))
	le(uint16(16))
	le(uint32(0))
	le(uint64(l.btree))
	le(uint64(l.heapHdr))
}

// writeGroup writes the root group's B-tree (one leaf pointing at one
// symbol node), local heap and symbol table node of n datasets.
func (l *layout) writeGroup(b *bytes.Buffer, n int) {
	le := func(v any) { binary.Write(b, binary.LittleEndian, v) }
	start := b.Len()
	b.WriteString("TREE")
	b.Write([]byte{0, 0})
	le(uint16(1))
	b.Write(undefined)
	b.Write(undefined)
	le(uint64(0))
	le(uint64(l.snod))
	le(uint64(l.nameOff[n-1]))
	b.Write(make([]byte, l.btreeSize-(b.Len()-start)))
	b.WriteString("HEAP")
	b.Write([]byte{0, 0, 0, 0})
	le(uint64(len(l.heap)))
	le(uint64(1)) // no free block (H5HL_FREE_NULL)
	le(uint64(l.heapData))
	b.Write(l.heap)
	start = b.Len()
	b.WriteString("SNOD")
	b.Write([]byte{1, 0})
	le(uint16(n))
	for i := 0; i < n; i++ {
		le(uint64(l.nameOff[i]))
		le(uint64(l.hdrAt[i]))
		le(uint32(0))
		le(uint32(0))
		b.Write(make([]byte, 16))
	}
	b.Write(make([]byte, l.snodSize-(b.Len()-start)))
}

// datasetHeader is a dataset's version 1 object header: dataspace,
// datatype and a contiguous layout at data.
func datasetHeader(d Dataset, data uint64) ([]byte, error) {
	n := 1
	for _, s := range d.Shape {
		n *= s
	}
	if (d.U8 == nil) == (d.F32 == nil) || (d.U8 != nil && len(d.U8) != n) || (d.F32 != nil && len(d.F32) != n) {
		return nil, fmt.Errorf("dataset %q: give U8 or F32 values, %d of them", d.Name, n)
	}
	var msgs bytes.Buffer
	le := func(v any) { binary.Write(&msgs, binary.LittleEndian, v) }
	msg := func(kind uint16, body []byte) {
		for len(body)%8 != 0 {
			body = append(body, 0)
		}
		le(kind)
		le(uint16(len(body)))
		le(uint32(0))
		msgs.Write(body)
	}
	var space bytes.Buffer
	space.Write([]byte{1, byte(len(d.Shape)), 0, 0, 0, 0, 0, 0})
	for _, s := range d.Shape {
		binary.Write(&space, binary.LittleEndian, uint64(s))
	}
	msg(0x0001, space.Bytes())
	if d.U8 != nil {
		msg(0x0003, []byte{0x10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0})
	} else {
		msg(0x0003, []byte{0x11, 0x20, 0x1f, 0, 4, 0, 0, 0, 0, 0, 32, 0, 23, 8, 0, 23, 127, 0, 0, 0})
	}
	var lay bytes.Buffer
	lay.Write([]byte{3, 1})
	binary.Write(&lay, binary.LittleEndian, data)
	binary.Write(&lay, binary.LittleEndian, uint64(len(payload(d))))
	msg(0x0008, lay.Bytes())
	var h bytes.Buffer
	for _, v := range []any{uint8(1), uint8(0), uint16(3), uint32(1), uint32(msgs.Len()), uint32(0)} {
		binary.Write(&h, binary.LittleEndian, v)
	}
	h.Write(msgs.Bytes())
	return h.Bytes(), nil
}

// payload is a dataset's values as stored.
func payload(d Dataset) []byte {
	if d.U8 != nil {
		return d.U8
	}
	out := make([]byte, 4*len(d.F32))
	for i, v := range d.F32 {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}
