package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func (c *Cache) blobFile(sha string) string {
	return filepath.Join(c.dir, "blobs", fanout(sha), sha)
}

// BlobPath returns the path of the blob with the given SHA-256 and whether
// it is present and intact. A blob whose stamp differs from the one taken
// when it was stored is re-hashed; one whose content no longer matches its
// name is removed and reported absent, so it is fetched again.
func (c *Cache) BlobPath(sha string) (string, bool) {
	sha = strings.ToLower(sha)
	if len(sha) != 64 || strings.Trim(sha, "0123456789abcdef") != "" {
		return "", false
	}
	p := c.blobFile(sha)
	info, err := os.Lstat(p)
	if err != nil || !info.Mode().IsRegular() {
		return p, false
	}
	var last stamp
	stamps := readStamps(p + ".stat")
	if len(stamps) == 1 {
		last = stamps[0]
	}
	now, changed, err := checkFile(c.hash, p, info.Size(), sha, last, len(stamps) == 1, false)
	if err != nil {
		c.discard(p)
		return p, false
	}
	if changed {
		writeStamps(p+".stat", []stamp{now})
	}
	// The stamp file, not the blob, carries the last use for gc: touching
	// the blob would change its ctime and cost a re-hash.
	c.touch(p + ".stat")
	return p, true
}

// VerifyExternal reports whether the file at p, outside the cache (a blob
// of a Hugging Face cache, used in place), has SHA-256 sum. The file is
// hashed when its stamp differs from the one kept under external/ when it
// last matched, so an unchanged file is read once.
func (c *Cache) VerifyExternal(p, sum string) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return err
	}
	key := sha256.Sum256([]byte(abs + "\x00" + sum))
	name := hex.EncodeToString(key[:])
	stampPath := filepath.Join(c.dir, "external", fanout(name), name+".stat")
	var last stamp
	stamps := readStamps(stampPath)
	if len(stamps) == 1 {
		last = stamps[0]
	}
	now, changed, err := checkFile(c.hash, abs, info.Size(), sum, last, len(stamps) == 1, false)
	if err != nil {
		os.Remove(stampPath)
		return err
	}
	if changed {
		if err := c.mkdirInside(filepath.Dir(stampPath)); err == nil {
			writeStamps(stampPath, []stamp{now})
		}
	}
	return nil
}

// discard moves a damaged blob out of the store.
func (c *Cache) discard(p string) {
	trash := filepath.Join(c.dir, "tmp", fmt.Sprintf("damaged-blob-%s-%d", filepath.Base(p)[:12], c.now().UnixNano()))
	if os.Rename(p, trash) == nil {
		os.Remove(trash)
	}
	os.Remove(p + ".stat")
}

// PartialPath returns where an interrupted download identified by key is
// kept between attempts. Hold LockBlob(key) while using it.
func (c *Cache) PartialPath(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(c.dir, "partial", key+".part"), nil
}

func checkKey(key string) error {
	if strings.ContainsAny(key, "/\\\x00") || key == "" || strings.HasPrefix(key, ".") {
		return fmt.Errorf("invalid blob key %q", key)
	}
	return nil
}

// LockBlob serialises, across goroutines and processes, the download or
// copy of one blob identified by key (its SHA-256 when known, else a key
// derived from its source): two nodes fetching the same file share one
// partial file, so only one may write it at a time.
func (c *Cache) LockBlob(ctx context.Context, key string) (unlock func(), err error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return c.lock(ctx, filepath.Join(c.dir, "locks", "blob-"+key+".lock"), false)
}

// AddBlob verifies the finished file at tmpPath and moves it into the
// blob store under its SHA-256, which it returns with the blob's path.
// When want is not empty the content must hash to it, else the file is
// removed and an error returned: a blob is never stored under a name its
// content does not match.
func (c *Cache) AddBlob(tmpPath, want string) (path, sha string, err error) {
	want = strings.ToLower(want)
	if want != "" && (len(want) != 64 || strings.Trim(want, "0123456789abcdef") != "") {
		return "", "", fmt.Errorf("invalid sha256 %q", want)
	}
	// The finished file must be the regular file the caller wrote, not
	// a link planted at its name: it is hashed through the same open
	// file that is checked.
	f, err := c.openPart(tmpPath)
	if err != nil {
		return "", "", err
	}
	sum, serr := syncAndHash(f)
	f.Close()
	if serr != nil {
		return "", "", serr
	}
	sha = sum.String()
	if want != "" && sha != want {
		os.Remove(tmpPath)
		return "", "", &ChecksumError{Want: want, Got: sha}
	}
	path, err = c.storeBlob(tmpPath, sha)
	return path, sha, err
}

