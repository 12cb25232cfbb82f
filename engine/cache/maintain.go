package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ListedEntry is one action entry as listed by List.
type ListedEntry struct {
	Entry
	Size  int64
	Files int
	Used  time.Time
	// Part is the label of a node's part (one seed of a training), empty
	// for a node's output.
	Part string
}

// List returns every intact action entry, newest first.
func (c *Cache) List() ([]ListedEntry, error) {
	var out []ListedEntry
	err := c.walkActions(func(a ActionID, p string, info fs.FileInfo) {
		e, err := c.Get(a)
		if err != nil {
			return
		}
		m, _, err := c.Output(e.Output)
		if err != nil {
			return
		}
		le := ListedEntry{Entry: e, Size: m.Size(), Files: len(m.Files), Used: info.ModTime()}
		if label, ok := partLabel(m.Value); ok {
			le.Part = label
		}
		out = append(out, le)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out, err
}

func (c *Cache) walkActions(fn func(a ActionID, path string, info fs.FileInfo)) error {
	root := filepath.Join(c.dir, "actions")
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		a, perr := ParseID(d.Name())
		if perr != nil {
			return nil // temporary or foreign file
		}
		info, ierr := d.Info()
		if ierr != nil {
			return nil
		}
		fn(a, p, info)
		return nil
	})
}

// Usage is the disk usage of each area of the cache, in bytes.
type Usage struct {
	Objects, Blobs, Partial, Resume, Tmp, Runs, Total int64
}

// DiskUsage measures the cache.
func (c *Cache) DiskUsage() (Usage, error) {
	var u Usage
	for _, area := range []struct {
		name string
		dst  *int64
	}{{"objects", &u.Objects}, {"blobs", &u.Blobs}, {"partial", &u.Partial}, {"resume", &u.Resume}, {"tmp", &u.Tmp}, {"runs", &u.Runs}} {
		n, err := dirSize(filepath.Join(c.dir, area.name))
		if err != nil {
			return u, err
		}
		*area.dst = n
		u.Total += n
	}
	return u, nil
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n, err
}

// Problem is one damaged cache entry found by Verify.
type Problem struct {
	What string
	Err  error
}

// Verify re-hashes every output and blob, and finds the files planted in
// the cache (links and other files that are not the cache's own; see
// PlantedFiles). With repair, damaged entries are removed so the next
// apply recomputes them, and planted files are removed (a link, never
// what it points to).
func (c *Cache) Verify(repair bool) ([]Problem, error) {
	list, err := c.PlantedFiles()
	if err != nil {
		return nil, err
	}
	var problems []Problem
	for _, p := range list {
		problems = append(problems, Problem{What: "planted " + kindOf(p.Mode), Err: p})
	}
	if repair {
		removePlanted(list)
	}
	err = c.walkActions(func(a ActionID, p string, _ fs.FileInfo) {
		data, err := os.ReadFile(p)
		if err != nil {
			return
		}
		e, ok := parseIndex(a, data)
		if !ok {
			problems = append(problems, Problem{What: "action " + a.Short(), Err: errors.New("malformed index entry")})
			if repair {
				os.Remove(p)
			}
			return
		}
		if _, err := c.checkOutput(e.Output, true); err != nil {
			problems = append(problems, Problem{What: "action " + a.Short(), Err: err})
			if repair {
				os.Remove(p)
				os.RemoveAll(c.objectDir(e.Output))
				os.Remove(c.manifestFile(e.Output))
				os.Remove(c.stampFile(e.Output))
			}
		}
	})
	if err != nil {
		return problems, err
	}
	err = filepath.WalkDir(filepath.Join(c.dir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		want, perr := ParseID(d.Name())
		if perr != nil || !d.Type().IsRegular() {
			return nil // planted files are reported above
		}
		got, _, herr := FileSHA256(p)
		if herr != nil || got != want {
			problems = append(problems, Problem{What: "blob " + want.Short(), Err: fmt.Errorf("content has SHA-256 %s", got)})
			if repair {
				os.Remove(p)
				os.Remove(p + ".stat")
			}
		}
		return nil
	})
	return problems, err
}

// GCStats reports what GC removed.
type GCStats struct {
	Actions, Objects, Blobs, Other int
	Bytes                          int64
	// Beside is set when an apply held the cache, so that GC removed only
	// what no run holds (GCBeside).
	Beside bool
	// Planted lists the links and other foreign files GC found inside the
	// cache and removed (a link is removed, never what it points to).
	Planted []string
}

