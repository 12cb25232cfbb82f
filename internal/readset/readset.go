// Package readset records the files and directories a plan read from
// outside the cache: configuration files, variable files, the lock file,
// the directories searched for them, and every local file a node's
// fingerprint or a configuration function read. Each is stamped (fstamp)
// before it is read, so that a later apply can tell, with one stat per
// path, that none of them changed since; a path that changed while the
// plan was running is caught by Changed.
//
// Code that reads a file at plan time calls Add (or Set.Add) first. Code
// that depends on something a stamp cannot describe calls Unstable, and
// no apply is then answered from the record.
package readset

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"sync"

	"github.com/gatepipe/gatepipe/internal/fstamp"
)

// Entry is one recorded path and what stat said of it when it was first
// read. Absent paths (a probe for a file that was not there) are recorded
// too: creating one changes what the plan would read.
type Entry struct {
	Path   string       `json:"path"`
	Dir    bool         `json:"dir,omitempty"`
	Absent bool         `json:"absent,omitempty"`
	Stamp  fstamp.Stamp `json:"stamp"`
}

// Set is the paths read by one plan. The nil Set records nothing. A Set
// is safe for concurrent use.
type Set struct {
	mu       sync.Mutex
	entries  map[string]Entry
	unstable []string
}

// New returns an empty set.
func New() *Set { return &Set{entries: map[string]Entry{}} }

// Add stamps path, unless it is recorded already (the first stamp is the
// one the plan read).
func (s *Set) Add(path string) {
	if s == nil || path == "" {
		return
	}
	s.mu.Lock()
	_, seen := s.entries[path]
	s.mu.Unlock()
	if seen {
		return
	}
	e, err := Stat(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.unstable = append(s.unstable, path+": "+err.Error())
		return
	}
	if _, seen := s.entries[path]; !seen {
		s.entries[path] = e
	}
}

// Unstable marks the plan as depending on something no stamp describes.
func (s *Set) Unstable(reason string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.unstable = append(s.unstable, reason)
	s.mu.Unlock()
}

// Stable returns why the set cannot stand for its plan's inputs, or ""
// when it can.
func (s *Set) Stable() string {
	if s == nil {
		return "nothing was recorded"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unstable) > 0 {
		return s.unstable[0]
	}
	return ""
}

// Entries returns the recorded paths, sorted.
func (s *Set) Entries() []Entry {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	out := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Stat describes path as an Entry: a missing path is Absent, not an
// error; a path that exists but gives no usable stamp is an error.
func Stat(path string) (Entry, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{Path: path, Absent: true}, nil
	}
	if err != nil {
		return Entry{}, err
	}
	st, ok := fstamp.Of(info)
	if !ok {
		return Entry{}, errors.New("no change time or inode on this platform")
	}
	return Entry{Path: path, Dir: info.IsDir(), Stamp: st}, nil
}

// Changed returns the first entry whose path no longer stats the same,
// and whether there is one.
func Changed(entries []Entry) (string, bool) {
	for _, e := range entries {
		now, err := Stat(e.Path)
		if err != nil || now != e {
			return e.Path, true
		}
	}
	return "", false
}

type ctxKey struct{}

// With returns a context carrying s, for code that reads files at plan
// time (node fingerprints).
func With(ctx context.Context, s *Set) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, s)
}

// From returns the set ctx carries, or nil.
func From(ctx context.Context) *Set {
	s, _ := ctx.Value(ctxKey{}).(*Set)
	return s
}

// Add records path in the set ctx carries, if any.
func Add(ctx context.Context, path string) { From(ctx).Add(path) }

// ReadFile records path in the set ctx carries and reads it.
func ReadFile(ctx context.Context, path string) ([]byte, error) {
	Add(ctx, path)
	return os.ReadFile(path)
}
