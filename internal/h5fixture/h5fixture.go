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
	// The local heap's data: "" at 0, then each name, 8-byte aligned.
	heap := make([]byte, 8)
	nameOff := make([]int, len(ds))
	for i, d := range ds {
		nameOff[i] = len(heap)
		heap = append(heap, d.Name...)
		heap = append(heap, 0)
		for len(heap)%8 != 0 {
			heap = append(heap, 0)
		}
	}
	// Where everything goes.
	const super = 96
	rootHdr := super
	rootHdrSize := 16 + 8 + 16
	btree := rootHdr + rootHdrSize
	btreeSize := 4 + 4 + 16 + (2*internalK+1)*8 + 2*internalK*8
	heapHdr := btree + btreeSize
	heapData := heapHdr + 32
	snod := heapData + len(heap)
	snodSize := 8 + 2*leafK*entrySize
	next := snod + snodSize
	headers := make([][]byte, len(ds))
	hdrAt := make([]int, len(ds))
	for i, d := range ds {
		hdrAt[i] = next
		h, err := datasetHeader(d, 0) // sized first, addressed below
		if err != nil {
			return nil, err
		}
		next += len(h)
		headers[i] = h
	}
	for i, d := range ds {
		h, _ := datasetHeader(d, uint64(next))
		headers[i] = h
		next += len(payload(d))
	}

	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	// Superblock, version 0.
	b.WriteString("\x89HDF\r\n\x1a\n")
	b.Write([]byte{0, 0, 0, 0, 0, 8, 8, 0})
	le(uint16(leafK))
	le(uint16(internalK))
	le(uint32(0))
	le(uint64(0)) // base address
	b.Write(undefined)
	le(uint64(next)) // end of file
	b.Write(undefined)
	le(uint64(0)) // root entry: link name offset
	le(uint64(rootHdr))
	le(uint32(1)) // cache type: the scratch pad holds the symbol table
	le(uint32(0))
	le(uint64(btree))
	le(uint64(heapHdr))
	// Root group object header: one symbol table message.
	le(uint8(1))
	le(uint8(0))
	le(uint16(1))
	le(uint32(1))
	le(uint32(8 + 16))
	le(uint32(0))
	le(uint16(0x11))
	le(uint16(16))
	le(uint32(0))
	le(uint64(btree))
	le(uint64(heapHdr))
	// The group's B-tree: one leaf pointing at one symbol node.
	start := b.Len()
	b.WriteString("TREE")
	b.Write([]byte{0, 0})
	le(uint16(1))
	b.Write(undefined)
	b.Write(undefined)
	le(uint64(0))
	le(uint64(snod))
	le(uint64(nameOff[len(ds)-1]))
	b.Write(make([]byte, btreeSize-(b.Len()-start)))
	// Local heap.
	b.WriteString("HEAP")
	b.Write([]byte{0, 0, 0, 0})
	le(uint64(len(heap)))
	le(uint64(1)) // no free block (H5HL_FREE_NULL)
	le(uint64(heapData))
	b.Write(heap)
	// Symbol table node.
	start = b.Len()
	b.WriteString("SNOD")
	b.Write([]byte{1, 0})
	le(uint16(len(ds)))
	for i := range ds {
		le(uint64(nameOff[i]))
		le(uint64(hdrAt[i]))
		le(uint32(0))
		le(uint32(0))
		b.Write(make([]byte, 16))
	}
	b.Write(make([]byte, snodSize-(b.Len()-start)))
	for _, h := range headers {
		b.Write(h)
	}
	for _, d := range ds {
		b.Write(payload(d))
	}
	if b.Len() != next {
		return nil, fmt.Errorf("h5fixture: wrote %d bytes, planned %d (internal error)", b.Len(), next)
	}
	return b.Bytes(), nil
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
