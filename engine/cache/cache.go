package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrMiss is returned by Get when no intact entry exists.
var ErrMiss = errors.New("cache miss")

// TouchInterval is how stale an entry's mtime may get before a use
// refreshes it; gc relies on mtimes to find unused entries.
const TouchInterval = time.Hour

// Cache is an open cache directory. It is safe for concurrent use by
// goroutines and processes.
type Cache struct {
	dir string
	now func() time.Time
	// hash hashes a stored file whose stamp changed (FileSHA256; tests
	// count its calls).
	hash func(string) (ID, int64, error)
}

// Open opens (creating if needed) the cache at dir.
func Open(dir string) (*Cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o777); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	// The root may be a link the user made (a cache on another disk);
	// below it, nothing is followed.
	c := &Cache{dir: abs, now: time.Now, hash: FileSHA256}
	if err := c.checkAreas(); err != nil {
		return nil, err
	}
	readme := filepath.Join(abs, "README")
	if _, err := os.Lstat(readme); errors.Is(err, fs.ErrNotExist) {
		_ = writeFileAtomic(readme, []byte(readmeText))
	}
	return c, nil
}

const readmeText = `This directory holds cached data used by gatepipe: downloads, processed
datasets, checkpoints and run records, addressed by content. It can be
trimmed with "gatepipe cache gc" or removed entirely; removed entries are
recomputed on the next apply.
`

// SetClock replaces the clock, for tests.
func (c *Cache) SetClock(now func() time.Time) { c.now = now }

// Dir returns the cache root.
func (c *Cache) Dir() string { return c.dir }

func fanout(id string) string { return id[:2] }

func (c *Cache) actionFile(a ActionID) string { return IndexPath(c.dir, a) }

// IndexPath is the file of action a's index entry in the cache directory
// dir (see HitFiles).
func IndexPath(dir string, a ActionID) string {
	s := a.String()
	return filepath.Join(dir, "actions", fanout(s), s)
}

func (c *Cache) objectDir(o OutputID) string {
	s := o.String()
	return filepath.Join(c.dir, "objects", fanout(s), s)
}

func (c *Cache) manifestFile(o OutputID) string { return c.objectDir(o) + ".json" }

// stampFile holds the stamps of an output's files (see stamp).
func (c *Cache) stampFile(o OutputID) string { return c.objectDir(o) + ".stat" }

// Entry is a cache hit.
type Entry struct {
	Action ActionID
	Output OutputID
	Time   time.Time
}

// Manifest describes one output: its files and the node's output value.
type Manifest struct {
	Version int         `json:"version"`
	Files   []FileEntry `json:"files"`
	// Value is the node's output value, opaque to the cache.
	Value json.RawMessage `json:"value"`
}

// FileEntry is one output file.
type FileEntry struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Size returns the total size of the output files.
func (m *Manifest) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Get returns the entry for action a, or ErrMiss when there is none or it
// is damaged in any way.
func (c *Cache) Get(a ActionID) (Entry, error) {
	e, _, _, err := c.GetOutput(a)
	return e, err
}

// GetOutput is Get that also returns the output's manifest and directory.
// The index entry carries a copy of the manifest, so a hit costs one file
// read plus a stat per output file.
func (c *Cache) GetOutput(a ActionID) (Entry, *Manifest, string, error) {
	name := c.actionFile(a)
	data, mtime, err := readFileTime(name)
	if err != nil {
		return Entry{}, nil, "", ErrMiss
	}
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return Entry{}, nil, "", ErrMiss
	}
	e, ok := parseIndex(a, data[:nl+1])
	if !ok {
		return Entry{}, nil, "", ErrMiss
	}
	m, err := c.checkManifest(e.Output, data[nl+1:], false)
	if err != nil {
		return Entry{}, nil, "", ErrMiss
	}
	if now := c.now(); now.Sub(mtime) > TouchInterval {
		_ = os.Chtimes(name, now, now)
	}
	return e, m, c.objectDir(e.Output), nil
}

// readFileTime reads a file and returns its modification time from the
// same open file.
func readFileTime(name string) ([]byte, time.Time, error) {
	f, err := openNoFollow(name)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, time.Time{}, err
	}
	return data, info.ModTime(), nil
}

