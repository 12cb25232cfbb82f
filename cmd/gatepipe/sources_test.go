package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatepipe/gatepipe/internal/smokehub"
)

// fakeHub serves Hugging Face Hub and Kaggle API paths as a mirror lays
// them out (/HOST/PATH): revision and tree listings with LFS SHA-256,
// resolve downloads, and a Kaggle download behind basic auth.
type fakeHub struct {
	mu     sync.Mutex
	files  map[string][]byte // repo path -> content, for repo
	kaggle []byte
	gated  bool
	bytes  atomic.Int64
	repo   string // "" is gate/tiny
	// authSeen counts requests that carried credentials.
	authSeen atomic.Int64
}

const hubCommit = smokehub.Commit

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := strings.TrimPrefix(r.URL.Path, "/")
	if r.Header.Get("Authorization") != "" {
		h.authSeen.Add(1)
	}
	if rest, ok := strings.CutPrefix(p, "www.kaggle.com/api/v1/datasets/download/"); ok && rest == "someone/skin" {
		if u, k, ok := r.BasicAuth(); !ok || u != "me" || k != "kagglekey" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.bytes.Add(int64(len(h.kaggle)))
		w.Write(h.kaggle)
		return
	}
	if h.gated && r.Header.Get("Authorization") != "Bearer hf_secret" {
		http.Error(w, "gated", http.StatusUnauthorized)
		return
	}
	repo := h.repo
	if repo == "" {
		repo = "gate/tiny"
	}
	if !serveRepos(w, p, map[string]map[string][]byte{repo: h.files}, &h.bytes) {
		http.NotFound(w, r)
	}
}

func parquetShard(t *testing.T, n int, seed uint64) []byte {
	b, err := smokehub.ClassShard(n, seed)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newFakeHub(t *testing.T) (*fakeHub, *httptest.Server) {
	h := &fakeHub{files: map[string][]byte{
		"data/train-00000-of-00002.parquet": parquetShard(t, 150, 1),
		"data/train-00001-of-00002.parquet": parquetShard(t, 120, 2),
		"data/test-00000-of-00001.parquet":  parquetShard(t, 60, 3),
	}}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	f, _ := zw.Create("HAM10000_metadata.csv")
	f.Write([]byte("lesion_id,image_id,dx\nHAM_1,ISIC_1,bkl\n"))
	zw.Close()
	h.kaggle = zbuf.Bytes()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

const hubPipeline = `
dataset "tiny" {
  source {
    hf    = "gate/tiny"
    files = ["data/train-*.parquet", "data/test-*.parquet"]
  }
  format     = "parquet"
  train      = ["data/train-*.parquet"]
  test       = ["data/test-*.parquet"]
  image_size = [8, 8]
}

dataset "ham" {
  source {
    url         = "https://www.kaggle.com/api/v1/datasets/download/someone/skin"
    name        = "skin.zip"
    credentials = "kaggle"
  }
  format = "raw"
}

output "splits"  { value = dataset.tiny.splits }
output "classes" { value = dataset.tiny.classes }
`

// gpEnv runs the binary with this process's environment, minus every
// HF_, KAGGLE_ and GATEPIPE_ variable but GATEPIPE_GPU_SHARE (a setting of
// the machine, which gpu-check gives: without it a GPU machine ran the
// tier's sixteen small torch runs one at a time), plus env.
func gpEnv(t testing.TB, cacheDir string, env []string, args ...string) result {
	t.Helper()
	var keep []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GATEPIPE_GPU_SHARE=") ||
			!strings.HasPrefix(kv, "HF_") && !strings.HasPrefix(kv, "KAGGLE_") && !strings.HasPrefix(kv, "GATEPIPE_") {
			keep = append(keep, kv)
		}
	}
	return gpWith(t, append(append(keep, env...), "GATEPIPE_CACHE_DIR="+cacheDir), args...)
}

func TestHubSourcesLockMirrorAndOffline(t *testing.T) {
	hub, srv := newFakeHub(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), hubPipeline)
	home := t.TempDir() // no kaggle.json here
	optIn := "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL
	creds := []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + home, "HF_TOKEN=hf_secret", "KAGGLE_USERNAME=me", "KAGGLE_KEY=kagglekey", optIn}
	cache1 := filepath.Join(t.TempDir(), "c1")

	// The mirror is not the Hub: without the user's opt-in it gets no
	// credential, and its 401 says how to opt in.
	hub.gated = true
	r := gpEnv(t, cache1, creds[:5], "apply", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "GATEPIPE_MIRROR_CREDENTIALS="+srv.URL) || hub.authSeen.Load() != 0 {
		t.Fatalf("mirror not opted in: code %d, %d requests with credentials\n%s", r.code, hub.authSeen.Load(), r.stderr)
	}
	hub.gated = false

	// A gated repository without a token: the 401 is explained.
	hub.gated = true
	r = gpEnv(t, cache1, []string{creds[0], creds[1], creds[3], creds[4], optIn}, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "401") || !strings.Contains(r.stderr, "HF_TOKEN") {
		t.Fatalf("gated without token: code %d\n%s", r.code, r.stderr)
	}
	hub.gated = false
	// Missing Kaggle credentials: the error says what to set. A failed
	// apply keeps what it pinned and fetched, so this starts afresh.
	os.Remove(filepath.Join(dir, "gatepipe.lock.hcl"))
	r = gpEnv(t, t.TempDir(), []string{creds[0], creds[1], creds[2], optIn}, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "KAGGLE_USERNAME and KAGGLE_KEY") {
		t.Fatalf("no Kaggle key: code %d\n%s", r.code, r.stderr)
	}

	// First apply: pins everything in the lock file.
	r = gpEnv(t, cache1, creds, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `"train" = 270`) && !strings.Contains(r.stdout, "270") {
		t.Fatalf("splits not in the output:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "akiec") {
		t.Fatalf("class names from the parquet metadata missing:\n%s", r.stdout)
	}
	lock := readFile(filepath.Join(dir, "gatepipe.lock.hcl"))
	for _, want := range []string{`source "hf gate/tiny@main`, `commit = "` + hubCommit, "data/train-00001-of-00002.parquet", `source "url https://www.kaggle.com/api/v1/datasets/download/someone/skin"`} {
		if !strings.Contains(lock, want) {
			t.Fatalf("lock file lacks %q:\n%s", want, lock)
		}
	}
	for _, secret := range []string{"hf_secret", "kagglekey"} {
		if strings.Contains(lock, secret) || grepTree(t, cache1, secret) {
			t.Fatalf("credential %q written to the lock file or the cache", secret)
		}
	}

	// Second apply: nothing downloaded, nothing run.
	before := hub.bytes.Load()
	r = gpEnv(t, cache1, creds, "apply", dir)
	if r.code != 0 || hub.bytes.Load() != before || !strings.Contains(r.stderr+r.stdout, "nothing ran") {
		t.Fatalf("second apply: code %d, %d bytes downloaded\n%s%s", r.code, hub.bytes.Load()-before, r.stdout, r.stderr)
	}

	fetchThenApplyOffline(t, dir, home, creds)
	changedUpstreamNeedsLock(t, hub, dir, creds)
}

