package noop

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/internal/readset"
)

// fixture is a cache holding two actions (one output each) and a
// configuration directory with one file and an input directory, as a
// finished apply leaves them.
type fixture struct {
	cache            *cache.Cache
	conf, input, dir string
	outputs          []string // the object directories
	actions          []cache.ActionID
	run              *engine.RunRecord
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{dir: filepath.Join(root, "pipeline")}
	var err error
	if f.cache, err = cache.Open(filepath.Join(root, "cache")); err != nil {
		t.Fatal(err)
	}
	f.conf = filepath.Join(f.dir, "main.hcl")
	f.input = filepath.Join(f.dir, "data", "a.csv")
	os.MkdirAll(filepath.Dir(f.input), 0o755)
	os.WriteFile(f.conf, []byte(`command "a" {}`), 0o644)
	os.WriteFile(f.input, []byte("x\n1\n"), 0o644)
	f.run = engine.NewRunRecord()
	for i, name := range []string{"command.a", "command.b"} {
		work := filepath.Join(root, "work"+name)
		os.MkdirAll(work, 0o755)
		os.WriteFile(filepath.Join(work, "out.txt"), []byte(name), 0o644)
		a := cache.ActionID(sha256.Sum256([]byte(name)))
		o, err := f.cache.Put(a, work, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, files, err := f.cache.HitFiles(a)
		if err != nil {
			t.Fatal(err)
		}
		f.outputs = append(f.outputs, filepath.Dir(files[1]))
		f.actions = append(f.actions, a)
		status := engine.RunCached
		if i == 0 {
			status = engine.RunRan
		}
		f.run.Nodes = append(f.run.Nodes, engine.NodeRecord{Addr: name, Kind: "command", Status: status, ActionID: a.String(), OutputID: o.String()})
		f.run.Counts[string(status)]++
	}
	return f
}

// reads records what a plan of the fixture reads.
func (f *fixture) reads() *readset.Set {
	s := readset.New()
	for _, p := range []string{f.dir, f.conf, filepath.Dir(f.input), f.input, filepath.Join(f.dir, "absent.hcl")} {
		s.Add(p)
	}
	return s
}

// later is a clock past the racy window of files the fixture just wrote.
func later() time.Time { return time.Now().Add(2 * Racy) }

func TestRecordStandsUntilSomethingItDescribesChanges(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, f *fixture)
		why    string // part of Check's answer; "" when the record stands
	}{
		{"nothing", func(*testing.T, *fixture) {}, ""},
		{"configuration edited, same size", func(t *testing.T, f *fixture) {
			os.WriteFile(f.conf, []byte(`command "b" {}`), 0o644)
		}, "main.hcl changed"},
		{"input rewritten with its old mtime", func(t *testing.T, f *fixture) {
			info, _ := os.Stat(f.input)
			os.WriteFile(f.input, []byte("x\n2\n"), 0o644)
			os.Chtimes(f.input, info.ModTime(), info.ModTime())
		}, "a.csv changed"},
		{"file added to a directory the plan listed", func(t *testing.T, f *fixture) {
			os.WriteFile(filepath.Join(filepath.Dir(f.input), "b.csv"), nil, 0o644)
		}, "data changed"},
		{"probed file created", func(t *testing.T, f *fixture) {
			os.WriteFile(filepath.Join(f.dir, "absent.hcl"), nil, 0o644)
		}, "changed"},
		{"output file edited", func(t *testing.T, f *fixture) {
			p := filepath.Join(f.outputs[1], "out.txt")
			os.Chmod(p, 0o644)
			os.WriteFile(p, []byte("tampered"), 0o644)
		}, "out.txt changed"},
		{"output file chmod only", func(t *testing.T, f *fixture) {
			os.Chmod(filepath.Join(f.outputs[0], "out.txt"), 0o600)
		}, "out.txt changed"},
		{"output collected", func(t *testing.T, f *fixture) {
			os.RemoveAll(f.outputs[1])
		}, "changed"},
		{"action ran again (index replaced)", func(t *testing.T, f *fixture) {
			work := t.TempDir()
			os.WriteFile(filepath.Join(work, "out.txt"), []byte("new"), 0o644)
			if _, err := f.cache.Put(f.actions[0], work, nil); err != nil {
				t.Fatal(err)
			}
		}, "command.a: its cache entry changed"},
		{"index touched by a hit (last use)", func(t *testing.T, f *fixture) {
			p := cache.IndexPath(f.cache.Dir(), f.actions[1])
			now := time.Now()
			os.Chtimes(p, now, now)
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			now := later()
			r, err := Build(f.cache, "k", f.reads(), f.run, 3, "Outputs:\n", now)
			if err != nil {
				t.Fatal(err)
			}
			if err := Save(f.cache, r); err != nil {
				t.Fatal(err)
			}
			tc.change(t, f)
			got, err := Load(f.cache.Dir(), "k")
			if err != nil {
				t.Fatal(err)
			}
			why := got.Check(f.cache.Dir(), now)
			if tc.why == "" && why != "" || tc.why != "" && !strings.Contains(why, tc.why) {
				t.Fatalf("Check = %q, want %q", why, tc.why)
			}
		})
	}
}

