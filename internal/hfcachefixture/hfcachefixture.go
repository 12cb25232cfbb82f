// Package hfcachefixture writes a Hugging Face Hub cache on disk in the
// layout huggingface_hub gives it (file_download.py): a repository folder
// KIND--OWNER--NAME with refs/REVISION holding the commit,
// blobs/ETAG holding each file (ETAG: the SHA-256 of an LFS file, the git
// blob SHA-1 of another), and snapshots/COMMIT/PATH relative symbolic
// links to ../../blobs/ETAG, for tests of code that reads such a cache.
package hfcachefixture

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// File is one file of a repository.
type File struct {
	Path string // in the repository, slash-separated
	Data []byte
	LFS  bool // stored with Git LFS: its blob is named by its SHA-256
}

// Etag is the name huggingface_hub gives a file's blob.
func (f File) Etag() string {
	if f.LFS {
		s := sha256.Sum256(f.Data)
		return hex.EncodeToString(s[:])
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(f.Data))
	h.Write(f.Data)
	return hex.EncodeToString(h.Sum(nil))
}

// Write adds a snapshot of repo ("OWNER/NAME") at commit to the cache at
// root, kind "datasets" or "models", with revision pointing to it, and
// returns the repository folder.
func Write(root, kind, repo, revision, commit string, files []File) (string, error) {
	dir := filepath.Join(root, kind+"--"+strings.ReplaceAll(repo, "/", "--"))
	for _, sub := range []string{"blobs", "refs", filepath.Join("snapshots", commit)} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return "", err
		}
	}
	// A revision such as refs/convert/parquet is a nested file, as
	// huggingface_hub writes it.
	ref := filepath.Join(dir, "refs", filepath.FromSlash(revision))
	if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(ref, []byte(commit), 0o644); err != nil {
		return "", err
	}
	for _, f := range files {
		blob := filepath.Join(dir, "blobs", f.Etag())
		if err := os.WriteFile(blob, f.Data, 0o644); err != nil {
			return "", err
		}
		link := filepath.Join(dir, "snapshots", commit, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return "", err
		}
		rel, err := filepath.Rel(filepath.Dir(link), blob)
		if err != nil {
			return "", err
		}
		os.Remove(link)
		if err := os.Symlink(rel, link); err != nil {
			return "", err
		}
	}
	return dir, nil
}
