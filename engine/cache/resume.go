package cache

import (
	"context"
	"os"
	"path/filepath"
)

// ResumeDir returns the directory where one node instance, identified by
// key (a hash of its address and pipeline directory, not of its
// configuration), keeps what lets an interrupted run go on: training
// checkpoints. It holds the key's lock until unlock, so two applies never
// write one directory. The directory survives a failed, cancelled or
// killed run; the engine removes it once the node's output is stored, and
// gc removes one left untouched longer than its age. What is inside must
// say which configuration wrote it: a changed node reuses the directory.
func (c *Cache) ResumeDir(ctx context.Context, key string) (dir string, unlock func(), err error) {
	if err := checkKey(key); err != nil {
		return "", nil, err
	}
	unlock, err = c.lock(ctx, filepath.Join(c.dir, "locks", "resume-"+key+".lock"), false)
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(c.dir, "resume", key)
	if info, err := os.Lstat(dir); err == nil && !info.IsDir() {
		os.Remove(dir) // a planted link: the checkpoints are written here
	}
	if err := c.mkdirInside(dir); err != nil {
		unlock()
		return "", nil, err
	}
	// A node writes its checkpoints into dir by name; links planted
	// inside would take those writes out of the cache.
	if err := removeLinksIn(dir); err != nil {
		unlock()
		return "", nil, err
	}
	return dir, unlock, nil
}

// DropResume removes the resume directory of key; call it holding the
// lock ResumeDir took.
func (c *Cache) DropResume(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(c.dir, "resume", key))
}
