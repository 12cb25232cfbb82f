package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// ErrNotInPlace is wrapped by OpenTarFS's and OpenZipFS's error for an
// archive whose entries cannot be read in place as extraction would leave
// them: links, sparse files, a name that is both a file and a directory,
// or a name that is not UTF-8. The caller extracts such an archive
// instead.
var ErrNotInPlace = errors.New("the archive cannot be read in place")

// OpenTarFS indexes the uncompressed tarball src (named name in errors).
// An error wrapping ErrNotInPlace means the archive is sound but must be
// extracted; any other is what extraction would report.
func OpenTarFS(src, name string, lim Limits) (*Tree, error) {
	f, info, err := openArchive(src)
	if err != nil {
		return nil, err
	}
	t := &Tree{f: f, name: name, mod: info.ModTime()}
	if err := t.index(info.Size(), lim.withDefaults()); err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// index reads the headers (tar's reader seeks over the files' data) and
// builds the sorted entries.
func (t *Tree) index(size int64, lim Limits) error {
	x := &extractor{name: t.name, lim: lim, archiveSize: size}
	pos := func() int64 { p, _ := t.f.Seek(0, io.SeekCurrent); return p }
	return t.indexHeaders(tar.NewReader(t.f), x, func(err error) error {
		return fmt.Errorf("%s: byte %d: malformed tar: %w", t.name, pos(), err)
	}, func(hdr *tar.Header, _ int64) (int64, error) {
		p := pos()
		if hdr.Size < 0 || p > size-hdr.Size {
			return 0, fmt.Errorf("%s: byte %d: malformed tar: entry %q: %w", t.name, p, hdr.Name, io.ErrUnexpectedEOF)
		}
		return p, nil
	})
}

// indexHeaders reads tr's headers into the tree's entries with
// extraction's checks (entries, names, bytes): malformed describes a
// header that cannot be read; at gives a regular file's off (where its
// data lies, or its ordinal ord) once its bytes are counted, or an error
// for what only that kind of archive can tell. A later entry of a name
// replaces the earlier one, as extraction does.
func (t *Tree) indexHeaders(tr *tar.Reader, x *extractor, malformed func(error) error, at func(hdr *tar.Header, ord int64) (int64, error)) error {
	files := map[string]treeEntry{}
	dirs := map[string]bool{}
	for ord := int64(0); ; ord++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return malformed(err)
		}
		name, err := t.entryName(x, hdr)
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if name != "." {
				dirs[name] = true
			}
		case tar.TypeReg, tar.TypeRegA:
			if name == "." || sparse(hdr) {
				return fmt.Errorf("%s: entry %q: %w", t.name, hdr.Name, ErrNotInPlace)
			}
			x.written += hdr.Size
			if x.written > x.lim.MaxBytes {
				return fmt.Errorf("%s: more than %d bytes extracted: %w (raise max_extract_bytes if this archive is trusted)", x.name, x.lim.MaxBytes, ErrLimit)
			}
			off, err := at(hdr, ord)
			if err != nil {
				return err
			}
			files[name] = treeEntry{name: name, off: off, size: hdr.Size}
		case tar.TypeSymlink, tar.TypeLink, tar.TypeGNUSparse:
			return fmt.Errorf("%s: entry %q: %w", t.name, hdr.Name, ErrNotInPlace)
		default:
			// Devices, FIFOs and the like are skipped, as extraction does.
		}
	}
	return t.settle(files, dirs)
}

// entryName counts a header against the limits and checks its name as
// extraction does, returning the name cleaned.
func (t *Tree) entryName(x *extractor, hdr *tar.Header) (string, error) {
	if err := x.countEntry(); err != nil {
		return "", err
	}
	name, err := x.cleanName(hdr.Name)
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(name) {
		// io/fs names are UTF-8; extraction writes any bytes.
		return "", fmt.Errorf("%s: entry %q: %w", t.name, hdr.Name, ErrNotInPlace)
	}
	return name, nil
}

// sparse reports a sparse file in any of tar's encodings.
func sparse(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// openArchive opens src and describes it.
func openArchive(src string) (*os.File, os.FileInfo, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}
