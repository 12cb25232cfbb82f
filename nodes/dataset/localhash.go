package dataset

import (
	"os"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/internal/fstamp"
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

// copiedWhole reports whether copy, taken of the file at path, holds
// the planned bytes: the file still has the planned stamp and the copy
// its size.
func (p plannedSource) copiedWhole(path, copy string) bool {
	info, err := os.Stat(copy)
	return err == nil && info.Size() == p.size && p.unchangedSince(path)
}

// hashedBlobAdder stores a file under a SHA-256 its caller vouches for
// (the cache's AddHashedBlob).
type hashedBlobAdder interface {
	AddHashedBlob(tmpPath, sha string) (string, error)
}
