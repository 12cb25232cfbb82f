// Package noop answers an apply of an unchanged, fully cached pipeline
// without parsing or planning it, as make and ninja answer a no-op build
// from file stamps.
//
// After an apply in which every instance ran or was cached, the CLI saves
// a Record under the cache: the stamps of every file and directory the
// plan read outside the cache (configuration, variable and lock files,
// local inputs; package readset), the stamps of every cache file a hit on
// each instance reads (index entry, manifest, output files), the run's
// instances and what apply printed. The next apply with the same Key finds
// the record, stats each path once, and when every stamp is unchanged it
// knows that planning would compute the same action IDs and find every one
// a hit: it writes the run record and prints the same lines. Anything
// else (a changed or added file, an output edited or collected, a record
// older than an hour, which keeps the cache's last-use times fresh) sends
// apply down the ordinary path, which writes a new record.
package noop

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/internal/fstamp"
	"github.com/gatepipe/gatepipe/internal/readset"
)

// formatVersion changes whenever the record's meaning or encoding
// changes. 2: gob instead of JSON (decoding a 10,000-node record took
// 180 ms of a 0.3 s apply as JSON).
const formatVersion = 2

// MaxAge bounds how old a record may be. A cache hit on the ordinary path
// refreshes the entry's last-use time once per cache.TouchInterval, which
// gc reads; a record older than that sends apply down the ordinary path
// once.
const MaxAge = cache.TouchInterval

// Racy is how close to a record's writing a file may have changed and
// still be trusted by stamp: a file written in the same clock tick as the
// stamp was taken could change again without its stamp changing (git's
// "racily clean" entries).
const Racy = time.Second

// Record is what one successful apply leaves for the next.
type Record struct {
	Format   int             `json:"format"`
	Key      string          `json:"key"`
	Written  time.Time       `json:"written"`
	KeepRuns int             `json:"keep_runs"`
	Reads    []readset.Entry `json:"reads"`
	Nodes    []Node          `json:"nodes"`
	Objects  []Object        `json:"objects"`
	// Stdout is what apply printed after the summary and run record
	// lines (outputs, reports).
	Stdout string `json:"stdout"`
}

// Node is one instance: its run-record fields and the stamp of its cache
// index entry. An index entry is replaced (new inode) when its action
// runs again, and touched (new times) when a hit refreshes its last use,
// so only its inode, device and size are compared.
type Node struct {
	Addr   string       `json:"addr"`
	Kind   string       `json:"kind"`
	Action string       `json:"action"`
	Output string       `json:"output"`
	Index  fstamp.Stamp `json:"index"`
}

// Object is one output's stored files (manifest first) with their stamps.
// Stored files are never written after they are installed, so every
// field of their stamps must still match.
type Object struct {
	Files []readset.Entry `json:"files"`
}

// Key hashes what decides a plan besides the files it reads: the parts
// are the binary's identity, the path applied, the flags and environment
// variables that change what is planned. Callers list them.
func Key(parts ...string) string {
	h := sha256.New()
	fmt.Fprintf(h, "gatepipe noop %d\n", formatVersion)
	for _, p := range parts {
		fmt.Fprintf(h, "%d %s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Build makes the record, written at now, of a finished run whose
// instances all ran or were cached. It returns an error saying why no record can stand for the
// run: reads marked unstable, a read path changed since the plan read it
// (or too recently to trust its stamp), a cache entry gone.
func Build(c *cache.Cache, key string, reads *readset.Set, rec *engine.RunRecord, keepRuns int, stdout string, now time.Time) (*Record, error) {
	if why := reads.Stable(); why != "" {
		return nil, fmt.Errorf("the plan read what no stamp describes: %s", why)
	}
	if len(rec.Nodes) == 0 || rec.Failed() || rec.Counts[string(engine.RunCached)]+rec.Counts[string(engine.RunRan)] != len(rec.Nodes) {
		return nil, errors.New("not every instance ran or was cached")
	}
	entries := reads.Entries()
	if p, changed := readset.Changed(entries); changed {
		return nil, fmt.Errorf("%s changed while the pipeline was planned or applied", p)
	}
	for _, e := range entries {
		if racy(e.Stamp, now) {
			return nil, fmt.Errorf("%s changed less than %s ago", e.Path, Racy)
		}
	}
	r := &Record{Format: formatVersion, Key: key, Written: now, KeepRuns: keepRuns, Reads: entries, Stdout: stdout}
	seen := map[string]bool{}
	for _, n := range rec.Nodes {
		a, err := cache.ParseID(n.ActionID)
		if err != nil {
			return nil, fmt.Errorf("%s: no action ID", n.Addr)
		}
		index, files, err := c.HitFiles(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Addr, err)
		}
		ie, err := stampFile(index)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Addr, err)
		}
		r.Nodes = append(r.Nodes, Node{Addr: n.Addr, Kind: n.Kind, Action: n.ActionID, Output: n.OutputID, Index: ie.Stamp})
		if seen[n.OutputID] {
			continue
		}
		seen[n.OutputID] = true
		var obj Object
		for _, f := range files {
			e, err := stampFile(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n.Addr, err)
			}
			obj.Files = append(obj.Files, e)
		}
		r.Objects = append(r.Objects, obj)
	}
	return r, nil
}

