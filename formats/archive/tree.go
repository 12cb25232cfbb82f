package archive

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// Tree reads an archive's regular files where they lie in it (an
// uncompressed tarball, OpenTarFS; a zip, OpenZipFS; a compressed
// tarball by decompressing it, OpenTarGzFS), as the directory
// tree that extracting it would write, without writing it: creating a
// file costs far more than reading one (0.55 ms of CPU for an empty file
// on a virtual disk), and an image dataset's archive holds a million of
// them. Names are checked as extraction checks them, and the same Limits
// apply. It implements fs.ReadDirFS, fs.ReadFileFS and fs.StatFS; the
// files' reads are positioned reads of the archive, safe from several
// goroutines.
type Tree struct {
	f    *os.File
	name string
	// gz: a compressed tarball (OpenTarGzFS), of size bytes; its
	// entries' off is their header's ordinal.
	gz   bool
	size int64
	// entries holds the tree's files and directories sorted by name, so
	// that a directory's entries are one contiguous run after it.
	entries []treeEntry
	mod     time.Time
}

// treeEntry is one file (off, size in the archive, off being the
// header's ordinal in a compressed tarball; or zf, a zip's member of size
// bytes) or directory of the tree; a directory that only other names
// imply has dir set too.
type treeEntry struct {
	name      string
	dir       bool
	off, size int64
	zf        *zip.File
}

// settle sorts files and dirs into the tree's entries, after checking
// that every entry's parents are directories, as extraction creates them.
func (t *Tree) settle(files map[string]treeEntry, dirs map[string]bool) error {
	// Every entry's parents are directories, as extraction creates them
	// (a directory entry "a/c/" alone makes "a" too).
	parents := slices.Collect(maps.Keys(files))
	for d := range dirs {
		parents = append(parents, d)
	}
	for _, name := range parents {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, isFile := files[d]; isFile {
				return fmt.Errorf("%s: %q is both a file and a directory: %w", t.name, d, ErrNotInPlace)
			}
			dirs[d] = true
		}
	}
	for d := range dirs {
		if _, isFile := files[d]; isFile {
			return fmt.Errorf("%s: %q is both a file and a directory: %w", t.name, d, ErrNotInPlace)
		}
	}
	t.entries = make([]treeEntry, 0, len(files)+len(dirs))
	for _, e := range files {
		t.entries = append(t.entries, e)
	}
	for d := range dirs {
		t.entries = append(t.entries, treeEntry{name: d, dir: true})
	}
	slices.SortFunc(t.entries, func(a, b treeEntry) int { return compareTreeNames(a.name, b.name) })
	return nil
}

// compareTreeNames orders names so that everything under a directory
// follows it directly ("a", "a/b", "a/c", "a.txt"): '/' sorts first.
func compareTreeNames(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		return int(ca) - int(cb)
	}
	return len(a) - len(b)
}

// Close closes the archive.
func (t *Tree) Close() error { return t.f.Close() }

// Name is the archive's name, as given to OpenTarFS or OpenZipFS.
func (t *Tree) Name() string { return t.name }

// lookup finds name's entry; "." is the root directory.
func (t *Tree) lookup(op, name string) (treeEntry, error) {
	if !fs.ValidPath(name) {
		return treeEntry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return treeEntry{name: ".", dir: true}, nil
	}
	i, ok := slices.BinarySearchFunc(t.entries, name, func(e treeEntry, n string) int { return compareTreeNames(e.name, n) })
	if !ok {
		return treeEntry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return t.entries[i], nil
}

// Open opens a file or directory of the tree.
func (t *Tree) Open(name string) (fs.File, error) {
	e, err := t.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if e.dir {
		entries, err := t.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return NewDirFile(t.info(e), entries), nil
	}
	if e.zf != nil {
		rc, err := e.zf.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", t.name, name, err)
		}
		return &zipFile{info: t.info(e), rc: rc}, nil
	}
	if t.gz {
		r, err := t.Stream().seek(e)
		if err != nil {
			return nil, err
		}
		return &gzFile{info: t.info(e), r: io.LimitReader(r, e.size)}, nil
	}
	return &tarFile{info: t.info(e), r: io.NewSectionReader(t.f, e.off, e.size)}, nil
}