// Output returns the manifest and directory of an output, checking that
// the manifest is intact and every file is present with its size.
func (c *Cache) Output(o OutputID) (*Manifest, string, error) {
	m, err := c.checkOutput(o, false)
	if err != nil {
		return nil, "", err
	}
	return m, c.objectDir(o), nil
}

func (c *Cache) checkOutput(o OutputID, hashFiles bool) (*Manifest, error) {
	data, err := os.ReadFile(c.manifestFile(o))
	if err != nil {
		return nil, ErrMiss
	}
	return c.checkManifest(o, data, hashFiles)
}

// checkManifest parses manifest data that must hash to o and checks the
// output files it lists: each must be a regular file of its size whose
// stamp matches the one taken when it was stored or last verified; a file
// whose stamp differs is re-hashed (hashFiles re-hashes every file).
func (c *Cache) checkManifest(o OutputID, data []byte, hashFiles bool) (*Manifest, error) {
	if sha256.Sum256(data) != o {
		return nil, fmt.Errorf("manifest of %s does not match its hash", o.Short())
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", o.Short(), err)
	}
	dir := c.objectDir(o)
	if info, err := os.Lstat(dir); err != nil {
		return nil, fmt.Errorf("output %s: %w", o.Short(), err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("output %s: %w", o.Short(), planted(dir, info))
	}
	last := readStamps(c.stampFile(o))
	if len(last) != len(m.Files) {
		last = nil
	}
	stamps := make([]stamp, len(m.Files))
	rewrite := false
	for i, f := range m.Files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return nil, fmt.Errorf("output %s: file %q is not inside the output", o.Short(), f.Path)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		var prev stamp
		if last != nil {
			prev = last[i]
		}
		now, changed, err := checkFile(c.hash, p, f.Size, f.SHA256, prev, last != nil, hashFiles)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", o.Short(), err)
		}
		stamps[i] = now
		rewrite = rewrite || changed
	}
	if rewrite {
		writeStamps(c.stampFile(o), stamps)
	}
	return &m, nil
}

// writeObjectStamps records the stamps of a freshly installed output.
func (c *Cache) writeObjectStamps(o OutputID, m *Manifest) {
	dir := c.objectDir(o)
	stamps := make([]stamp, len(m.Files))
	for i, f := range m.Files {
		info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return
		}
		s, ok := stampOf(info)
		if !ok {
			return
		}
		stamps[i] = s
	}
	writeStamps(c.stampFile(o), stamps)
}

func (c *Cache) touch(name string) {
	now := c.now()
	if info, err := os.Stat(name); err == nil && now.Sub(info.ModTime()) > TouchInterval {
		_ = os.Chtimes(name, now, now)
	}
}

// Put stores the files under workDir (which it consumes: the directory is
// moved into the cache or removed) together with value, and records that
// action a produced them. It returns the output ID.
func (c *Cache) Put(a ActionID, workDir string, value []byte) (OutputID, error) {
	files, err := hashTree(workDir)
	if err != nil {
		return OutputID{}, fmt.Errorf("cache: hashing outputs: %w", err)
	}
	if value == nil {
		value = []byte("null")
	}
	m := Manifest{Version: 1, Files: files, Value: value}
	data, err := json.Marshal(m)
	if err != nil {
		return OutputID{}, err
	}
	o := OutputID(sha256.Sum256(data))
	installed, err := c.installObject(o, workDir, data)
	if err != nil {
		return OutputID{}, err
	}
	if installed {
		c.writeObjectStamps(o, &m)
	}
	if err := c.writeAtomic(c.manifestFile(o), data); err != nil {
		return OutputID{}, fmt.Errorf("cache: %w", err)
	}
	entry := append([]byte(fmt.Sprintf("v1 %s %s %d\n", a, o, c.now().UnixNano())), data...)
	if err := c.writeAtomic(c.actionFile(a), entry); err != nil {
		return OutputID{}, fmt.Errorf("cache: %w", err)
	}
	return o, nil
}