func stampFile(p string) (readset.Entry, error) {
	e, err := readset.Stat(p)
	if err == nil && e.Absent {
		err = fmt.Errorf("%s is missing", p)
	}
	return e, err
}

// racy reports whether a file's stamp was taken too close to a change
// to tell a later change in the same tick apart.
func racy(s fstamp.Stamp, now time.Time) bool {
	limit := now.Add(-Racy).UnixNano()
	return s.Mtime > limit || s.Ctime > limit
}

// Save writes the record into the cache.
func Save(c *cache.Cache, r *Record) error {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(r); err != nil {
		return err
	}
	return c.WriteNoopRecord(r.Key, b.Bytes())
}

// ErrNone is returned by Load when the cache holds no record for a key.
var ErrNone = errors.New("no no-op record")

// Load reads the record for key from the cache directory dir, without
// opening (or creating) the cache.
func Load(dir, key string) (*Record, error) {
	data, err := os.ReadFile(cache.NoopRecordPath(dir, key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNone
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&r); err != nil {
		return nil, fmt.Errorf("no-op record: %w", err)
	}
	if r.Format != formatVersion || r.Key != key {
		return nil, errors.New("no-op record of another format or key")
	}
	return &r, nil
}

// Check says whether the record, found in the cache directory dir, still
// stands: why not, or "" when every stamp is unchanged. It stats every
// path once, in parallel.
func (r *Record) Check(dir string, now time.Time) string {
	if age := now.Sub(r.Written); age > MaxAge || age < 0 {
		return fmt.Sprintf("the record is %s old", age.Round(time.Second))
	}
	if p, changed := readset.Changed(r.Reads); changed {
		return p + " changed"
	}
	var (
		mu  sync.Mutex
		why string
	)
	fail := func(s string) {
		mu.Lock()
		if why == "" {
			why = s
		}
		mu.Unlock()
	}
	work := len(r.Nodes) + len(r.Objects)
	workers := min(4*runtime.GOMAXPROCS(0), max(1, work/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < work; i += workers {
				if i < len(r.Nodes) {
					n := r.Nodes[i]
					a, err := cache.ParseID(n.Action)
					if err != nil {
						fail(n.Addr + ": bad action ID")
						continue
					}
					e, err := readset.Stat(cache.IndexPath(dir, a))
					if err != nil || e.Absent || e.Stamp.Ino != n.Index.Ino || e.Stamp.Dev != n.Index.Dev || e.Stamp.Size != n.Index.Size {
						fail(n.Addr + ": its cache entry changed")
					}
					continue
				}
				if p, changed := readset.Changed(r.Objects[i-len(r.Nodes)].Files); changed {
					fail(p + " changed")
				}
			}
		}()
	}
	wg.Wait()
	return why
}

// RunRecord is the record of a run answered from r: every instance
// cached, as the ordinary path would have found it.
func (r *Record) RunRecord() *engine.RunRecord {
	rec := engine.NewRunRecord()
	for _, n := range r.Nodes {
		rec.Nodes = append(rec.Nodes, engine.NodeRecord{Addr: n.Addr, Kind: n.Kind, Status: engine.RunCached,
			ActionID: n.Action, OutputID: n.Output, CacheHit: true})
	}
	rec.Counts[string(engine.RunCached)] = len(r.Nodes)
	rec.Finished = time.Now().UTC()
	return rec
}
