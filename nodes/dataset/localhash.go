package dataset

import (
	"fmt"
	"os"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/internal/fstamp"
	"github.com/gatepipe/gatepipe/sources"
)

// racyWindow is how recently before its hash a file may have been
// modified and still be trusted by its stamp: a write within the same
// tick of the file system's clock leaves the times as they were (cmd/go's
// build cache takes the same 2 s).
const racyWindow = 2 * time.Second

// plannedSource is what Fingerprint found for a local source: its
// SHA-256 and, when the file did not change while it was hashed and was
// last modified well before, its stamp, which then stands for that hash.
type plannedSource struct {
	sum    string
	size   int64
	stamp  fstamp.Stamp
	stable bool
}

// hashLocal hashes the local file p, stamping it before and after.
func hashLocal(p string) (plannedSource, error) {
	start := time.Now()
	before, err := os.Stat(p)
	if err != nil {
		return plannedSource{}, err
	}
	sum, size, err := cache.FileSHA256(p)
	if err != nil {
		return plannedSource{}, err
	}
	out := plannedSource{sum: sum.String(), size: size}
	after, err := os.Stat(p)
	if err != nil {
		return out, nil
	}
	st0, ok0 := fstamp.Of(before)
	st1, ok1 := fstamp.Of(after)
	out.stamp = st1
	out.stable = ok0 && ok1 && st0 == st1 && st1.Size == size && after.ModTime().Before(start.Add(-racyWindow))
	return out, nil
}

// unchangedSince reports whether the file p still has the stamp the plan
// hashed it with.
func (p plannedSource) unchangedSince(path string) bool {
	if !p.stable {
		return false
	}
	info, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fstamp.Of(info)
	return ok && st == p.stamp
}

// hashedBlobAdder stores a file under a SHA-256 its caller vouches for
// (the cache's AddHashedBlob).
type hashedBlobAdder interface {
	AddHashedBlob(tmpPath, sha string) (string, error)
}

// copyPlanned copies the local source s, which planning hashed to
// planned, into part and stores it under that hash without hashing the
// copy, when the source's stamp is the planned one before and after the
// copy and the blob store takes a vouched-for hash. ok is false when it
// did not (part may then hold a copy, which the caller overwrites).
func (f *fetcher) copyPlanned(s *source, planned plannedSource, part string) (path string, ok bool, err error) {
	adder, can := f.blobs.(hashedBlobAdder)
	if !can || !planned.unchangedSince(s.localPath) {
		return "", false, nil
	}
	if err := sources.CopyFile(s.localPath, part); err != nil {
		os.Remove(part)
		return "", false, fmt.Errorf("source %s: %w", s.URL, err)
	}
	info, err := os.Stat(part)
	if err != nil || info.Size() != planned.size || !planned.unchangedSince(s.localPath) {
		return "", false, nil
	}
	p, err := adder.AddHashedBlob(part, planned.sum)
	return p, err == nil, err
}
