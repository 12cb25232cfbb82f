package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

const lockRetry = 50 * time.Millisecond

// LockShared takes the cache-wide lock in shared mode, as every apply does;
// gc takes it exclusively so it never deletes what a running apply uses.
func (c *Cache) LockShared(ctx context.Context) (unlock func(), err error) {
	return c.lock(ctx, filepath.Join(c.dir, "lock"), true)
}

// LockExclusive takes the cache-wide lock exclusively.
func (c *Cache) LockExclusive(ctx context.Context) (unlock func(), err error) {
	return c.lock(ctx, filepath.Join(c.dir, "lock"), false)
}

// LockAction serialises work on one action across processes: the holder
// computes it, and others wait and then find it in the cache. onWait,
// when not nil, is called once before waiting for another holder.
func (c *Cache) LockAction(ctx context.Context, a ActionID, onWait func()) (unlock func(), err error) {
	s := a.String()
	p := filepath.Join(c.dir, "locks", fanout(s), s+".lock")
	if err := c.mkdirInside(filepath.Dir(p)); err != nil {
		return nil, err
	}
	if onWait != nil {
		fl := flock.New(p)
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("cache lock %s: %w", p, err)
		}
		if ok {
			return func() { _ = fl.Unlock() }, nil
		}
		onWait()
	}
	return c.lock(ctx, p, false)
}

func (c *Cache) lock(ctx context.Context, path string, shared bool) (func(), error) {
	// flock opens the file with O_CREATE, which would follow a planted
	// link and create its target: remove one first.
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("cache lock: %w", planted(path, info))
		}
	}
	fl := flock.New(path)
	var ok bool
	var err error
	if shared {
		ok, err = fl.TryRLockContext(ctx, lockRetry)
	} else {
		ok, err = fl.TryLockContext(ctx, lockRetry)
	}
	if err != nil {
		return nil, fmt.Errorf("cache lock %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("cache lock %s: not acquired", path)
	}
	return func() { _ = fl.Unlock() }, nil
}
