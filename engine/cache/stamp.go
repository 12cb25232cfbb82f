package cache

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gatepipe/gatepipe/internal/fstamp"
)

// Every stored file has a stamp (fstamp), taken when the file was stored
// or last verified, compared on every hit: a hit whose stamps all match is
// served without reading the files, and a file whose stamp differs is
// re-hashed before it is served. Stamps are hints: a missing or unreadable
// stamp file only costs a re-hash.
type stamp = fstamp.Stamp

func stampOf(info fs.FileInfo) (stamp, bool) { return fstamp.Of(info) }

func links(info fs.FileInfo) uint64 { return fstamp.Links(info) }

func parseStamp(line string) (stamp, bool) { return fstamp.Parse(line) }

// readStamps reads a stamp file: one stamp a line, in the order the
// files were listed. A missing or malformed file gives nil.
func readStamps(name string) []stamp {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	var out []stamp
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		s, ok := parseStamp(line)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// writeStamps replaces a stamp file. It is not fsynced: a stamp lost in a
// crash only costs a re-hash.
func writeStamps(name string, stamps []stamp) {
	var b bytes.Buffer
	for _, s := range stamps {
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".stamp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b.Bytes())
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), name) != nil {
		os.Remove(tmp.Name())
	}
}

// checkFile verifies one stored file against its size, SHA-256 and last
// stamp. It returns the file's current stamp and whether that differs
// from the one given (so the stamp file needs rewriting). A file that is
// not a regular file, has the wrong size, or whose content does not hash
// to sum is an error.
func checkFile(hash func(string) (ID, int64, error), p string, size int64, sum string, last stamp, haveLast, rehash bool) (stamp, bool, error) {
	info, err := os.Lstat(p)
	if err != nil {
		return stamp{}, false, err
	}
	if !info.Mode().IsRegular() {
		return stamp{}, false, fmt.Errorf("%s is not a regular file", p)
	}
	if info.Size() != size {
		return stamp{}, false, fmt.Errorf("%s has %d bytes, want %d", p, info.Size(), size)
	}
	now, ok := stampOf(info)
	if ok && haveLast && now == last && !rehash {
		return now, false, nil
	}
	got, _, err := hash(p)
	if err != nil {
		return stamp{}, false, err
	}
	if got.String() != sum {
		return stamp{}, false, fmt.Errorf("%s has SHA-256 %s, want %s: it was changed after it was stored", p, got, sum)
	}
	// Stat again: the stamp must describe what was hashed.
	if info, err = os.Lstat(p); err == nil {
		now, ok = stampOf(info)
	}
	return now, ok, nil
}

// sealFile makes a file about to be stored its own read-only inode: a
// file with other hard links (say, to a file outside the cache, which
// could later be edited) is replaced by a copy.
func sealFile(p string, info fs.FileInfo) error {
	if links(info) > 1 {
		tmp := p + ".seal-tmp"
		if err := copyRegular(p, tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	return os.Chmod(p, 0o444)
}

func copyRegular(src, dst string) error {
	data, err := os.Open(src)
	if err != nil {
		return err
	}
	defer data.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := out.ReadFrom(data); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}