// AddHashedBlob moves the finished file at tmpPath into the blob store
// under sha without hashing it: for a caller that copied it from a file
// it hashed and whose stamp (size, times, inode) stayed the same from
// before that hash to after the copy, as the cache's stamps vouch for a
// stored file. Anything else goes through AddBlob.
func (c *Cache) AddHashedBlob(tmpPath, sha string) (string, error) {
	if _, err := ParseID(sha); err != nil {
		return "", fmt.Errorf("invalid sha256 %q", sha)
	}
	f, err := c.openPart(tmpPath)
	if err != nil {
		return "", err
	}
	serr := f.Sync()
	f.Close()
	if serr != nil {
		return "", serr
	}
	return c.storeBlob(tmpPath, strings.ToLower(sha))
}

// storeBlob moves the synced file at tmpPath, whose SHA-256 is sha, into
// the blob store (or drops it when the blob is there already).
func (c *Cache) storeBlob(tmpPath, sha string) (string, error) {
	if p, ok := c.BlobPath(sha); ok {
		os.Remove(tmpPath)
		return p, nil
	}
	if err := os.Chmod(tmpPath, 0o444); err != nil {
		return "", err
	}
	dst := c.blobFile(sha)
	if err := c.mkdirInside(filepath.Dir(dst)); err != nil {
		return "", err
	}
	if err := os.Rename(tmpPath, dst); err != nil {
		return "", fmt.Errorf("cache: storing blob: %w", err)
	}
	syncDir(filepath.Dir(dst))
	if info, err := os.Lstat(dst); err == nil {
		if s, ok := stampOf(info); ok {
			writeStamps(dst+".stat", []stamp{s})
		}
	}
	return dst, nil
}

// openPart opens a finished download or copy for reading: a regular
// file, never a link (which storeBlob would rename into the store).
func (c *Cache) openPart(p string) (*os.File, error) { return openNoFollow(p) }

// syncAndHash fsyncs the open file f and returns its SHA-256.
func syncAndHash(f *os.File) (ID, error) {
	if err := f.Sync(); err != nil {
		return ID{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ID{}, err
	}
	var id ID
	h.Sum(id[:0])
	return id, nil
}

// ChecksumError is a file whose SHA-256 is not the one expected.
type ChecksumError struct{ Want, Got string }

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("checksum mismatch: expected sha256 %s, got %s", e.Want, e.Got)
}

// isBlobName reports whether a file in the blob store is a blob (not its
// stamp file).
func isBlobName(name string) bool {
	_, err := ParseID(name)
	return err == nil
}

// GotSHA256 is the checksum the file had.
func (e *ChecksumError) GotSHA256() string { return e.Got }

// blobUseLock is the file whose shared locks say that a running node
// reads the blob sha (through a link to it), and whose exclusive lock
// DropBlob needs.
func (c *Cache) blobUseLock(sha string) string {
	return filepath.Join(c.dir, "locks", "use-"+strings.ToLower(sha)+".lock")
}

// UseBlob takes a shared lock saying that the caller reads the blob sha
// until it calls unlock: DropBlob leaves a blob in use alone.
func (c *Cache) UseBlob(ctx context.Context, sha string) (unlock func(), err error) {
	if err := checkKey(sha); err != nil {
		return nil, err
	}
	return c.lock(ctx, c.blobUseLock(sha), true)
}

// DropBlob removes the blob sha (and its stamp) unless a node uses it
// (UseBlob) or someone fetches it (LockBlob), and reports whether it was
// removed. A source dropped so is fetched again through its pin when a
// node needs it.
func (c *Cache) DropBlob(sha string) (bool, error) {
	if err := checkKey(sha); err != nil {
		return false, err
	}
	// Try once, without waiting: a blob in use stays.
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	unlockUse, err := c.lock(ctx, c.blobUseLock(sha), false)
	if err != nil {
		return false, nil
	}
	defer unlockUse()
	unlockFetch, err := c.lock(ctx, filepath.Join(c.dir, "locks", "blob-"+strings.ToLower(sha)+".lock"), false)
	if err != nil {
		return false, nil
	}
	defer unlockFetch()
	p := c.blobFile(strings.ToLower(sha))
	if err := os.Remove(p); err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, err
	}
	os.Remove(p + ".stat")
	return true, nil
}