// GC removes entries not used for olderThan, objects no entry refers to,
// and leftovers of interrupted runs. It takes the cache lock exclusively,
// so it waits for running applies to finish.
func (c *Cache) GC(ctx context.Context, olderThan time.Duration) (GCStats, error) {
	unlock, err := c.LockExclusive(ctx)
	if err != nil {
		return GCStats{}, err
	}
	defer unlock()
	return c.gcAll(olderThan)
}

// GCNow is GC without waiting: when an apply holds the cache, it runs
// GCBeside instead.
func (c *Cache) GCNow(ctx context.Context, olderThan time.Duration) (GCStats, error) {
	try, cancel := context.WithTimeout(ctx, time.Millisecond)
	unlock, err := c.LockExclusive(try)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return GCStats{}, ctx.Err()
		}
		return c.GCBeside(olderThan)
	}
	defer unlock()
	return c.gcAll(olderThan)
}

// GCBeside removes, while applies run, only what no run can be using:
// downloads not used for olderThan that no node is reading or fetching
// (DropBlob's locks; a node that needs one later fetches it again
// through its pin), outputs that no entry refers to and that are older
// than olderThan (a running apply's new output gets its entry as soon as
// it is written), and interrupted downloads and checkpoints older than
// olderThan that no run holds (their locks). Entries, work directories and
// locks stay for GC.
func (c *Cache) GCBeside(olderThan time.Duration) (GCStats, error) {
	st := GCStats{Beside: true}
	if err := c.gcPlanted(&st); err != nil {
		return st, err
	}
	cutoff := c.now().Add(-olderThan)
	live := map[OutputID]bool{}
	err := c.walkActions(func(a ActionID, p string, info fs.FileInfo) {
		data, rerr := os.ReadFile(p)
		if e, ok := parseIndex(a, data); rerr == nil && ok {
			live[e.Output] = true
		}
	})
	if err != nil {
		return st, err
	}
	c.gcObjectsBefore(live, cutoff, &st)
	_ = filepath.WalkDir(filepath.Join(c.dir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isBlobName(d.Name()) || !c.blobUnusedSince(p, d, cutoff) {
			return nil
		}
		info, ierr := d.Info()
		if dropped, derr := c.DropBlob(d.Name()); ierr == nil && derr == nil && dropped {
			st.Blobs++
			st.Bytes += info.Size()
		}
		return nil
	})
	c.gcKeptAreas(cutoff, true, &st)
	return st, nil
}

// gcAll is GC under the exclusive lock.
func (c *Cache) gcAll(olderThan time.Duration) (GCStats, error) {
	var st GCStats
	if err := c.gcPlanted(&st); err != nil {
		return st, err
	}
	cutoff := c.now().Add(-olderThan)
	live := map[OutputID]bool{}
	err := c.walkActions(func(a ActionID, p string, info fs.FileInfo) {
		data, rerr := os.ReadFile(p)
		e, ok := parseIndex(a, data)
		if rerr != nil || !ok || info.ModTime().Before(cutoff) {
			if os.Remove(p) == nil {
				st.Actions++
			}
			return
		}
		live[e.Output] = true
	})
	if err != nil {
		return st, err
	}
	c.gcObjects(live, &st)
	c.gcBlobs(cutoff, &st)
	c.gcLeftovers(cutoff, &st)
	return st, nil
}

// gcPlanted removes the files planted in the cache before GC walks it,
// so that no walk below meets a link; what it removed is listed in st.
func (c *Cache) gcPlanted(st *GCStats) error {
	list, err := c.PlantedFiles()
	if err != nil {
		return err
	}
	for _, p := range list {
		if os.Remove(p.Path) == nil {
			st.Planted = append(st.Planted, p.Describe())
		}
	}
	return nil
}

// gcObjects removes the objects (and their metadata) no live entry
// refers to.
func (c *Cache) gcObjects(live map[OutputID]bool, st *GCStats) {
	c.gcObjectsBefore(live, time.Time{}, st)
}

