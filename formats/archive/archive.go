// Package archive extracts .tar, .tar.gz, .tgz, .zip and single-file .gz
// archives into a directory.
//
// Every write goes through an os.Root opened on the target directory, so no
// entry can create or modify anything outside it: not by a "../" or
// absolute name, not through a symbolic link (nor a chain of them) that
// really resolves outside, and not through a hard link. Names are also
// checked lexically first, so that the error names the offending entry.
// Existing files are replaced, never written into, so a pre-existing hard
// link in the target is never modified. Extraction stops once it has
// written more than Limits allow (decompression bombs).
package archive

import (
	"archive/tar"
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Kind returns the archive kind of a file name: "tar", "tar.gz", "zip",
// "gz", or "" when the name is not an archive.
func Kind(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".tar.gz"), strings.HasSuffix(n, ".tgz"):
		return "tar.gz"
	case strings.HasSuffix(n, ".tar"):
		return "tar"
	case strings.HasSuffix(n, ".zip"):
		return "zip"
	case strings.HasSuffix(n, ".gz"):
		return "gz"
	}
	return ""
}

// Default limits on what one archive may write.
const (
	// DefaultMaxBytes caps the bytes of all extracted files (1 TiB).
	DefaultMaxBytes int64 = 1 << 40
	// DefaultMaxRatio caps extracted bytes per archive byte. Image and
	// video archives are near 1; text and sparse arrays reach tens.
	DefaultMaxRatio = 200
	// DefaultMaxEntries caps the number of entries.
	DefaultMaxEntries = 10_000_000
	// ratioSlack is written before the ratio applies, so that small
	// archives of very compressible files extract.
	ratioSlack int64 = 64 << 20
)

// Limits bounds an extraction. Zero fields take the defaults above.
type Limits struct {
	MaxBytes   int64   // total bytes of extracted files
	MaxRatio   float64 // extracted bytes per byte of archive (past 64 MiB)
	MaxEntries int     // number of entries of any kind
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = DefaultMaxRatio
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	return l
}

// ErrLimit is wrapped by the error of an extraction stopped by Limits.
var ErrLimit = errors.New("archive exceeds the extraction limits")

// Extract unpacks src (named name, which decides the kind) into dst with
// the default limits. It returns the relative paths of the regular files
// it wrote.
func Extract(src, name, dst string) ([]string, error) {
	return ExtractLimited(src, name, dst, Limits{})
}

// ExtractLimited is Extract with explicit limits.
func ExtractLimited(src, name, dst string, lim Limits) ([]string, error) {
	kind := Kind(name)
	if kind == "" {
		return nil, fmt.Errorf("%s: not a supported archive (.tar, .tar.gz, .tgz, .zip, .gz)", name)
	}
	f, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer root.Close()
	x := &extractor{root: root, name: name, lim: lim.withDefaults(), archiveSize: info.Size()}
	defer x.closeDir()
	switch kind {
	case "tar":
		return x.tar(f)
	case "tar.gz":
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: byte 0: not gzip data: %w", name, err)
		}
		return x.tar(zr)
	case "zip":
		zr, err := zip.NewReader(f, info.Size())
		if err != nil {
			return nil, fmt.Errorf("%s: byte 0: malformed zip: %w", name, err)
		}
		return x.zip(zr)
	default: // "gz"
		return x.gz(f)
	}
}

// ExtractReader unpacks a tar (kind "tar") or zip (kind "zip", r must then
// be an io.ReaderAt of size bytes) into root. It is Extract without a
// source file, for callers that already hold the bytes.
func ExtractReader(r io.Reader, size int64, kind, name string, root *os.Root, lim Limits) ([]string, error) {
	x := &extractor{root: root, name: name, lim: lim.withDefaults(), archiveSize: size}
	defer x.closeDir()
	switch kind {
	case "tar":
		return x.tar(r)
	case "zip":
		ra, ok := r.(io.ReaderAt)
		if !ok {
			return nil, fmt.Errorf("%s: a zip archive needs random access", name)
		}
		zr, err := zip.NewReader(ra, size)
		if err != nil {
			return nil, fmt.Errorf("%s: byte 0: malformed zip: %w", name, err)
		}
		return x.zip(zr)
	}
	return nil, fmt.Errorf("%s: ExtractReader takes tar or zip, not %q", name, kind)
}

