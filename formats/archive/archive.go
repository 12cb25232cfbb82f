// Package archive extracts .tar, .tar.gz, .tgz, .zip and single-file .gz
// archives into a directory, refusing any entry that would land outside it
// (a "../" path, an absolute path, or a link pointing out).
package archive

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
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

// Extract unpacks src (named name, which decides the kind) into dst.
// It returns the relative paths of the regular files it wrote.
func Extract(src, name, dst string) ([]string, error) {
	switch Kind(name) {
	case "tar":
		f, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return extractTar(f, name, dst)
	case "tar.gz":
		f, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: byte 0: not gzip data: %w", name, err)
		}
		return extractTar(zr, name, dst)
	case "zip":
		return extractZip(src, name, dst)
	case "gz":
		return extractGz(src, name, dst)
	}
	return nil, fmt.Errorf("%s: not a supported archive (.tar, .tar.gz, .tgz, .zip, .gz)", name)
}

// safeJoin resolves an entry name inside dst or explains why it escapes.
func safeJoin(dst, entry, archiveName string) (string, error) {
	if entry == "" {
		return "", fmt.Errorf("%s: entry with an empty name", archiveName)
	}
	if strings.HasPrefix(entry, "/") || filepath.IsAbs(entry) || (len(entry) > 1 && entry[1] == ':') {
		return "", fmt.Errorf("%s: entry %q has an absolute path; refusing to extract outside the target directory", archiveName, entry)
	}
	clean := path.Clean(strings.ReplaceAll(entry, `\`, "/"))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%s: entry %q escapes the target directory with \"..\"; refusing to extract", archiveName, entry)
	}
	return filepath.Join(dst, filepath.FromSlash(clean)), nil
}

// checkLink refuses a link whose target resolves outside dst.
func checkLink(dst, linkPath, target, archiveName, entry string) error {
	if filepath.IsAbs(target) || strings.HasPrefix(target, "/") {
		return fmt.Errorf("%s: link %q points to absolute path %q; refusing to extract", archiveName, entry, target)
	}
	resolved := filepath.Join(filepath.Dir(linkPath), filepath.FromSlash(target))
	rel, err := filepath.Rel(dst, resolved)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s: link %q points outside the target directory (%q); refusing to extract", archiveName, entry, target)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func extractTar(r io.Reader, name, dst string) ([]string, error) {
	cr := &countingReader{r: r}
	tr := tar.NewReader(cr)
	var files []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: byte %d: malformed tar: %w", name, cr.n, err)
		}
		target, err := safeJoin(dst, hdr.Name, name)
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o777); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if err := writeFile(target, tr); err != nil {
				return nil, fmt.Errorf("%s: entry %q (byte %d): %w", name, hdr.Name, cr.n, err)
			}
			rel, _ := filepath.Rel(dst, target)
			files = append(files, filepath.ToSlash(rel))
		case tar.TypeSymlink, tar.TypeLink:
			linkTarget := hdr.Linkname
			if hdr.Typeflag == tar.TypeLink {
				// Hard link names are relative to the archive root.
				if _, err := safeJoin(dst, linkTarget, name); err != nil {
					return nil, fmt.Errorf("%s: hard link %q: %w", name, hdr.Name, err)
				}
				src := filepath.Join(dst, filepath.FromSlash(path.Clean(linkTarget)))
				if err := os.MkdirAll(filepath.Dir(target), 0o777); err != nil {
					return nil, err
				}
				if err := os.Link(src, target); err != nil {
					return nil, fmt.Errorf("%s: hard link %q: %w", name, hdr.Name, err)
				}
				continue
			}
			if err := checkLink(dst, target, linkTarget, name, hdr.Name); err != nil {
				return nil, err
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o777); err != nil {
				return nil, err
			}
			if err := os.Symlink(linkTarget, target); err != nil {
				return nil, err
			}
		default:
			// Devices, FIFOs and the like are skipped.
		}
	}
}

func extractZip(src, name, dst string) ([]string, error) {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return nil, fmt.Errorf("%s: byte 0: malformed zip: %w", name, err)
	}
	defer zr.Close()
	var files []string
	for _, f := range zr.File {
		target, err := safeJoin(dst, f.Name, name)
		if err != nil {
			return nil, err
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(target, 0o777); err != nil {
				return nil, err
			}
		case mode&os.ModeSymlink != 0:
			return nil, fmt.Errorf("%s: entry %q is a symlink; links in zip archives are not extracted", name, f.Name)
		case mode.IsRegular():
			off, _ := f.DataOffset()
			rc, err := f.Open()
			if err != nil {
				return nil, fmt.Errorf("%s: entry %q (byte %d): %w", name, f.Name, off, err)
			}
			err = writeFile(target, rc)
			rc.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: entry %q (byte %d): %w", name, f.Name, off, err)
			}
			rel, _ := filepath.Rel(dst, target)
			files = append(files, filepath.ToSlash(rel))
		}
	}
	return files, nil
}

func extractGz(src, name, dst string) ([]string, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := &countingReader{r: f}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return nil, fmt.Errorf("%s: byte 0: not gzip data: %w", name, err)
	}
	base := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	target := filepath.Join(dst, base)
	if err := writeFile(target, zr); err != nil {
		return nil, fmt.Errorf("%s: byte %d: %w", name, cr.n, err)
	}
	return []string{base}, nil
}

func writeFile(target string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o777); err != nil {
		return err
	}
	if info, err := os.Lstat(target); err == nil && info.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("refusing to write through symlink %s", target)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
