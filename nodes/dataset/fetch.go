package dataset

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
)

// fetcher copies local sources into the blob store (remote ones go
// through the engine's sources.Resolver).
type fetcher struct {
	blobs nodes.BlobStore
}

func newFetcher(env *nodes.Env) *fetcher { return &fetcher{blobs: env.Blobs} }

// lock takes the blob lock for key and, once held, looks for the blob
// again: another node or process may have stored it meanwhile.
func (f *fetcher) lock(ctx context.Context, key, sha string) (unlock func(), path string, err error) {
	unlock, err = f.blobs.LockBlob(ctx, key)
	if err != nil {
		return nil, "", err
	}
	if sha != "" {
		if p, ok := f.blobs.BlobPath(sha); ok {
			return unlock, p, nil
		}
	}
	return unlock, "", nil
}

func (f *fetcher) fetchLocal(ctx context.Context, s *source) (string, string, error) {
	sum, _, err := cache.FileSHA256(s.localPath)
	if err != nil {
		return "", "", fmt.Errorf("source %s: %w", s.URL, err)
	}
	got := sum.String()
	if s.SHA256 != "" && got != s.SHA256 {
		return "", "", checksumError(s, got)
	}
	key := "local-" + got
	unlock, p, err := f.lock(ctx, key, got)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	if p != "" {
		return p, got, nil
	}
	part, err := f.blobs.PartialPath(key)
	if err != nil {
		return "", "", err
	}
	if err := sources.CopyFile(s.localPath, part); err != nil {
		os.Remove(part)
		return "", "", fmt.Errorf("source %s: %w", s.URL, err)
	}
	// AddBlob hashes the copy: the source may have changed while it was
	// copied.
	p, _, err = f.blobs.AddBlob(part, got)
	var ce *cache.ChecksumError
	if errors.As(err, &ce) {
		return "", "", fmt.Errorf("source %s changed while it was being read", s.URL)
	}
	return p, got, err
}

func checksumError(s *source, got string) error {
	return fmt.Errorf("source %s: checksum mismatch: expected sha256 %s, got %s; the file is not cached. Check the URL, or update sha256 if the file changed upstream", s.URL, s.SHA256, got)
}