// extractor holds one extraction's state.
type extractor struct {
	root        *os.Root
	name        string
	lim         Limits
	archiveSize int64
	written     int64
	entries     int
	files       []string
	links       []string // symbolic links created, checked again at the end
	// dir is the directory the last file went into, opened as a root
	// (dirName, relative to root): the next file of that directory is
	// created with one openat rather than one a path element.
	dir     *os.Root
	dirName string
}

// dirRoot makes the directory name (relative to the root) if missing and
// returns it opened as a root, keeping it open for the next file (the
// entries of one directory come together in most archives). os.Root
// resolves name as it resolves a file's path, so nothing outside the root
// is reached through it either.
func (x *extractor) dirRoot(name string) (*os.Root, error) {
	if name == "." {
		return x.root, nil
	}
	if x.dir != nil && x.dirName == name {
		return x.dir, nil
	}
	if err := x.mkdirAll(name); err != nil {
		return nil, err
	}
	r, err := x.root.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", x.name, err)
	}
	x.closeDir()
	x.dir, x.dirName = r, name
	return r, nil
}

// closeDir closes the directory dirRoot kept open.
func (x *extractor) closeDir() {
	if x.dir != nil {
		x.dir.Close()
		x.dir, x.dirName = nil, ""
	}
}

// maxNameBytes is the longest file name component Linux file systems
// hold (NAME_MAX).
const maxNameBytes = 255