// fetchThenApplyOffline checks that an offline apply on an empty cache
// says to fetch, and runs once `gatepipe fetch` has filled the cache.
func fetchThenApplyOffline(t *testing.T, dir, home string, creds []string) {
	t.Helper()
	// fetch into a fresh cache, then apply -offline with the server gone.
	cache2 := filepath.Join(t.TempDir(), "c2")
	offline := []string{"GATEPIPE_MIRROR=http://127.0.0.1:1", "HOME=" + home}
	r := gpEnv(t, cache2, offline, "apply", "-offline", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "gatepipe fetch") || !strings.Contains(r.stderr, "data/train-00000-of-00002.parquet") {
		t.Fatalf("offline apply on an empty cache: code %d\n%s", r.code, r.stderr)
	}
	r = gpEnv(t, cache2, creds, "fetch", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "4 file(s) in the cache, 4 downloaded") {
		t.Fatalf("fetch: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = gpEnv(t, cache2, offline, "apply", "-offline", dir)
	if r.code != 0 {
		t.Fatalf("offline apply after fetch: %d\n%s", r.code, r.stderr)
	}
}

// changedUpstreamNeedsLock checks that a pinned file changed upstream is
// refused naming both hashes, and that `gatepipe lock` pins the new one.
func changedUpstreamNeedsLock(t *testing.T, hub *fakeHub, dir string, creds []string) {
	t.Helper()
	// Upstream changes a pinned file: a fresh download is refused naming
	// both hashes; `gatepipe lock` pins the new one on purpose.
	hub.mu.Lock()
	oldZip := hub.kaggle
	hub.kaggle = append(append([]byte(nil), oldZip...), 0)
	hub.mu.Unlock()
	oldSum, newSum := sha256.Sum256(oldZip), sha256.Sum256(hub.kaggle)
	cache3 := filepath.Join(t.TempDir(), "c3")
	r := gpEnv(t, cache3, creds, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stderr, hex.EncodeToString(oldSum[:])) || !strings.Contains(r.stderr, hex.EncodeToString(newSum[:])) {
		t.Fatalf("changed upstream file: code %d\n%s", r.code, r.stderr)
	}
	r = gpEnv(t, cache3, creds, "lock", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "~ url https://www.kaggle.com") || !strings.Contains(r.stdout, "1 changed") {
		t.Fatalf("lock: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = gpEnv(t, cache3, creds, "apply", dir); r.code != 0 {
		t.Fatalf("apply after lock: %d\n%s", r.code, r.stderr)
	}
}

// grepTree reports whether any file under root contains s.
func grepTree(t *testing.T, root, s string) bool {
	found := false
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Size() > 64<<20 {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
			found = true
			fmt.Println("found in", p)
		}
		return nil
	})
	return found
}

// TestApplyRefusesWhenTheDiskIsTooSmall: a pinned file larger than the
// cache disk's free space stops apply before it downloads anything, and
// plan says so.
func TestApplyRefusesWhenTheDiskIsTooSmall(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
dataset "big" {
  source {
    url = "http://127.0.0.1:1/big.tar"
  }
  format = "raw"
}
`)
	writeFile(t, filepath.Join(dir, "gatepipe.lock.hcl"), `
source "url http://127.0.0.1:1/big.tar" {
  file "big.tar" {
    url    = "http://127.0.0.1:1/big.tar"
    sha256 = "`+strings.Repeat("ab", 32)+`"
    size   = 1000000000000000000
  }
}
`)
	cache := filepath.Join(t.TempDir(), "c")
	r := gp(t, cache, "plan", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "Warning: the apply needs about 1.7 EiB") || !strings.Contains(r.stdout, "downloads  888.2 PiB") {
		t.Fatalf("plan: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = gp(t, cache, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "must download 888.2 PiB") || !strings.Contains(r.stderr, "free") {
		t.Fatalf("apply: %d\n%s", r.code, r.stderr)
	}
}
