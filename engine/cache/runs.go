package cache

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// WriteRun stores a run record under runs/<id>.json.
func (c *Cache) WriteRun(id string, data []byte) error {
	return c.writeAtomic(filepath.Join(c.dir, "runs", id+".json"), data)
}

// Runs returns the paths of all run records, oldest first (run IDs sort by
// time).
func (c *Cache) Runs() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(c.dir, "runs"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(c.dir, "runs", e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// PruneRuns removes the oldest run records beyond the newest keep, and
// returns how many it removed.
func (c *Cache) PruneRuns(keep int) (int, error) {
	runs, err := c.Runs()
	if err != nil || len(runs) <= keep {
		return 0, err
	}
	removed := 0
	for _, p := range runs[:len(runs)-keep] {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return removed, err
		}
		removed++
	}
	return removed, nil
}

// NoopRecordPath is where the no-op record for key is kept (package
// engine/noop): noop/<key>.rec under the cache directory dir. It is a
// function of the directory so that apply can look for a record before
// opening (and so creating) a cache.
func NoopRecordPath(dir, key string) string {
	return filepath.Join(dir, "noop", key+".rec")
}

// WriteNoopRecord stores a no-op record, replacing the last one for key.
func (c *Cache) WriteNoopRecord(key string, data []byte) error {
	return c.writeAtomic(NoopRecordPath(c.dir, key), data)
}