func TestBuildRefusesWhatNoRecordCanStandFor(t *testing.T) {
	cases := []struct {
		name  string
		setup func(f *fixture, s *readset.Set) (now time.Time)
		want  string
	}{
		{"file changed within the racy window", func(f *fixture, s *readset.Set) time.Time { return time.Now() }, "less than"},
		{"unstable read", func(f *fixture, s *readset.Set) time.Time {
			s.Unstable(`input pattern "*/x" has wildcards in its directories`)
			return later()
		}, "wildcards"},
		{"read changed after the plan read it", func(f *fixture, s *readset.Set) time.Time {
			os.WriteFile(f.conf, []byte("changed during apply"), 0o644)
			return later()
		}, "changed while"},
		{"a failed instance", func(f *fixture, s *readset.Set) time.Time {
			f.run.Nodes[1].Status = engine.RunFailed
			f.run.Counts = map[string]int{"ran": 1, "failed": 1}
			return later()
		}, "not every instance"},
		{"an entry missing from the cache", func(f *fixture, s *readset.Set) time.Time {
			f.cache.Remove(f.actions[1])
			return later()
		}, "command.b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			s := f.reads()
			now := tc.setup(f, s)
			_, err := Build(f.cache, "k", s, f.run, 0, "", now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build error = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestLoadAndRunRecord(t *testing.T) {
	f := newFixture(t)
	now := later()
	if _, err := Load(f.cache.Dir(), "k"); err != ErrNone {
		t.Fatalf("Load of no record = %v, want ErrNone", err)
	}
	r, err := Build(f.cache, "k", f.reads(), f.run, 7, "out\n", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Objects) != 2 || len(r.Objects[0].Files) != 2 {
		t.Fatalf("objects %+v: want 2, each its manifest and one file", r.Objects)
	}
	Save(f.cache, r)
	if _, err := Load(f.cache.Dir(), "other"); err != ErrNone {
		t.Fatalf("Load of another key = %v, want ErrNone", err)
	}
	if why := r.Check(f.cache.Dir(), now.Add(MaxAge+time.Minute)); !strings.Contains(why, "old") {
		t.Fatalf("Check of an old record = %q, want it too old", why)
	}
	os.WriteFile(cache.NoopRecordPath(f.cache.Dir(), "k"), []byte("{truncated"), 0o644)
	if _, err := Load(f.cache.Dir(), "k"); err == nil || err == ErrNone {
		t.Fatalf("Load of a damaged record = %v, want an error", err)
	}
	rec := r.RunRecord()
	if rec.Counts["cached"] != 2 || len(rec.Nodes) != 2 || rec.Failed() {
		t.Fatalf("run record counts %v", rec.Counts)
	}
	for i, n := range rec.Nodes {
		if n.Status != engine.RunCached || !n.CacheHit || n.ActionID != f.run.Nodes[i].ActionID || n.OutputID != f.run.Nodes[i].OutputID {
			t.Fatalf("node %d = %+v", i, n)
		}
	}
	if Key("a", "bc") == Key("ab", "c") {
		t.Fatal("Key does not separate its parts")
	}
}
