package sources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
)

func shaOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// hub is a fake Hugging Face Hub and Kaggle API laid out as a mirror
// serves them: /HOST/PATH.
type hub struct {
	files  map[string][]byte // "huggingface.co/datasets/o/n/resolve/COMMIT/path"
	commit string
	gated  bool // require "Authorization: Bearer secret"
	// failAPI answers this many Hub API requests with 503 first.
	failAPI  atomic.Int64
	requests atomic.Int64
	bytes    atomic.Int64
}

const commit = "0123456789abcdef0123456789abcdef01234567"

func newHub(t *testing.T, files map[string][]byte) (*hub, *httptest.Server) {
	h := &hub{files: map[string][]byte{}, commit: commit}
	for p, b := range files {
		h.files[p] = b
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	p := strings.TrimPrefix(r.URL.Path, "/")
	if h.gated && strings.HasPrefix(p, "huggingface.co/") && r.Header.Get("Authorization") != "Bearer secret" {
		http.Error(w, "gated", http.StatusUnauthorized)
		return
	}
	if strings.HasPrefix(p, "www.kaggle.com/") {
		if u, k, ok := r.BasicAuth(); !ok || u != "me" || k != "key" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	const api = "huggingface.co/api/datasets/o/n/"
	if strings.HasPrefix(p, api) && h.failAPI.Add(-1) >= 0 {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	switch {
	case strings.HasPrefix(p, api+"revision/"):
		json.NewEncoder(w).Encode(map[string]string{"sha": h.commit})
		return
	case strings.HasPrefix(p, api+"tree/"+h.commit):
		dir := strings.TrimPrefix(strings.TrimPrefix(p, api+"tree/"+h.commit), "/")
		var out []map[string]any
		prefix := "huggingface.co/datasets/o/n/resolve/" + h.commit + "/"
		subdirs := map[string]bool{}
		for fp, b := range h.files {
			rel, ok := strings.CutPrefix(fp, prefix)
			if ok && dir != "" {
				if d := filepath.Dir(filepath.Dir(rel)); d == dir && !subdirs[filepath.Dir(rel)] {
					subdirs[filepath.Dir(rel)] = true
					out = append(out, map[string]any{"type": "directory", "path": filepath.Dir(rel)})
				}
			}
			if !ok || dir != "" && filepath.Dir(rel) != dir {
				continue
			}
			e := map[string]any{"type": "file", "path": rel, "size": len(b)}
			if strings.HasSuffix(rel, ".parquet") || strings.HasSuffix(rel, ".evil") {
				e["lfs"] = map[string]any{"oid": shaOf(b), "size": len(b)}
			}
			out = append(out, e)
		}
		json.NewEncoder(w).Encode(out)
		return
	}
	b, ok := h.files[p]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		return
	}
	h.bytes.Add(int64(len(b)))
	w.Write(b)
}

func newResolver(t *testing.T, srv *httptest.Server, env map[string]string, mod func(*Options)) (*Resolver, *cache.Cache) {
	t.Helper()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lock, diags := LoadLock(filepath.Join(t.TempDir(), LockFileName))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	m, err := ParseMirror(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Lock: lock, Mirror: m, Blobs: c, Getenv: func(k string) string { return env[k] }}
	if mod != nil {
		mod(&o)
	}
	r := New(o)
	r.SetRetry(1, time.Millisecond, time.Second)
	return r, c
}

func TestResolveHFPinsCommitAndPublishedChecksums(t *testing.T) {
	shard0, shard1 := []byte("parquet shard 0"), []byte("parquet shard 1")
	base := "huggingface.co/datasets/o/n/resolve/" + commit + "/"
	h, srv := newHub(t, map[string][]byte{
		base + "data/train-00000-of-00002.parquet": shard0,
		base + "data/train-00001-of-00002.parquet": shard1,
		base + "data/test-00000-of-00001.parquet":  []byte("test shard"),
		base + "README.md":                         []byte("# card"),
	})
	r, _ := newResolver(t, srv, nil, nil)
	ref := Ref{HF: "o/n", Files: []string{"data/train-*.parquet"}}
	pin, err := r.Resolve(context.Background(), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pin.Commit != commit || len(pin.Files) != 2 {
		t.Fatalf("pin = %+v", pin)
	}
	if pin.Files[0].SHA256 != shaOf(shard0) || pin.Files[1].Path != "data/train-00001-of-00002.parquet" {
		t.Fatalf("files = %+v", pin.Files)
	}
	if h.bytes.Load() != 0 {
		t.Fatalf("resolving downloaded %d bytes; the published checksums need none", h.bytes.Load())
	}
	for _, f := range pin.Files {
		p, err := r.Fetch(context.Background(), ref, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if shaOf(got) != f.SHA256 {
			t.Fatalf("%s: wrong bytes", f.Path)
		}
	}
	// The lock file round-trips.
	if err := r.Lock().Save(); err != nil {
		t.Fatal(err)
	}
	again, diags := LoadLock(r.Lock().Path())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if p, ok := again.Get(ref.Key()); !ok || p.Commit != commit || len(p.Files) != 2 || p.Files[1].SHA256 != shaOf(shard1) || p.Files[0].Size != int64(len(shard0)) {
		t.Fatalf("reloaded pin = %+v, %v", p, ok)
	}
	// A pattern matching nothing is an error naming it.
	if _, err := r.Resolve(context.Background(), Ref{HF: "o/n", Files: []string{"data/val-*.parquet"}}, nil); err == nil || !strings.Contains(err.Error(), "data/val-*.parquet") {
		t.Fatalf("err = %v", err)
	}
}

// TestWildcardDirectory: a wildcard in a pattern's directory (the Hub's
// Parquet conversion names a partly converted split partial-train) lists
// the parent and the matching sub-directories; higher wildcards are
// refused.
func TestWildcardDirectory(t *testing.T) {
	base := "huggingface.co/datasets/o/n/resolve/" + commit + "/"
	_, srv := newHub(t, map[string][]byte{
		base + "general/partial-train/0000.parquet": []byte("a"),
		base + "general/partial-train/0001.parquet": []byte("b"),
		base + "general/test/0000.parquet":          []byte("c"),
	})
	r, _ := newResolver(t, srv, nil, nil)
	pin, err := r.Resolve(context.Background(), Ref{HF: "o/n", Files: []string{"general/*train/*.parquet"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pin.Files) != 2 || pin.Files[0].Path != "general/partial-train/0000.parquet" {
		t.Fatalf("files %+v, want the two of general/partial-train", pin.Files)
	}
	_, err = r.Resolve(context.Background(), Ref{HF: "o/n", Files: []string{"*/test/*.parquet"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "not higher") {
		t.Fatalf("err = %v, want a wildcard two levels up refused", err)
	}
}

// TestHubAPIIsRetried: the Hub's revision and tree listings are retried
// on a 5xx as file downloads are, and give up after the retry budget.
func TestHubAPIIsRetried(t *testing.T) {
	h, srv := newHub(t, map[string][]byte{"huggingface.co/datasets/o/n/resolve/" + commit + "/data/a.parquet": []byte("a")})
	r, _ := newResolver(t, srv, nil, nil) // one retry
	h.failAPI.Store(1)
	ref := Ref{HF: "o/n", Files: []string{"data/*.parquet"}}
	if _, err := r.Resolve(context.Background(), ref, nil); err != nil {
		t.Fatalf("a 503 from the Hub API was not retried: %v", err)
	}
	h.failAPI.Store(5)
	ref.Revision = "v2"
	if _, err := r.Resolve(context.Background(), ref, nil); err == nil || !strings.Contains(err.Error(), "giving up after 2 attempts") || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v, want it to give up after 2 attempts naming the 503", err)
	}
}

func TestHubListingCannotEscapeTheSource(t *testing.T) {
	base := "huggingface.co/datasets/o/n/resolve/" + commit + "/"
	_, srv := newHub(t, map[string][]byte{base + "data/..": []byte("x")})
	r, _ := newResolver(t, srv, nil, nil)
	// The listing of data/ names "data/..", which "data/*" matches.
	_, err := r.Resolve(context.Background(), Ref{HF: "o/n", Files: []string{"data/*"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "not a relative path") {
		t.Fatalf("a listed path leaving the source: %v", err)
	}
	for _, bad := range []string{"../a", "/etc/passwd", "a/../../b", "a\\b", "", ".", "a//b"} {
		if CheckRelPath(bad) == nil {
			t.Errorf("CheckRelPath(%q) accepted it", bad)
		}
	}
}

func TestCredentials(t *testing.T) {
	base := "huggingface.co/datasets/o/n/resolve/" + commit + "/"
	h, srv := newHub(t, map[string][]byte{
		base + "data/train-00000-of-00001.parquet":                   []byte("gated"),
		"www.kaggle.com/api/v1/datasets/download/kmader/skin-cancer": []byte("PK zip"),
	})
	h.gated = true
	ctx := context.Background()
	hfRef := Ref{HF: "o/n", Files: []string{"data/*.parquet"}, Credentials: CredsHF}
	kgRef := Ref{URL: "https://www.kaggle.com/api/v1/datasets/download/kmader/skin-cancer", Name: "ham.zip", Credentials: CredsKaggle}

	// The fake Hub is a loopback mirror the user has opted in: it stands
	// for the Hub and Kaggle themselves (TestCredentialsStayWithTheirHost
	// covers the other destinations).
	optIn := func(env map[string]string) map[string]string {
		if env == nil {
			env = map[string]string{}
		}
		env[MirrorCredentialsEnv] = srv.URL
		return env
	}
	r, _ := newResolver(t, srv, optIn(nil), nil)
	before := h.requests.Load()
	if _, err := r.Resolve(ctx, hfRef, nil); err == nil || !strings.Contains(err.Error(), "set HF_TOKEN") {
		t.Fatalf("missing HF token: %v", err)
	}
	if _, err := r.Resolve(ctx, kgRef, nil); err == nil || !strings.Contains(err.Error(), "KAGGLE_USERNAME and KAGGLE_KEY") {
		t.Fatalf("missing Kaggle key: %v", err)
	}
	if h.requests.Load() != before {
		t.Fatal("a source declaring credentials was requested without them")
	}
	// Without declared credentials the server's 401 says what to set.
	if _, err := r.Resolve(ctx, Ref{HF: "o/n", Files: []string{"data/*.parquet"}}, nil); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("401: %v", err)
	}
	// A wrong token: the 401 is explained.
	r, _ = newResolver(t, srv, optIn(map[string]string{"HF_TOKEN": "wrong"}), nil)
	if _, err := r.Resolve(ctx, hfRef, nil); err == nil || !strings.Contains(err.Error(), "gated") {
		t.Fatalf("wrong token: %v", err)
	}
	// With credentials from the environment and from kaggle.json.
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".kaggle"), 0o700)
	os.WriteFile(filepath.Join(home, ".kaggle", "kaggle.json"), []byte(`{"username":"me","key":"key"}`), 0o600)
	r, _ = newResolver(t, srv, optIn(map[string]string{"HF_TOKEN": "secret"}), func(o *Options) { o.Home = home })
	pin, err := r.Resolve(ctx, hfRef, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Fetch(ctx, hfRef, pin.Files[0], nil); err != nil {
		t.Fatal(err)
	}
	kp, err := r.Resolve(ctx, kgRef, nil)
	if err != nil {
		t.Fatal(err)
	}
	if kp.Files[0].SHA256 != shaOf([]byte("PK zip")) || kp.Files[0].Path != "ham.zip" {
		t.Fatalf("kaggle pin = %+v", kp)
	}
	// No credential is written to the lock file.
	r.Lock().Save()
	data, _ := os.ReadFile(r.Lock().Path())
	if strings.Contains(string(data), "secret") || strings.Contains(string(data), `"key"`) {
		t.Fatalf("lock file holds a credential:\n%s", data)
	}
}

func TestLockedURLThatChangedUpstreamIsRefused(t *testing.T) {
	h, srv := newHub(t, map[string][]byte{"example.org/a.bin": []byte("version 1")})
	ctx := context.Background()
	ref := Ref{URL: "https://example.org/a.bin", Name: "a.bin"}
	r, _ := newResolver(t, srv, nil, nil)
	pin, err := r.Resolve(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pin.Files[0].SHA256 != shaOf([]byte("version 1")) {
		t.Fatalf("pin = %+v", pin)
	}
	r.Lock().Save()
	h.files["example.org/a.bin"] = []byte("version 2")
	// A fresh cache with the same lock file: the download is verified.
	lock, _ := LoadLock(r.Lock().Path())
	r2, _ := newResolver(t, srv, nil, func(o *Options) { o.Lock = lock })
	p2, err := r2.Resolve(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r2.Fetch(ctx, ref, p2.Files[0], nil)
	var ce *ChecksumError
	if !errors.As(err, &ce) || ce.Want != shaOf([]byte("version 1")) || ce.Got != shaOf([]byte("version 2")) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), ce.Want) || !strings.Contains(err.Error(), ce.Got) {
		t.Fatalf("the error does not name both hashes: %v", err)
	}
}

func TestOfflineAndDirectoryMirror(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "example.org"), 0o777)
	os.WriteFile(filepath.Join(dir, "example.org", "b.bin"), []byte("mirrored"), 0o666)
	c, _ := cache.Open(t.TempDir())
	m, _ := ParseMirror("file://"+dir, "")
	r := New(Options{Mirror: m, Blobs: c, Getenv: func(string) string { return "" }})
	ref := Ref{URL: "https://example.org/b.bin", Name: "b.bin"}
	pin, err := r.Resolve(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	off := New(Options{Offline: true, Blobs: c, Lock: r.Lock(), Getenv: func(string) string { return "" }})
	if _, err := off.Fetch(ctx, ref, pin.Files[0], nil); err != nil {
		t.Fatalf("offline fetch of a stored blob: %v", err)
	}
	missing := File{Path: "c.bin", URL: "https://example.org/c.bin", SHA256: shaOf([]byte("other"))}
	if _, err := off.Fetch(ctx, ref, missing, nil); !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), "gatepipe fetch") {
		t.Fatalf("offline fetch of a missing blob: %v", err)
	}
	if _, err := off.Resolve(ctx, Ref{URL: "https://example.org/new.bin", Name: "new.bin"}, nil); !errors.Is(err, ErrOffline) {
		t.Fatalf("offline resolve of an unpinned source: %v", err)
	}
}

func TestLockFileErrorsHaveLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), LockFileName)
	os.WriteFile(p, []byte(fmt.Sprintf("source \"url x\" {\n  file \"../x\" {\n    url = \"x\"\n    sha256 = %q\n  }\n}\n", "nothex")), 0o666)
	_, diags := LoadLock(p)
	if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Start.Line != 1 {
		t.Fatalf("diags = %v", diags)
	}
}

// TestLockFileFieldsAreChecked: a hand-edited lock file is refused at the
// attribute at fault, with a line, before anything is planned or hashed.
func TestLockFileFieldsAreChecked(t *testing.T) {
	sum := shaOf([]byte("x"))
	good := "https://huggingface.co/datasets/o/n/resolve/" + commit + "/a.parquet"
	entry := func(key, commitAttr, path, url, sha, size string) string {
		return fmt.Sprintf("source %q {\n%s\n  file %q {\n    url = %q\n    sha256 = %q\n%s\n  }\n}\n", key, commitAttr, path, url, sha, size)
	}
	const hfKey = "hf o/n@main data/*.parquet"
	okCommit := fmt.Sprintf("  commit = %q", commit)
	tests := []struct {
		name, src string
		line      int    // of the first error; 0: the file loads
		want      string // in the first error's detail
	}{
		{"valid", entry(hfKey, okCommit, "a.parquet", good, sum, "    size = 5"), 0, ""},
		{"commit leaves the directory", entry(hfKey, `  commit = "../../x"`, "a.parquet", good, sum, ""), 2, `commit "../../x"`},
		{"short commit", entry(hfKey, `  commit = "abc123"`, "a.parquet", good, sum, ""), 2, "40-digit"},
		{"negative size", entry(hfKey, okCommit, "a.parquet", good, sum, "    size = -5"), 6, "size -5"},
		{"file URL", entry("url https://example.org/a", "", "a", "file:///etc/passwd", sum, ""), 4, "not an http(s) URL"},
		{"unknown key", entry("zip https://example.org/a", "", "a", good, sum, ""), 1, "not a source key"},
		{"hf key without revision", entry("hf o/n data/*.parquet", "", "a", good, sum, ""), 1, "not a source key"},
		{"unknown attribute", entry(hfKey, "  mirror = \"x\"", "a", good, sum, ""), 2, "not expected"},
		{"path out of the source", entry(hfKey, okCommit, "../a", good, sum, ""), 3, "not a relative path"},
		{"duplicate", entry(hfKey, okCommit, "a", good, sum, "") + entry(hfKey, okCommit, "a", good, sum, ""), 9, "locked twice"},
		{"one path pinned twice", fmt.Sprintf("source %q {\n%s\n  file \"a\" {\n    url = %q\n    sha256 = %q\n  }\n  file \"a\" {\n    url = %q\n    sha256 = %q\n  }\n}\n",
			hfKey, okCommit, good, sum, good, shaOf([]byte("y"))), 7, `file a is pinned twice in "hf o/n@main data/*.parquet" (first at line 3)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), LockFileName)
			if err := os.WriteFile(p, []byte(tc.src), 0o666); err != nil {
				t.Fatal(err)
			}
			l, diags := LoadLock(p)
			if tc.line == 0 {
				if diags.HasErrors() {
					t.Fatalf("valid lock file refused: %v", diags)
				}
				if pin, ok := l.Get(hfKey); !ok || pin.Commit != commit || pin.Files[0].Size != 5 {
					t.Fatalf("pin = %+v", pin)
				}
				return
			}
			if !diags.HasErrors() {
				t.Fatalf("accepted:\n%s", tc.src)
			}
			d := diags[0]
			if d.Subject == nil || d.Subject.Start.Line != tc.line || !strings.Contains(d.Detail, tc.want) {
				t.Fatalf("first error %v (line %v), want line %d saying %q\n%s", d, d.Subject, tc.line, tc.want, tc.src)
			}
		})
	}
}
