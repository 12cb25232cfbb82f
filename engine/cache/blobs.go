package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BlobPath returns the path of the blob with the given SHA-256 and whether
// it is present.
func (c *Cache) BlobPath(sha string) (string, bool) {
	sha = strings.ToLower(sha)
	if len(sha) != 64 {
		return "", false
	}
	p := filepath.Join(c.dir, "blobs", fanout(sha), sha)
	info, err := os.Stat(p)
	if err != nil || !info.Mode().IsRegular() {
		return p, false
	}
	c.touch(p)
	return p, true
}

// PartialPath returns where an interrupted download identified by key is
// kept between attempts.
func (c *Cache) PartialPath(key string) (string, error) {
	if strings.ContainsAny(key, `/\`) || key == "" || strings.HasPrefix(key, ".") {
		return "", fmt.Errorf("invalid partial key %q", key)
	}
	return filepath.Join(c.dir, "partial", key+".part"), nil
}

// AddBlob moves a finished download into the blob store. The caller has
// verified that tmpPath has the given SHA-256.
func (c *Cache) AddBlob(tmpPath, sha string) (string, error) {
	sha = strings.ToLower(sha)
	if len(sha) != 64 {
		return "", fmt.Errorf("invalid sha256 %q", sha)
	}
	dst := filepath.Join(c.dir, "blobs", fanout(sha), sha)
	if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
		return "", err
	}
	f, err := os.Open(tmpPath)
	if err != nil {
		return "", err
	}
	serr := f.Sync()
	f.Close()
	if serr != nil {
		return "", serr
	}
	if err := os.Rename(tmpPath, dst); err != nil {
		return "", fmt.Errorf("cache: storing blob: %w", err)
	}
	syncDir(filepath.Dir(dst))
	return dst, nil
}