// installObject moves workDir to the object directory of o, unless an
// intact copy is already there; installed says which. The copy is checked against manifest (the
// data that hashes to o), not against the manifest file: a concurrent Put
// of the same content renames its directory in before it writes that file,
// and its object must not be mistaken for a damaged one.
func (c *Cache) installObject(o OutputID, workDir string, manifest []byte) (installed bool, err error) {
	dst := c.objectDir(o)
	if info, err := os.Lstat(dst); err == nil && !info.IsDir() {
		// A planted link or file: the rename below replaces it.
		if err := os.Remove(dst); err != nil {
			return false, fmt.Errorf("cache: %w", planted(dst, info))
		}
	} else if err == nil {
		if _, err := c.checkManifest(o, manifest, false); err == nil {
			return false, os.RemoveAll(workDir)
		}
		// A damaged copy: move it aside and replace it.
		trash := filepath.Join(c.dir, "tmp", fmt.Sprintf("damaged-%s-%d", o.Short(), c.now().UnixNano()))
		if err := os.Rename(dst, trash); err == nil {
			defer os.RemoveAll(trash)
		}
	}
	_ = os.Chmod(workDir, 0o755) // MkdirTemp makes 0700; a shared cache must be readable
	if err := syncTree(workDir); err != nil {
		return false, fmt.Errorf("cache: %w", err)
	}
	if err := c.mkdirInside(filepath.Dir(dst)); err != nil {
		return false, err
	}
	if err := os.Rename(workDir, dst); err != nil {
		if info, statErr := os.Lstat(dst); statErr == nil && info.IsDir() {
			// Another process installed the same output first.
			return false, os.RemoveAll(workDir)
		}
		return false, fmt.Errorf("cache: %w", err)
	}
	syncDir(filepath.Dir(dst))
	return true, nil
}

// hashTree seals and hashes every file under root.
func hashTree(root string) ([]FileEntry, error) {
	var files []FileEntry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file (symlinks and devices cannot be cached)", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// Stored files are read-only inodes of their own, so that nothing
		// outside the cache can change them through a hard link.
		if err := sealFile(p, info); err != nil {
			return fmt.Errorf("sealing %s: %w", p, err)
		}
		sum, size, err := FileSHA256(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, FileEntry{Path: filepath.ToSlash(rel), Size: size, SHA256: sum.String()})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, err
}

// TempDir creates a fresh work directory inside the cache, on the same
// file system as the objects so that Put can rename it.
func (c *Cache) TempDir(prefix string) (string, error) {
	return os.MkdirTemp(filepath.Join(c.dir, "tmp"), prefix+"-")
}

// Remove deletes the index entry of action a, so the next Get misses.
func (c *Cache) Remove(a ActionID) error {
	err := os.Remove(c.actionFile(a))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// parseIndex parses the first line of an index entry.
func parseIndex(a ActionID, data []byte) (Entry, bool) {
	if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
		data = data[:nl+1]
	}
	f := strings.Fields(string(data))
	if len(f) != 4 || f[0] != "v1" || f[1] != a.String() || !bytes.HasSuffix(data, []byte("\n")) {
		return Entry{}, false
	}
	out, err := ParseID(f[2])
	if err != nil {
		return Entry{}, false
	}
	ns, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return Entry{}, false
	}
	return Entry{Action: a, Output: out, Time: time.Unix(0, ns)}, true
}

// HitFiles returns the files a hit on action a reads: its index entry,
// then its output's manifest and files. A later apply that finds all of
// them unchanged (by stamp) knows the hit still stands without reading
// them.
func (c *Cache) HitFiles(a ActionID) (index string, output []string, err error) {
	index = c.actionFile(a)
	data, err := os.ReadFile(index)
	if err != nil {
		return "", nil, ErrMiss
	}
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return "", nil, ErrMiss
	}
	e, ok := parseIndex(a, data[:nl+1])
	if !ok {
		return "", nil, ErrMiss
	}
	var m Manifest
	if err := json.Unmarshal(data[nl+1:], &m); err != nil {
		return "", nil, ErrMiss
	}
	dir := c.objectDir(e.Output)
	output = append(output, c.manifestFile(e.Output))
	for _, f := range m.Files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return "", nil, ErrMiss
		}
		output = append(output, filepath.Join(dir, filepath.FromSlash(f.Path)))
	}
	return index, output, nil
}
