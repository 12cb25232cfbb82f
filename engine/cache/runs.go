package cache

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// WriteRun stores a run record under runs/<id>.json.
func (c *Cache) WriteRun(id string, data []byte) error {
	return writeFileAtomic(filepath.Join(c.dir, "runs", id+".json"), data)
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
