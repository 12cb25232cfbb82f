package archive

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"
)

// OpenZipFS indexes the zip archive src (named name in errors) from its
// central directory, reading no member: each member is inflated when it is
// read (the dermatology and retinopathy zips of the medical benchmarks
// hold tens of thousands of images, which extraction wrote out one file
// at a time). The names and Limits are checked as extraction checks them,
// the bytes and ratio against the members' declared sizes, which
// archive/zip holds each member to when it is read. An error wrapping
// ErrNotInPlace means the archive is sound but must be extracted; any
// other is what extraction would report.
func OpenZipFS(src, name string, lim Limits) (*Tree, error) {
	f, info, err := openArchive(src)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(f, info.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: byte 0: malformed zip: %w", name, err)
	}
	t := &Tree{f: f, name: name, mod: info.ModTime()}
	if err := t.indexZip(zr, info.Size(), lim.withDefaults()); err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// indexZip builds the entries from the central directory.
func (t *Tree) indexZip(zr *zip.Reader, size int64, lim Limits) error {
	x := &extractor{name: t.name, lim: lim, archiveSize: size}
	files := map[string]treeEntry{}
	dirs := map[string]bool{}
	for _, f := range zr.File {
		if err := x.countEntry(); err != nil {
			return err
		}
		name, err := x.cleanName(f.Name)
		if err != nil {
			return err
		}
		if !utf8.ValidString(name) {
			return fmt.Errorf("%s: entry %q: %w", t.name, f.Name, ErrNotInPlace)
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if name != "." {
				dirs[name] = true
			}
		case mode&os.ModeSymlink != 0:
			return fmt.Errorf("%s: entry %q: %w", t.name, f.Name, ErrNotInPlace)
		case mode.IsRegular():
			if name == "." {
				return fmt.Errorf("%s: entry %q: a file entry names the target directory itself", t.name, f.Name)
			}
			declared := int64(f.UncompressedSize64)
			if declared < 0 || f.UncompressedSize64 > 1<<62 {
				return fmt.Errorf("%s: entry %q declares %d bytes: malformed zip", t.name, f.Name, f.UncompressedSize64)
			}
			x.written += declared
			if x.written > x.lim.MaxBytes {
				return fmt.Errorf("%s: more than %d bytes extracted: %w (raise max_extract_bytes if this archive is trusted)", x.name, x.lim.MaxBytes, ErrLimit)
			}
			if x.written > ratioSlack && float64(x.written) > x.lim.MaxRatio*float64(max(size, 1)) {
				return fmt.Errorf("%s: %d bytes declared in a %d-byte archive, more than %g times its size: %w (a decompression bomb? raise max_extract_ratio if this archive is trusted)",
					x.name, x.written, size, x.lim.MaxRatio, ErrLimit)
			}
			files[name] = treeEntry{name: name, size: declared, zf: f} // a later entry replaces an earlier one
		default:
			// Devices and the like are skipped, as extraction does.
		}
	}
	return t.settle(files, dirs)
}

// readZipMember inflates a member into buf, which holds its declared size
// exactly.
func readZipMember(zf *zip.File, buf []byte) error {
	rc, err := zf.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, buf); err != nil {
		return err
	}
	// Read to the end, where archive/zip checks the CRC-32.
	var one [1]byte
	if n, err := rc.Read(one[:]); n > 0 || (err != nil && err != io.EOF) {
		if err == nil || err == io.EOF {
			err = zip.ErrFormat
		}
		return err
	}
	return nil
}

// zipFile is an open member of a zip read in place.
type zipFile struct {
	info fs.FileInfo
	rc   io.ReadCloser
}

func (f *zipFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *zipFile) Read(p []byte) (int, error) { return f.rc.Read(p) }
func (f *zipFile) Close() error               { return f.rc.Close() }
