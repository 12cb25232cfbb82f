package main

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// fileServer serves one file with Range support, counting the body bytes
// it sends. It can cut its first response short and fail with 503.
type fileServer struct {
	data      []byte
	served    atomic.Int64
	ranged    atomic.Int32
	requests  atomic.Int32
	cutFirst  int64
	failFirst atomic.Int32
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	if s.failFirst.Load() > 0 {
		s.failFirst.Add(-1)
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	start := int64(0)
	if rg := r.Header.Get("Range"); rg != "" {
		s.ranged.Add(1)
		v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"), 10, 64)
		if err != nil || v >= int64(len(s.data)) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = v
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(s.data)-1, len(s.data)))
		w.Header().Set("Content-Length", strconv.Itoa(len(s.data)-int(start)))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(s.data)))
		w.WriteHeader(http.StatusOK)
	}
	body := s.data[start:]
	if n == 1 && s.cutFirst > 0 {
		w.Write(body[:s.cutFirst])
		s.served.Add(s.cutFirst)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drop the connection mid-body
	}
	w.Write(body)
	s.served.Add(int64(len(body)))
}

func newFileServer(t *testing.T, size int) (*fileServer, *httptest.Server, string) {
	data := make([]byte, size)
	rand.Read(data)
	fs := &fileServer{data: data}
	srv := httptest.NewServer(fs)
	t.Cleanup(srv.Close)
	sum := sha256.Sum256(data)
	return fs, srv, hex.EncodeToString(sum[:])
}

func remotePipeline(url, sha, name string) string {
	return fmt.Sprintf(`
dataset %q {
  source {
    url    = %q
    sha256 = %q
  }
  format = "raw"
}
`, name, url, sha)
}

func TestDownloadIsFetchedOnceAcrossRunsAndPipelines(t *testing.T) {
	fs, srv, sha := newFileServer(t, 3<<20)
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "main.hcl"), remotePipeline(srv.URL+"/data.bin", sha, "first"))
	if r := gp(t, cache, "apply", filepath.Join(dir, "a")); r.code != 0 {
		t.Fatalf("first apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := fs.served.Load(); got != int64(len(fs.data)) {
		t.Fatalf("first apply fetched %d bytes, want %d", got, len(fs.data))
	}
	r := gp(t, cache, "apply", filepath.Join(dir, "a"))
	if r.code != 0 || !strings.Contains(r.stdout, "All 1 node instances were cached") {
		t.Fatalf("second apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Another pipeline naming the same file reuses the download.
	writeFile(t, filepath.Join(dir, "b", "main.hcl"), remotePipeline(srv.URL+"/data.bin", sha, "second"))
	if r := gp(t, cache, "apply", filepath.Join(dir, "b")); r.code != 0 {
		t.Fatalf("other pipeline: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := fs.served.Load(); got != int64(len(fs.data)) {
		t.Fatalf("later applies fetched %d more bytes, want 0", got-int64(len(fs.data)))
	}
}

func TestInterruptedDownloadResumesWithRange(t *testing.T) {
	fs, srv, sha := newFileServer(t, 2<<20)
	fs.cutFirst = 700 << 10
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), remotePipeline(srv.URL+"/data.bin", sha, "d"))
	if r := gp(t, cache, "apply", dir); r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if fs.ranged.Load() == 0 {
		t.Fatal("the retry did not use an HTTP Range request")
	}
	if got := fs.served.Load(); got != int64(len(fs.data)) {
		t.Fatalf("served %d bytes in total, want exactly %d (no byte fetched twice)", got, len(fs.data))
	}
}

func TestDownloadRetriesServerErrors(t *testing.T) {
	fs, srv, sha := newFileServer(t, 10<<10)
	fs.failFirst.Store(2)
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), remotePipeline(srv.URL+"/data.bin", sha, "d"))
	r := gp(t, cache, "apply", dir)
	if r.code != 0 || fs.requests.Load() != 3 {
		t.Fatalf("apply: code %d after %d requests\n%s%s", r.code, fs.requests.Load(), r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "503") {
		t.Errorf("retries are not reported:\n%s", r.stderr)
	}
}

func TestChecksumMismatchCachesNothing(t *testing.T) {
	_, srv, sha := newFileServer(t, 64<<10)
	wrong := strings.Repeat("0", 64)
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), remotePipeline(srv.URL+"/data.bin", wrong, "d"))
	r := gp(t, cache, "apply", dir)
	if r.code != exitRunFailure {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, exitRunFailure, r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	if !strings.Contains(out, wrong) || !strings.Contains(out, sha) {
		t.Fatalf("error should show expected and actual hashes:\n%s", out)
	}
	for _, area := range []string{"blobs", "actions", "objects", "partial"} {
		var files []string
		filepath.Walk(filepath.Join(cache, area), func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		if len(files) != 0 {
			t.Errorf("%s holds %v after a failed checksum", area, files)
		}
	}
}

func TestArchiveWithParentEntriesIsRejected(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "../../escape.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	writeFile(t, filepath.Join(dir, "evil.tar"), buf.String())
	writeFile(t, filepath.Join(dir, "main.hcl"), `
dataset "d" {
  source {
    url = "evil.tar"
  }
  format = "raw"
}
`)
	r := gp(t, cache, "apply", dir)
	if r.code != exitRunFailure || !strings.Contains(r.stdout+r.stderr, "escapes the target directory") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.txt")); err == nil {
		t.Fatal("the archive wrote outside its directory")
	}
}
