package sources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/internal/hfcachefixture"
)

// hfCacheSetup writes a Hugging Face cache holding dataset o/n at main
// (two LFS Parquet shards and a git-stored README) and returns its root
// and the files.
func hfCacheSetup(t *testing.T) (string, []hfcachefixture.File) {
	t.Helper()
	root := t.TempDir()
	files := []hfcachefixture.File{
		{Path: "data/train-00000-of-00002.parquet", Data: []byte("PAR1 shard zero PAR1"), LFS: true},
		{Path: "data/train-00001-of-00002.parquet", Data: []byte("PAR1 shard one PAR1"), LFS: true},
		{Path: "README.md", Data: []byte("# o/n\n")},
	}
	if _, err := hfcachefixture.Write(root, "datasets", "o/n", "main", commit, files); err != nil {
		t.Fatal(err)
	}
	return root, files
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestOfflineHubSourceFromTheHFCache: offline, a Hub source is pinned from
// the Hugging Face cache found through $HF_HUB_CACHE, and its files are
// read in place: nothing is copied into the blob store, and the cache is
// not modified.
func TestOfflineHubSourceFromTheHFCache(t *testing.T) {
	root, files := hfCacheSetup(t)
	before := treeState(t, root)
	blobs, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var log logLines
	env := map[string]string{"HF_HUB_CACHE": root}
	r := New(Options{Offline: true, Blobs: blobs, Getenv: func(k string) string { return env[k] }, Logf: log.logf, Infof: log.logf})
	ref := Ref{HF: "o/n", Files: []string{"data/train-*.parquet", "README.md"}}
	pin, err := r.Pinned(ref)
	if err != nil {
		t.Fatal(err)
	}
	if pin.Commit != commit || len(pin.Files) != 3 {
		t.Fatalf("pin %+v", pin)
	}
	for i, want := range []hfcachefixture.File{files[2], files[0], files[1]} {
		f := pin.Files[i]
		if f.Path != want.Path || f.SHA256 != shaOf(want.Data) || f.Size != int64(len(want.Data)) {
			t.Errorf("file %d: %+v, want %s", i, f, want.Path)
		}
		p, err := r.Fetch(context.Background(), ref, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p, root) {
			t.Errorf("%s was served from %s, not from the Hugging Face cache", f.Path, p)
		}
		if got, _ := os.ReadFile(p); string(got) != string(want.Data) {
			t.Errorf("%s: read %q", f.Path, got)
		}
		if !r.Has(f) {
			t.Errorf("Has(%s) = false", f.Path)
		}
	}
	if n := countFiles(t, filepath.Join(blobs.Dir(), "blobs")); n != 0 {
		t.Errorf("%d files copied into the blob store", n)
	}
	if after := treeState(t, root); after != before {
		t.Errorf("the Hugging Face cache was modified:\n%s\n---\n%s", before, after)
	}
	if !strings.Contains(log.String(), "from the Hugging Face cache") {
		t.Errorf("log: %s", log.String())
	}

	// A pattern the snapshot does not hold, an unknown repository: the
	// offline error says what the cache has.
	if _, err := r.Resolve(context.Background(), Ref{HF: "o/n", Files: []string{"data/test-*.parquet"}}, nil); !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), `matching "data/test-*.parquet"`) {
		t.Errorf("missing pattern: %v", err)
	}
	if _, err := r.Resolve(context.Background(), Ref{HF: "o/m", Files: []string{"*.parquet"}}, nil); err == nil || !strings.Contains(err.Error(), "closest in the cache: o/n") {
		t.Errorf("unknown repository: %v", err)
	}
}