// gcObjectsBefore is gcObjects for the objects last changed before
// cutoff (all of them when cutoff is zero).
func (c *Cache) gcObjectsBefore(live map[OutputID]bool, cutoff time.Time, st *GCStats) {
	objRoot := filepath.Join(c.dir, "objects")
	fans, _ := os.ReadDir(objRoot)
	for _, fan := range fans {
		if !fan.IsDir() {
			continue // never read through a link (gcPlanted removes them)
		}
		entries, _ := os.ReadDir(filepath.Join(objRoot, fan.Name()))
		for _, ent := range entries {
			name := ent.Name()
			idStr := name
			if ext := filepath.Ext(name); ext == ".json" || ext == ".stat" {
				idStr = name[:len(name)-len(ext)]
			}
			id, perr := ParseID(idStr)
			if perr == nil && live[id] {
				continue
			}
			p := filepath.Join(objRoot, fan.Name(), name)
			if info, err := ent.Info(); !cutoff.IsZero() && (err != nil || !info.ModTime().Before(cutoff)) {
				continue
			}
			n, _ := dirSize(p)
			if info, err := os.Lstat(p); err == nil && !info.IsDir() {
				n = info.Size()
			}
			if os.RemoveAll(p) == nil {
				st.Bytes += n
				if ent.IsDir() {
					st.Objects++
				}
			}
		}
	}
}

// gcBlobs removes the downloaded blobs not used since cutoff.
func (c *Cache) gcBlobs(cutoff time.Time, st *GCStats) {
	_ = filepath.WalkDir(filepath.Join(c.dir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isBlobName(d.Name()) {
			return nil
		}
		if info, err := d.Info(); err == nil && c.blobUnusedSince(p, d, cutoff) {
			if os.Remove(p) == nil {
				os.Remove(p + ".stat")
				st.Blobs++
				st.Bytes += info.Size()
			}
		}
		return nil
	})
}

// blobUnusedSince reports whether the blob at p was last used before
// cutoff: its stamp file's mtime (BlobPath touches that, not the blob),
// or the blob's own for blobs without one.
func (c *Cache) blobUnusedSince(p string, d fs.DirEntry, cutoff time.Time) bool {
	used := time.Time{}
	if info, err := os.Stat(p + ".stat"); err == nil {
		used = info.ModTime()
	}
	info, err := d.Info()
	return err == nil && info.ModTime().Before(cutoff) && used.Before(cutoff)
}

// gcLeftovers removes what runs leave behind: all of it for the areas
// only a running apply uses, what is older than cutoff for the areas kept
// for the next attempt.
func (c *Cache) gcLeftovers(cutoff time.Time, st *GCStats) {
	// Nobody holds the exclusive lock while an apply runs, so every work
	// directory and lock file left now belongs to a dead process. No-op
	// records are hints that may name what GC just removed; the next
	// apply plans and writes them again. Stamps of verified external
	// files only save a re-hash. Programs (the torch worker, one copy per
	// version) are written again by the next run that needs one.
	for _, area := range []string{"tmp", "locks", "noop", "external", "programs"} {
		entries, _ := os.ReadDir(filepath.Join(c.dir, area))
		for _, ent := range entries {
			p := filepath.Join(c.dir, area, ent.Name())
			n, _ := dirSize(p)
			if os.RemoveAll(p) == nil {
				st.Other++
				st.Bytes += n
			}
		}
	}
	c.gcKeptAreas(cutoff, false, st)
}

// gcKeptAreas removes interrupted downloads and training checkpoints,
// kept for the next attempt, that nobody came back for since cutoff;
// beside running applies, only those whose lock no run holds (a partial
// download's blob lock, a training's resume lock).
func (c *Cache) gcKeptAreas(cutoff time.Time, beside bool, st *GCStats) {
	lockOf := map[string]func(name string) string{
		"partial": func(name string) string { return "blob-" + strings.TrimSuffix(name, ".part") + ".lock" },
		"resume":  func(name string) string { return "resume-" + name + ".lock" },
	}
	for _, area := range []string{"partial", "resume"} {
		entries, _ := os.ReadDir(filepath.Join(c.dir, area))
		for _, ent := range entries {
			if info, err := ent.Info(); err != nil || !info.ModTime().Before(cutoff) {
				continue
			}
			unlock := func() {}
			if beside {
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				var err error
				unlock, err = c.lock(ctx, filepath.Join(c.dir, "locks", lockOf[area](ent.Name())), false)
				cancel()
				if err != nil {
					continue // a run holds it
				}
			}
			p := filepath.Join(c.dir, area, ent.Name())
			n, _ := dirSize(p)
			if os.RemoveAll(p) == nil {
				st.Other++
				st.Bytes += n
			}
			unlock()
		}
	}
}