// ReadFile reads a file of the tree whole.
func (t *Tree) ReadFile(name string) ([]byte, error) { return t.ReadFileInto(name, nil) }

// ReadFileInto reads a file of the tree whole into buf's storage when it
// is large enough (else into a new slice) and returns the file's bytes: a
// reader of many members reuses one buffer.
func (t *Tree) ReadFileInto(name string, buf []byte) ([]byte, error) {
	e, err := t.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if e.dir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	if int64(cap(buf)) < e.size {
		buf = make([]byte, e.size)
	}
	buf = buf[:e.size]
	switch {
	case e.zf != nil:
		// The member inflated to its declared size, its CRC checked at
		// the end: archive/zip refuses more bytes than declared.
		err = readZipMember(e.zf, buf)
	case t.gz:
		var r io.Reader
		if r, err = t.Stream().seek(e); err == nil {
			_, err = io.ReadFull(r, buf)
		}
	default:
		_, err = t.f.ReadAt(buf, e.off)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", t.name, name, err)
	}
	return buf, nil
}

// Stat describes a file or directory of the tree.
func (t *Tree) Stat(name string) (fs.FileInfo, error) {
	e, err := t.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return t.info(e), nil
}

// ReadDir lists a directory's entries sorted by name, as os.ReadDir does.
func (t *Tree) ReadDir(name string) ([]fs.DirEntry, error) {
	e, err := t.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !e.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	prefix := name + "/"
	start := 0
	if name == "." {
		prefix = ""
	} else {
		start, _ = slices.BinarySearchFunc(t.entries, prefix, func(e treeEntry, n string) int { return compareTreeNames(e.name, n) })
	}
	var out []fs.DirEntry
	for _, c := range t.entries[start:] {
		if !strings.HasPrefix(c.name, prefix) {
			break
		}
		if !strings.Contains(c.name[len(prefix):], "/") {
			out = append(out, fs.FileInfoToDirEntry(t.info(c)))
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

func (t *Tree) info(e treeEntry) treeInfo { return treeInfo{e: e, mod: t.mod} }

// treeInfo is an entry's fs.FileInfo.
type treeInfo struct {
	e   treeEntry
	mod time.Time
}

func (i treeInfo) Name() string       { return path.Base(i.e.name) }
func (i treeInfo) Size() int64        { return i.e.size }
func (i treeInfo) ModTime() time.Time { return i.mod }
func (i treeInfo) IsDir() bool        { return i.e.dir }
func (i treeInfo) Sys() any           { return nil }
func (i treeInfo) Mode() fs.FileMode {
	if i.e.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

// tarFile is an open file of the tree.
type tarFile struct {
	info treeInfo
	r    *io.SectionReader
}

func (f *tarFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *tarFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *tarFile) Close() error               { return nil }

// DirFile is a directory opened for fs.FS.Open, listing entries.
type DirFile struct {
	info    fs.FileInfo
	entries []fs.DirEntry
}

// NewDirFile opens a directory described by info whose entries are
// listed already.
func NewDirFile(info fs.FileInfo, entries []fs.DirEntry) *DirFile {
	return &DirFile{info: info, entries: entries}
}

// Stat describes the directory.
func (d *DirFile) Stat() (fs.FileInfo, error) { return d.info, nil }

// Read fails: a directory has no bytes.
func (d *DirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}

// Close does nothing.
func (d *DirFile) Close() error { return nil }

// ReadDir returns the next n entries (all when n <= 0), as fs.ReadDirFile
// asks.
func (d *DirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}