// TestDamagedHFCacheEntriesAreNotUsed: a blob whose content no longer
// matches its name, or whose name differs from the lock's checksum, is
// not used (a warning names it): offline, the fetch fails saying so; a
// link to a blob still being written is as if absent.
func TestDamagedHFCacheEntriesAreNotUsed(t *testing.T) {
	root, files := hfCacheSetup(t)
	blobs, _ := cache.Open(t.TempDir())
	var log logLines
	env := map[string]string{"HF_HUB_CACHE": root}
	r := New(Options{Offline: true, Blobs: blobs, Getenv: func(k string) string { return env[k] }, Logf: log.logf})
	ref := Ref{HF: "o/n", Files: []string{"data/train-*.parquet"}}
	pin, err := r.Pinned(ref)
	if err != nil {
		t.Fatal(err)
	}
	// Verified once (its stamp kept), then damaged in place.
	if _, err := r.Fetch(context.Background(), ref, pin.Files[0], nil); err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(root, "datasets--o--n", "blobs", files[0].Etag())
	if err := os.WriteFile(blob, []byte("PAR1 shard 0ero PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = r.Fetch(context.Background(), ref, pin.Files[0], nil)
	if !errors.Is(err, ErrOffline) || !strings.Contains(log.String(), "is not used") || !strings.Contains(log.String(), "SHA-256") {
		t.Fatalf("damaged blob: err %v\nlog %s", err, log.String())
	}
	// A lock entry with another checksum than the blob's name.
	other := pin.Files[1]
	other.SHA256 = shaOf([]byte("something else"))
	if r.Has(other) {
		t.Error("Has accepted a blob named for another checksum")
	}
	if !strings.Contains(log.String(), "its blob is named") {
		t.Errorf("log: %s", log.String())
	}
}

// TestDamagedHFCacheEntriesStopThePin: pinning offline from the Hugging
// Face cache with a matching entry that cannot be used (a link leaving the
// blobs, a loop, a blob that is a directory or missing, a link to a blob
// still being written) is an error naming the entry, not a dataset built
// with the file left out; a git-named blob too big for git storage is
// refused without hashing it.
func TestDamagedHFCacheEntriesStopThePin(t *testing.T) {
	ab := strings.Repeat("ab", 32)
	tests := map[string]struct {
		damage func(repo, snap string)
		want   string
	}{
		"link outside the blobs": {func(repo, snap string) {
			os.WriteFile(filepath.Join(repo, "..", "secret"), []byte("x"), 0o644)
			os.Symlink("../../../../secret", filepath.Join(snap, "data", "train-00002-of-00003.parquet"))
		}, "outside the repository's blobs"},
		"link loop": {func(repo, snap string) {
			os.Symlink("../../../blobs/"+ab, filepath.Join(snap, "data", "train-00002-of-00003.parquet"))
			os.Symlink(ab, filepath.Join(repo, "blobs", ab))
		}, "cannot be read"},
		"blob is a directory": {func(repo, snap string) {
			os.Symlink("../../../blobs/"+ab, filepath.Join(snap, "data", "train-00002-of-00003.parquet"))
			os.Mkdir(filepath.Join(repo, "blobs", ab), 0o755)
		}, "is not a regular file"},
		"blob missing": {func(repo, snap string) {
			os.Symlink("../../../blobs/"+ab, filepath.Join(snap, "data", "train-00002-of-00003.parquet"))
		}, "cannot be read"},
		"link to a blob being written": {func(repo, snap string) {
			os.WriteFile(filepath.Join(repo, "blobs", ab+".incomplete"), []byte("PAR1 hal"), 0o644)
			os.Symlink("../../../blobs/"+ab+".incomplete", filepath.Join(snap, "data", "train-00002-of-00003.parquet"))
		}, "a blob still being written"},
		"big blob under a git name": {func(repo, snap string) {
			sha1 := strings.Repeat("cd", 20)
			f, _ := os.Create(filepath.Join(repo, "blobs", sha1))
			f.Truncate(lfsThreshold + 1) // sparse: nothing written
			f.Close()
			os.Symlink("../../../blobs/"+sha1, filepath.Join(snap, "data", "train-00002-of-00003.parquet"))
		}, "stores files over 10485760 bytes in LFS"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root, _ := hfCacheSetup(t)
			repo := filepath.Join(root, "datasets--o--n")
			tc.damage(repo, filepath.Join(repo, "snapshots", commit))
			blobs, _ := cache.Open(t.TempDir())
			env := map[string]string{"HF_HUB_CACHE": root}
			r := New(Options{Offline: true, Blobs: blobs, Getenv: func(k string) string { return env[k] }})
			pin, err := r.Resolve(context.Background(), Ref{HF: "o/n", Files: []string{"data/train-*.parquet"}}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "train-00002-of-00003.parquet") {
				t.Fatalf("pin %+v, err %v; want an error naming the entry and saying %q", pin, err, tc.want)
			}
		})
	}
}

// TestLockedHubFileFromTheHFCacheOnline: online, a file the lock pins is
// taken from the Hugging Face cache when it is there, with no request.
func TestLockedHubFileFromTheHFCacheOnline(t *testing.T) {
	root, files := hfCacheSetup(t)
	h, srv := newHub(t, nil)
	r, blobs := newResolver(t, srv, map[string]string{"HF_HUB_CACHE": root}, nil)
	f := File{Path: files[0].Path, SHA256: shaOf(files[0].Data), Size: int64(len(files[0].Data)),
		URL: "https://huggingface.co/datasets/o/n/resolve/" + commit + "/" + files[0].Path}
	p, err := r.Fetch(context.Background(), Ref{HF: "o/n"}, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.requests.Load() != 0 || !strings.HasPrefix(p, root) || countFiles(t, filepath.Join(blobs.Dir(), "blobs")) != 0 {
		t.Fatalf("served from %s after %d requests", p, h.requests.Load())
	}
}

func countFiles(t *testing.T, dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".stat") {
			n++
		}
		return nil
	})
	return n
}

// treeState lists every path under root with its size, mode and mtime.
func treeState(t *testing.T, root string) string {
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := os.Lstat(p)
		fmt.Fprintf(&b, "%s %d %v %d\n", p, info.Size(), info.Mode(), info.ModTime().UnixNano())
		return nil
	})
	return b.String()
}