// cleanName returns an entry name relative to the root, or explains why
// it escapes.
func (x *extractor) cleanName(entry string) (string, error) {
	if entry == "" {
		return "", fmt.Errorf("%s: entry with an empty name", x.name)
	}
	if strings.ContainsRune(entry, 0) {
		return "", fmt.Errorf("%s: entry %q has a NUL byte in its name", x.name, entry)
	}
	e := strings.ReplaceAll(entry, `\`, "/")
	if strings.HasPrefix(e, "/") || (len(e) > 1 && e[1] == ':') {
		return "", fmt.Errorf("%s: entry %q has an absolute path; refusing to extract outside the target directory", x.name, entry)
	}
	clean := path.Clean(e)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%s: entry %q escapes the target directory with \"..\"; refusing to extract", x.name, entry)
	}
	// One check for both ways of reading an archive: a name that could
	// not be extracted is not read in place either.
	for part := range strings.SplitSeq(clean, "/") {
		if len(part) > maxNameBytes {
			return "", fmt.Errorf("%s: entry %q: a name component of %d bytes, longer than the %d a file system holds", x.name, entry, len(part), maxNameBytes)
		}
	}
	return clean, nil
}

// checkLink refuses a symbolic link whose target lexically leaves the
// target directory. Chains of links that do so only when resolved are
// stopped by the root when they are followed.
func (x *extractor) checkLink(entry, linkName, target string) error {
	t := strings.ReplaceAll(target, `\`, "/")
	if strings.HasPrefix(t, "/") || (len(t) > 1 && t[1] == ':') {
		return fmt.Errorf("%s: link %q points to absolute path %q; refusing to extract", x.name, entry, target)
	}
	resolved := path.Clean(path.Join(path.Dir(linkName), t))
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return fmt.Errorf("%s: link %q points outside the target directory (%q); refusing to extract", x.name, entry, target)
	}
	return nil
}

func (x *extractor) countEntry() error {
	x.entries++
	if x.entries > x.lim.MaxEntries {
		return fmt.Errorf("%s: more than %d entries: %w (raise max_extract_entries if this archive is trusted)", x.name, x.lim.MaxEntries, ErrLimit)
	}
	return nil
}

// mkdirAll creates a directory inside the root.
func (x *extractor) mkdirAll(name string) error {
	if name == "." {
		return nil
	}
	if err := x.root.MkdirAll(name, 0o777); err != nil {
		return fmt.Errorf("%s: %w", x.name, err)
	}
	return nil
}

// replaceable removes an existing non-directory at name so that a new
// file or link is created rather than an existing inode written into.
func (x *extractor) replaceable(name string) error {
	return x.replaceableIn(x.root, name, name)
}

// replaceableIn is replaceable for the entry base of the directory dir
// (name being its path from the root, for messages).
func (x *extractor) replaceableIn(dir *os.Root, base, name string) error {
	info, err := dir.Lstat(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", x.name, err)
	}
	if info.IsDir() {
		return fmt.Errorf("%s: entry %q would replace a directory", x.name, name)
	}
	if err := dir.Remove(base); err != nil {
		return fmt.Errorf("%s: %w", x.name, err)
	}
	return nil
}

// writeFile writes one regular file, counting its bytes against the limits.
func (x *extractor) writeFile(name string, r io.Reader, where string) error {
	if name == "." {
		return fmt.Errorf("%s: %s: a file entry names the target directory itself", x.name, where)
	}
	dir, err := x.dirRoot(path.Dir(name))
	if err != nil {
		return err
	}
	base := path.Base(name)
	if err := x.replaceableIn(dir, base, name); err != nil {
		return err
	}
	f, err := dir.OpenFile(base, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", x.name, where, err)
	}
	_, err = io.Copy(f, &limitedWriter{x: x, r: r})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, ErrLimit) {
			_ = x.root.Remove(name)
			return err
		}
		return fmt.Errorf("%s: %s: %w", x.name, where, err)
	}
	x.files = append(x.files, name)
	return nil
}

// limitedWriter is a reader that counts what passes through it against
// the extraction's limits.
type limitedWriter struct {
	x *extractor
	r io.Reader
}

func (l *limitedWriter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	x := l.x
	x.written += int64(n)
	if x.written > x.lim.MaxBytes {
		return n, fmt.Errorf("%s: more than %d bytes extracted: %w (raise max_extract_bytes if this archive is trusted)", x.name, x.lim.MaxBytes, ErrLimit)
	}
	if x.written > ratioSlack && float64(x.written) > x.lim.MaxRatio*float64(max(x.archiveSize, 1)) {
		return n, fmt.Errorf("%s: %d bytes extracted from a %d-byte archive, more than %g times its size: %w (a decompression bomb? raise max_extract_ratio if this archive is trusted)",
			x.name, x.written, x.archiveSize, x.lim.MaxRatio, ErrLimit)
	}
	return n, err
}

// countingReader counts the bytes read, for error positions.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (x *extractor) tar(r io.Reader) ([]string, error) {
	cr := &countingReader{r: r}
	tr := tar.NewReader(cr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return x.finish()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: byte %d: malformed tar: %w", x.name, cr.n, err)
		}
		if err := x.countEntry(); err != nil {
			return nil, err
		}
		name, err := x.cleanName(hdr.Name)
		if err != nil {
			return nil, err
		}
		where := fmt.Sprintf("entry %q (byte %d)", hdr.Name, cr.n)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := x.mkdirAll(name); err != nil {
				return nil, err
			}
		case tar.TypeReg, tar.TypeRegA:
			if err := x.writeFile(name, tr, where); err != nil {
				return nil, err
			}
		case tar.TypeSymlink:
			if err := x.symlink(hdr.Name, name, hdr.Linkname); err != nil {
				return nil, err
			}
		case tar.TypeLink:
			if err := x.hardLink(hdr.Name, name, hdr.Linkname); err != nil {
				return nil, err
			}
		default:
			// Devices, FIFOs and the like are skipped.
		}
	}
}

func (x *extractor) symlink(entry, name, target string) error {
	if name == "." {
		return fmt.Errorf("%s: link %q names the target directory itself", x.name, entry)
	}
	if err := x.checkLink(entry, name, target); err != nil {
		return err
	}
	if err := x.mkdirAll(path.Dir(name)); err != nil {
		return err
	}
	if err := x.replaceable(name); err != nil {
		return err
	}
	if err := x.root.Symlink(target, name); err != nil {
		return fmt.Errorf("%s: link %q: %w", x.name, entry, err)
	}
	x.links = append(x.links, name)
	return x.checkResolved(name)
}

// checkResolved refuses a link that, followed through the links already
// on disk, resolves outside the target directory (a chain such as
// "a -> ." then "a/b -> ../x"). A dangling link is allowed here and
// checked again once everything is extracted.
func (x *extractor) checkResolved(name string) error {
	_, err := x.root.Stat(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_ = x.root.Remove(name)
	return fmt.Errorf("%s: link %q resolves outside the target directory through other links; refusing to extract (%v)", x.name, name, err)
}

// finish checks every link once the whole archive is on disk.
func (x *extractor) finish() ([]string, error) {
	for _, l := range x.links {
		if err := x.checkResolved(l); err != nil {
			return nil, err
		}
	}
	return x.files, nil
}

// hardLink links name to target, both relative to the archive root. The
// root resolves target's directories inside the target directory only,
// and a link to a symbolic link links the link itself.
func (x *extractor) hardLink(entry, name, target string) error {
	old, err := x.cleanName(target)
	if err != nil {
		return fmt.Errorf("%s: hard link %q: %w", x.name, entry, err)
	}
	if name == "." || old == "." {
		return fmt.Errorf("%s: hard link %q names the target directory itself", x.name, entry)
	}
	if err := x.mkdirAll(path.Dir(name)); err != nil {
		return err
	}
	if err := x.replaceable(name); err != nil {
		return err
	}
	if err := x.root.Link(old, name); err != nil {
		return fmt.Errorf("%s: hard link %q: %w", x.name, entry, err)
	}
	if info, err := x.root.Lstat(name); err == nil && info.Mode()&os.ModeSymlink != 0 {
		x.links = append(x.links, name)
		return x.checkResolved(name)
	}
	return nil
}

func (x *extractor) zip(zr *zip.Reader) ([]string, error) {
	for _, f := range zr.File {
		if err := x.countEntry(); err != nil {
			return nil, err
		}
		name, err := x.cleanName(f.Name)
		if err != nil {
			return nil, err
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := x.mkdirAll(name); err != nil {
				return nil, err
			}
		case mode&os.ModeSymlink != 0:
			return nil, fmt.Errorf("%s: entry %q is a symlink; links in zip archives are not extracted", x.name, f.Name)
		case mode.IsRegular():
			off, _ := f.DataOffset()
			where := fmt.Sprintf("entry %q (byte %d)", f.Name, off)
			rc, err := f.Open()
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", x.name, where, err)
			}
			err = x.writeFile(name, rc, where)
			rc.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	return x.files, nil
}

func (x *extractor) gz(r io.Reader) ([]string, error) {
	cr := &countingReader{r: r}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return nil, fmt.Errorf("%s: byte 0: not gzip data: %w", x.name, err)
	}
	base := path.Base(strings.ReplaceAll(x.name, `\`, "/"))
	base = base[:len(base)-len(".gz")]
	if base == "" || base == "." || base == ".." {
		return nil, fmt.Errorf("%s: the name left after removing .gz is not a file name", x.name)
	}
	if err := x.writeFile(base, zr, "data"); err != nil {
		if errors.Is(err, ErrLimit) {
			return nil, err
		}
		return nil, fmt.Errorf("%w (byte %d of the archive)", err, cr.n)
	}
	return x.files, nil
}
