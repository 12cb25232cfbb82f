package cache

import (
	"os"
	"path/filepath"
)

// writeAtomic writes data to name, inside the cache, as writeFileAtomic
// does, after making its directory without following a link
// (mkdirInside). Renaming over a planted link replaces the link.
func (c *Cache) writeAtomic(name string, data []byte) error {
	if err := c.mkdirInside(filepath.Dir(name)); err != nil {
		return err
	}
	return writeFileAtomic(name, data)
}

// writeFileAtomic writes data to a temporary file next to name (in a
// directory that exists), fsyncs it and renames it into place.
func writeFileAtomic(name string, data []byte) error {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// syncTree fsyncs every regular file and directory under root.
func syncTree(root string) error {
	return filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		serr := f.Sync()
		cerr := f.Close()
		if serr != nil {
			return serr
		}
		return cerr
	})
}

func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = f.Sync()
		f.Close()
	}
}
