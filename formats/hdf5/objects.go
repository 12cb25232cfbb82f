package hdf5

// Object headers (version 1) and groups (symbol tables).

import (
	"bytes"
	"fmt"
)

// Header message types read here.
const (
	msgDataspace    = 0x0001
	msgDatatype     = 0x0003
	msgLink         = 0x0006
	msgLayout       = 0x0008
	msgFilters      = 0x000B
	msgContinuation = 0x0010
	msgSymbolTable  = 0x0011
	msgLinkInfo     = 0x0002
)

// message is one header message: its type and where its data lie.
type message struct {
	kind uint16
	off  uint64
	size int
}

// objectHeader holds the messages of one object that this package reads.
type objectHeader struct {
	messages []message
	// symbols is the group's symbol table message's offset (nil: not an
	// old-style group).
	symbols *symbolTable
}

type symbolTable struct{ btree, heap uint64 }

// maxMessages bounds the messages of one object (continuation blocks
// included), against loops in a damaged file.
const maxMessages = 1 << 16

// header reads the version 1 object header at off, following continuation
// blocks.
func (f *File) header(off uint64) (*objectHeader, error) {
	if off == undefined {
		return nil, f.errorf(off, "an undefined object address")
	}
	if r := f.at(off); string(r.take(4)) == "OHDR" {
		return nil, f.errorf(off, "a version 2 object header, which h5py writes for libver=\"latest\" and for groups made with track_order=True: not supported (write the file with h5py's defaults)")
	}
	r := f.at(off)
	version := r.u8()
	r.skip(1)
	count := int(r.u16())
	r.skip(4) // reference count
	size := r.u32()
	r.skip(4) // alignment of the first message
	if r.err != nil {
		return nil, r.err
	}
	if version != 1 {
		return nil, f.errorf(off, "object header version %d (want 1)", version)
	}
	h := &objectHeader{}
	type block struct{ off, size uint64 }
	blocks := []block{{r.off(), uint64(size)}}
	seen := map[uint64]bool{}
	for len(blocks) > 0 && len(h.messages) < count {
		b := blocks[0]
		blocks = blocks[1:]
		if seen[b.off] {
			return nil, f.errorf(b.off, "a continuation block is referenced twice")
		}
		seen[b.off] = true
		if b.off > uint64(len(f.data)) || b.size > uint64(len(f.data))-b.off {
			return nil, f.errorf(b.off, "a header block of %d bytes runs past the end of the file (%d bytes)", b.size, len(f.data))
		}
		m := f.at(b.off)
		end := b.off + b.size
		for m.off()+8 <= end && len(h.messages) < count {
			if len(h.messages) >= maxMessages {
				return nil, f.errorf(m.off(), "more than %d header messages", maxMessages)
			}
			kind := m.u16()
			msize := int(m.u16())
			m.skip(4) // flags, reserved
			start := m.off()
			if m.err != nil {
				return nil, m.err
			}
			if start+uint64(msize) > end {
				return nil, f.errorf(start-8, "a header message of %d bytes runs past its block", msize)
			}
			h.messages = append(h.messages, message{kind: kind, off: start, size: msize})
			switch kind {
			case msgContinuation:
				c := f.at(start)
				next, length := c.addr(), c.length()
				if c.err != nil {
					return nil, c.err
				}
				blocks = append(blocks, block{next, length})
			case msgSymbolTable:
				c := f.at(start)
				h.symbols = &symbolTable{btree: c.addr(), heap: c.addr()}
				if c.err != nil {
					return nil, c.err
				}
			case msgLink, msgLinkInfo:
				return nil, f.errorf(start, "a group stored as link messages, which h5py writes for libver=\"latest\" and for track_order=True: not supported (write the file with h5py's defaults)")
			}
			m.skip(msize)
		}
	}
	return h, nil
}

// find returns the first message of a kind.
func (h *objectHeader) find(kind uint16) (message, bool) {
	for _, m := range h.messages {
		if m.kind == kind {
			return m, true
		}
	}
	return message{}, false
}

