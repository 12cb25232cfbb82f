package dataset

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
)

// fetcher copies local sources into the blob store (remote ones go
// through the engine's sources.Resolver).
type fetcher struct {
	blobs nodes.BlobStore
	// verifyDeclared checks a local source against its declared sha256.
	verifyDeclared func(*source) error
}

func (n *Node) newFetcher(env *nodes.Env) *fetcher {
	return &fetcher{blobs: env.Blobs, verifyDeclared: n.verifyDeclared}
}

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

// fetchLocal stores a local source in the blob store. planned is what
// planning found for the file (Fingerprint), or the zero value: a source
// with a declared sha256 or a planned one is not hashed before it is
// copied, since the copy is hashed and checked against it anyway, and a
// planned file whose stamp stayed the same is not hashed again at all.
func (f *fetcher) fetchLocal(ctx context.Context, s *source, planned plannedSource) (string, string, error) {
	want, changed := s.SHA256, false
	if want == "" && planned.sum != "" {
		want, changed = planned.sum, true
	}
	if want == "" {
		sum, _, err := cache.FileSHA256(s.localPath)
		if err != nil {
			return "", "", fmt.Errorf("source %s: %w", s.URL, err)
		}
		want, changed = sum.String(), true
	}
	key := "local-" + want
	unlock, p, err := f.lock(ctx, key, want)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	if p != "" {
		if s.SHA256 != "" {
			// The blob is the declared bytes; the file may not be any more.
			if err := f.verifyDeclared(s); err != nil {
				return "", "", err
			}
		}
		return p, want, nil
	}
	part, err := f.blobs.PartialPath(key)
	if err != nil {
		return "", "", err
	}
	stableBefore := s.SHA256 == "" && planned.unchangedSince(s.localPath)
	if err := sources.CopyFile(s.localPath, part); err != nil {
		os.Remove(part)
		return "", "", fmt.Errorf("source %s: %w", s.URL, err)
	}
	// The planned hash stands for the copy when the file's stamp was the
	// planned one before and after it; else AddBlob hashes the copy (the
	// source may have changed since it was planned or while it was
	// copied).
	if adder, ok := f.blobs.(hashedBlobAdder); ok && stableBefore && planned.copiedWhole(s.localPath, part) {
		p, err := adder.AddHashedBlob(part, planned.sum)
		return p, want, err
	}
	p, _, err = f.blobs.AddBlob(part, want)
	var ce *cache.ChecksumError
	switch {
	case errors.As(err, &ce) && changed:
		return "", "", fmt.Errorf("source %s changed while it was being read; apply again", s.URL)
	case errors.As(err, &ce):
		return "", "", checksumError(s, ce.Got)
	}
	return p, want, err
}

// verifyDeclared checks a local source with a declared sha256 against it
// before its blob (or a store made from it) is used: an edited file fails
// with the checksum mismatch a fresh cache gives, instead of the cached
// copy being used without a word. The file is hashed only when its stamp
// changed since it last matched (the cache's stamps), so an unchanged
// file is read once.
func (n *Node) verifyDeclared(s *source) error {
	var err error
	if n.resolver != nil {
		err = n.resolver.VerifyLocal(s.localPath, s.SHA256)
	} else {
		var sum cache.ID
		if sum, _, err = cache.FileSHA256(s.localPath); err == nil && sum.String() != strings.ToLower(s.SHA256) {
			return checksumError(s, sum.String())
		}
	}
	if err == nil {
		return nil
	}
	sum, _, herr := cache.FileSHA256(s.localPath)
	if herr != nil {
		return fmt.Errorf("source %s: %w", s.URL, herr)
	}
	if sum.String() == strings.ToLower(s.SHA256) {
		return nil // it changed back while we looked
	}
	return checksumError(s, sum.String())
}

func checksumError(s *source, got string) error {
	return fmt.Errorf("source %s: checksum mismatch: expected sha256 %s, got %s; the file is not cached. Check the URL, or update sha256 if the file changed upstream", s.URL, s.SHA256, got)
}
