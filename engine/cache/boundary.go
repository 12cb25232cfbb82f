package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The cache never writes, renames or removes anything outside its root.
// Inside it, every name is the cache's own: a symbolic link (or any other
// file that is not a regular file or directory) found where the cache
// keeps something was planted there, by hand or by another user of a
// shared directory, and is never followed. Areas and fan-out directories
// are checked component by component before a file is created in them;
// files are created with O_EXCL|O_NOFOLLOW after what stood at their
// name is removed (removing a link removes the link, never its target);
// walks use Lstat and never descend through a link.

// areas are the top-level directories of a cache; Open makes each one and
// refuses a cache where one is not a real directory.
var areas = []string{"actions", "objects", "blobs", "partial", "resume", "locks", "tmp", "runs"}

// PlantedError is a file in the cache that is not what the cache keeps
// there (a symbolic link, a device, a FIFO): something put it there, and
// the cache will not follow or write through it.
type PlantedError struct {
	Path string
	// Target is where a symbolic link points ("" for other files).
	Target string
	Mode   fs.FileMode
}

func (e *PlantedError) Error() string {
	if e.Target != "" {
		return fmt.Sprintf("%s is a symbolic link (to %s) inside the cache; gatepipe never follows links there. Remove the link (rm %s), or run `gatepipe cache verify -repair`", e.Path, e.Target, e.Path)
	}
	return fmt.Sprintf("%s is a %s inside the cache, where gatepipe keeps only files and directories of its own; remove it, or run `gatepipe cache verify -repair`", e.Path, kindOf(e.Mode))
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

func planted(p string, info fs.FileInfo) *PlantedError {
	e := &PlantedError{Path: p, Mode: info.Mode()}
	if info.Mode()&fs.ModeSymlink != 0 {
		e.Target, _ = os.Readlink(p)
		if e.Target == "" {
			e.Target = "?"
		}
	}
	return e
}

// mkdirInside makes dir, which must be c.dir or below it, and each
// directory between, refusing any component that exists and is not a
// real directory: os.MkdirAll would follow a planted link out of the
// cache.
func (c *Cache) mkdirInside(dir string) error {
	rel, err := filepath.Rel(c.dir, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return fmt.Errorf("cache: %s is not inside the cache %s", dir, c.dir)
	}
	p := c.dir
	if rel == "." {
		return nil
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		info, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(p, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("cache: %w", err)
			}
			if info, err = os.Lstat(p); err != nil {
				return fmt.Errorf("cache: %w", err)
			}
		} else if err != nil {
			return fmt.Errorf("cache: %w", err)
		}
		if !info.IsDir() {
			return planted(p, info)
		}
	}
	return nil
}

// isInside reports whether p names something below the cache root.
func (c *Cache) isInside(p string) bool {
	rel, err := filepath.Rel(c.dir, p)
	return err == nil && filepath.IsLocal(rel)
}

// CreateFresh creates the file p inside the cache for writing, after
// removing whatever stood at that name (a link is removed, never
// followed): O_CREATE|O_EXCL|O_NOFOLLOW, so that nothing outside the
// cache is ever opened for writing through it. Its directory is made as
// mkdirInside makes it.
func (c *Cache) CreateFresh(p string) (*os.File, error) {
	if !c.isInside(p) {
		return nil, fmt.Errorf("cache: %s is not inside the cache %s", p, c.dir)
	}
	if err := c.mkdirInside(filepath.Dir(p)); err != nil {
		return nil, err
	}
	return createFresh(p)
}

// createFresh removes what stands at p and creates a new file there,
// never through a link.
func createFresh(p string) (*os.File, error) {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
}

// openNoFollow opens p for reading unless it is a symbolic link, and
// checks that what it opened is a regular file.
func openNoFollow(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if info, lerr := os.Lstat(p); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			return nil, planted(p, info)
		}
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, planted(p, info)
	}
	return f, nil
}

// checkAreas makes each area of the cache and refuses one that is not a
// real directory.
func (c *Cache) checkAreas() error {
	for _, sub := range areas {
		if err := c.mkdirInside(filepath.Join(c.dir, sub)); err != nil {
			return err
		}
	}
	return nil
}

// Describe says what the planted file was, for a listing of what was
// removed: its path, its kind and, for a link, its target.
func (e *PlantedError) Describe() string {
	if e.Target != "" {
		return fmt.Sprintf("%s (a symbolic link to %s)", e.Path, e.Target)
	}
	return fmt.Sprintf("%s (a %s)", e.Path, kindOf(e.Mode))
}

// PlantedFiles walks the cache, never through a link, and returns every
// file in it that is neither a regular file nor a directory: symbolic
// links, devices, FIFOs and sockets someone put there. The work
// directories under tmp/ are left out: each is made fresh (MkdirTemp) by
// the run that uses it, and what a node's command makes there is its own.
func (c *Cache) PlantedFiles() ([]*PlantedError, error) {
	var out []*PlantedError
	tmp := filepath.Join(c.dir, "tmp")
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() && filepath.Dir(p) == tmp {
			return fs.SkipDir
		}
		if d.IsDir() || d.Type().IsRegular() {
			return nil
		}
		info, ierr := d.Info()
		if ierr != nil {
			return nil
		}
		out = append(out, planted(p, info))
		return nil
	})
	return out, err
}

// removePlanted removes the planted files found by PlantedFiles; a link
// is removed, never what it points to.
func removePlanted(list []*PlantedError) int {
	n := 0
	for _, p := range list {
		if os.Remove(p.Path) == nil {
			n++
		}
	}
	return n
}

// removeLinksIn removes every file under dir that is neither a regular
// file nor a directory, never descending through a link.
func removeLinksIn(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Type().IsRegular() {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cache: removing %s: %w", p, err)
		}
		return nil
	})
}