// lookup finds a group member's object header address by name.
func (f *File) lookup(t *symbolTable, name string) (uint64, error) {
	found := uint64(undefined)
	err := f.eachSymbol(t, func(n string, obj uint64) bool {
		if n == name {
			found = obj
			return false
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	if found == undefined {
		return 0, fmt.Errorf("%s: no object %q", f.name, name)
	}
	return found, nil
}

// eachSymbol calls fn with each member of a group until fn returns false.
func (f *File) eachSymbol(t *symbolTable, fn func(name string, obj uint64) bool) error {
	if err := f.signatureAt(t.heap, "HEAP"); err != nil {
		return err
	}
	hr := f.at(t.heap + 8)
	heapSize := hr.length()
	hr.length() // free list
	heapData := hr.addr()
	if hr.err != nil {
		return hr.err
	}
	if heapData > uint64(len(f.data)) || heapSize > uint64(len(f.data))-heapData {
		return f.errorf(t.heap, "a local heap of %d bytes runs past the end of the file", heapSize)
	}
	heap := f.data[heapData : heapData+heapSize]
	nameAt := func(off uint64) (string, error) {
		if off >= uint64(len(heap)) {
			return "", f.errorf(t.heap, "a name at heap offset %d is past the heap (%d bytes)", off, len(heap))
		}
		s := heap[off:]
		if i := bytes.IndexByte(s, 0); i >= 0 {
			return string(s[:i]), nil
		}
		return "", f.errorf(heapData+off, "a name without its terminating zero")
	}
	err := f.walkBTree(t.btree, 0, 0, func(child uint64, _ []byte) error {
		if err := f.signatureAt(child, "SNOD"); err != nil {
			return err
		}
		r := f.at(child + 6)
		n := int(r.u16())
		for range n {
			nameOff := r.uint(f.offSize)
			obj := r.addr()
			r.skip(4 + 4 + 16) // cache type, reserved, scratch pad
			if r.err != nil {
				return r.err
			}
			name, err := nameAt(nameOff)
			if err != nil {
				return err
			}
			if !fn(name, obj) {
				return errStop
			}
		}
		return nil
	})
	if err == errStop {
		return nil
	}
	return err
}

// maxTreeDepth bounds B-tree recursion in a damaged file.
const maxTreeDepth = 32

// walkBTree visits the leaves of a version 1 B-tree of the given node type
// (0: group nodes, 1: raw data chunks with keyDims offsets per key),
// calling leaf with each child address and the key that precedes it.
func (f *File) walkBTree(off uint64, nodeType uint8, keyDims int, leaf func(child uint64, key []byte) error) error {
	keySize := f.lenSize
	if nodeType == 1 {
		keySize = 8 + 8*keyDims
	}
	var walk func(off uint64, depth int, seen map[uint64]bool) error
	walk = func(off uint64, depth int, seen map[uint64]bool) error {
		if depth > maxTreeDepth {
			return f.errorf(off, "a B-tree deeper than %d levels", maxTreeDepth)
		}
		if seen[off] {
			return f.errorf(off, "a B-tree node is reached twice")
		}
		seen[off] = true
		if err := f.signatureAt(off, "TREE"); err != nil {
			return err
		}
		r := f.at(off + 4)
		typ, level := r.u8(), r.u8()
		entries := int(r.u16())
		r.skip(2 * f.offSize) // siblings
		if r.err != nil {
			return r.err
		}
		if typ != nodeType {
			return f.errorf(off, "a B-tree node of type %d where type %d was expected", typ, nodeType)
		}
		for range entries {
			key := r.take(keySize)
			child := r.addr()
			if r.err != nil {
				return r.err
			}
			var err error
			if level > 0 {
				err = walk(child, depth+1, seen)
			} else {
				err = leaf(child, key)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return walk(off, 0, map[uint64]bool{})
}
