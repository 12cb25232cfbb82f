package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/klauspost/compress/gzip"
)

// OpenTarGzFS lists the gzip-compressed tarball src (named name in
// errors) by reading it whole once, with the checks and limits extraction
// applies (names, entries, bytes, and the ratio of the bytes its files
// hold to the archive's size), and returns its tree without writing a
// file. A compressed tarball cannot be read at an offset: Open and
// ReadFile decompress from its start to the file, which suits a few small
// files; a reader of many reads them in the archive's order with a
// Stream. An error wrapping ErrNotInPlace means the archive is sound but
// must be extracted.
func OpenTarGzFS(src, name string, lim Limits) (*Tree, error) {
	f, info, err := openArchive(src)
	if err != nil {
		return nil, err
	}
	t := &Tree{f: f, name: name, mod: info.ModTime(), size: info.Size(), gz: true}
	if err := t.indexGz(info.Size(), lim.withDefaults()); err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// gzTar opens a fresh decompression of the tree's archive.
func (t *Tree) gzTar() (*tar.Reader, *countingReader, error) {
	zr, err := gzip.NewReader(io.NewSectionReader(t.f, 0, t.size))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: byte 0: not gzip data: %w", t.name, err)
	}
	cr := &countingReader{r: zr}
	return tar.NewReader(cr), cr, nil
}

// indexGz reads every header, decompressing the files' data to skip it,
// and builds the sorted entries; a file's off is its header's ordinal in
// the archive. The bytes its files hold are held to the ratio to the
// archive's size as extraction holds them.
func (t *Tree) indexGz(size int64, lim Limits) error {
	x := &extractor{name: t.name, lim: lim, archiveSize: size}
	tr, cr, err := t.gzTar()
	if err != nil {
		return err
	}
	return t.indexHeaders(tr, x, func(err error) error {
		return fmt.Errorf("%s: byte %d (decompressed): malformed tar.gz: %w", t.name, cr.n, err)
	}, func(hdr *tar.Header, ord int64) (int64, error) {
		if x.written > ratioSlack && float64(x.written) > x.lim.MaxRatio*float64(max(size, 1)) {
			return 0, fmt.Errorf("%s: %d bytes in the files of a %d-byte archive, more than %g times its size: %w (a decompression bomb? raise max_extract_ratio if this archive is trusted)",
				x.name, x.written, size, x.lim.MaxRatio, ErrLimit)
		}
		return ord, nil
	})
}

// Position is where name's file lies in the archive (its offset in a
// tarball, its ordinal in a compressed one): reading files in the order
// of their positions reads a compressed tarball once.
func (t *Tree) Position(name string) (int64, error) {
	e, err := t.lookup("position", name)
	if err != nil {
		return 0, err
	}
	return e.off, nil
}

// Streamed reports whether the tree's files are read by decompressing
// its archive from the start (a compressed tarball).
func (t *Tree) Streamed() bool { return t.gz }

// Stream reads a tree's files one after another. On a compressed
// tarball, a file after the last one read costs the decompression of what
// lies between them; one before it starts the decompression again. On an
// uncompressed tarball or a zip every file is read where it lies. A
// Stream is not safe for concurrent use.
type Stream struct {
	t  *Tree
	tr *tar.Reader
	// next is the ordinal of the header tr reads next.
	next int64
}

// Stream starts reading the tree's files.
func (t *Tree) Stream() *Stream { return &Stream{t: t} }

// Copy copies the file name to w.
func (s *Stream) Copy(name string, w io.Writer) error {
	e, err := s.t.lookup("read", name)
	if err != nil {
		return err
	}
	if e.dir {
		return fmt.Errorf("%s: %s is a directory", s.t.name, name)
	}
	if !s.t.gz {
		f, err := s.t.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
	r, err := s.seek(e)
	if err != nil {
		return err
	}
	n, err := io.Copy(w, r)
	if err == nil && n != e.size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("%s: %s: %w", s.t.name, name, err)
	}
	return nil
}

// seek moves the decompression to e's header and returns its data.
func (s *Stream) seek(e treeEntry) (io.Reader, error) {
	if s.tr == nil || e.off < s.next {
		tr, _, err := s.t.gzTar()
		if err != nil {
			return nil, err
		}
		s.tr, s.next = tr, 0
	}
	for {
		hdr, err := s.tr.Next()
		if err != nil {
			s.tr = nil
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the archive changed since it was listed
			}
			return nil, fmt.Errorf("%s: %s: %w", s.t.name, e.name, err)
		}
		ord := s.next
		s.next++
		if ord == e.off {
			if hdr.Size != e.size {
				s.tr = nil
				return nil, fmt.Errorf("%s: %s: %d bytes, listed with %d: the archive changed since it was listed", s.t.name, e.name, hdr.Size, e.size)
			}
			return s.tr, nil
		}
	}
}

// gzFile is a file of a compressed tarball, opened by decompressing up
// to it.
type gzFile struct {
	info treeInfo
	r    io.Reader
}

func (f *gzFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *gzFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *gzFile) Close() error               { return nil }
