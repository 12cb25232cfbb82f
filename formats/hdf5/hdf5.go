// Package hdf5 reads numeric datasets from HDF5 files as h5py and the HDF5
// library write them by default (the "earliest" file format): superblock
// version 0 or 1, version 1 object headers with continuation blocks, groups
// held in symbol tables (a version 1 B-tree of symbol nodes over a local
// heap), and datasets stored compact, contiguous or chunked (a version 1
// B-tree of chunks) through the deflate, shuffle and Fletcher-32 filters.
// That is the layout of fast-depth's NYU Depth v2 files, which
// sayakpaul/nyu_depth_v2 shards into tars. Files written with
// libver="latest" (superblock 2 or 3, "OHDR" object headers, link
// messages) are refused with an error that says so.
//
// The whole file is held in memory and every address, size and count is
// checked against it before use, so a damaged file is an error naming the
// file and the byte offset, never a panic or an allocation its bytes do not
// justify (Options.MaxBytes bounds what a dataset may decompress to).
package hdf5

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// DefaultMaxBytes bounds a dataset's decoded size unless a File says
// otherwise: 1 GiB.
const DefaultMaxBytes = 1 << 30

// File is a parsed HDF5 file.
type File struct {
	data []byte
	name string
	// offSize and lenSize are the sizes of addresses and lengths.
	offSize, lenSize int
	base             uint64
	root             uint64 // the root group's object header
	// MaxBytes bounds what one dataset may decode to (DefaultMaxBytes
	// when 0).
	MaxBytes int
}

var signature = []byte("\x89HDF\r\n\x1a\n")

// Parse reads the superblock of data, an HDF5 file named name (used in
// errors).
func Parse(data []byte, name string) (*File, error) {
	f := &File{data: data, name: name}
	at := -1
	for off := 0; off+len(signature) <= len(data); off = max(512, off*2) {
		if bytes.Equal(data[off:off+len(signature)], signature) {
			at = off
			break
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("%s: not an HDF5 file (no signature)", name)
	}
	r := f.at(uint64(at + len(signature)))
	version := r.u8()
	if version > 1 {
		return nil, f.errorf(uint64(at+8), "superblock version %d: files written with libver=\"latest\" are not supported (write them with h5py's default libver)", version)
	}
	r.skip(4) // free-space, root entry, reserved, shared header versions
	f.offSize, f.lenSize = int(r.u8()), int(r.u8())
	if r.err == nil && (!validSize(f.offSize) || !validSize(f.lenSize)) {
		return nil, f.errorf(uint64(at+13), "address and length sizes %d and %d (want 2, 4 or 8)", f.offSize, f.lenSize)
	}
	r.skip(1 + 2 + 2 + 4) // reserved, group K values, consistency flags
	if version == 1 {
		r.skip(4) // indexed storage K, reserved
	}
	baseAt := r.off()
	base := r.uint(f.offSize)
	if r.err == nil && base != 0 && base != uint64(at) {
		return nil, f.errorf(baseAt, "base address %d: only files whose addresses start at the superblock are supported", base)
	}
	f.base = uint64(at)
	r.skip(3 * f.offSize) // free-space, end-of-file, driver info addresses
	r.skip(f.offSize)     // the root entry's link name offset
	f.root = r.addr()
	if r.err != nil {
		return nil, r.err
	}
	return f, nil
}

func validSize(n int) bool { return n == 2 || n == 4 || n == 8 }

// Dataset finds the dataset at path ("depth", "/nested/inner/rgb") and
// reads its description (not its values).
func (f *File) Dataset(path string) (*Dataset, error) {
	obj := f.root
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, name := range parts {
		h, err := f.header(obj)
		if err != nil {
			return nil, err
		}
		if h.symbols == nil {
			return nil, f.errorf(obj, "%q is not a group", strings.Join(parts[:i], "/"))
		}
		if obj, err = f.lookup(h.symbols, name); err != nil {
			return nil, err
		}
	}
	h, err := f.header(obj)
	if err != nil {
		return nil, err
	}
	return f.dataset(path, obj, h)
}

// Names lists the root group's members, sorted as the file stores them.
func (f *File) Names() ([]string, error) {
	h, err := f.header(f.root)
	if err != nil {
		return nil, err
	}
	if h.symbols == nil {
		return nil, f.errorf(f.root, "the root object is not a group")
	}
	var names []string
	err = f.eachSymbol(h.symbols, func(name string, _ uint64) bool {
		names = append(names, name)
		return true
	})
	return names, err
}

// errorf is an error naming the file and the byte offset.
func (f *File) errorf(off uint64, format string, args ...any) error {
	return fmt.Errorf("%s: offset %d: %s", f.name, off, fmt.Sprintf(format, args...))
}

// reader reads little-endian fields from the file, remembering the first
// read past its end.
type reader struct {
	f   *File
	pos uint64
	err error
}

func (f *File) at(off uint64) *reader { return &reader{f: f, pos: off} }

func (r *reader) off() uint64 { return r.pos }

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || r.pos > uint64(len(r.f.data)) || uint64(n) > uint64(len(r.f.data))-r.pos {
		r.err = r.f.errorf(r.pos, "%d bytes needed, the file ends at %d", n, len(r.f.data))
		return nil
	}
	b := r.f.data[r.pos : r.pos+uint64(n)]
	r.pos += uint64(n)
	return b
}

func (r *reader) skip(n int) { r.take(n) }

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// uint reads an n-byte unsigned integer (n is 2, 4 or 8).
func (r *reader) uint(n int) uint64 {
	b := r.take(n)
	if b == nil {
		return 0
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// undefined is the address of nothing.
const undefined uint64 = math.MaxUint64

// addr reads an address, relative to the base (undefined stays so).
func (r *reader) addr() uint64 {
	v := r.uint(r.f.offSize)
	if r.f.offSize < 8 && v == 1<<(8*r.f.offSize)-1 {
		return undefined
	}
	if v == undefined {
		return v
	}
	return v + r.f.base
}

func (r *reader) length() uint64 { return r.uint(r.f.lenSize) }

// signatureAt checks a 4-byte structure signature.
func (f *File) signatureAt(off uint64, want string) error {
	r := f.at(off)
	got := r.take(4)
	if r.err != nil {
		return r.err
	}
	if string(got) != want {
		return f.errorf(off, "want a %s structure, found %q", want, got)
	}
	return nil
}

var errStop = errors.New("stop")
