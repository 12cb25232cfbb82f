package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/sources"
)

// slowServer serves /fileN (N < files) after a latency per request, and
// 404 for /missing; it counts the requests in flight at most.
type slowServer struct {
	latency       time.Duration
	inFlight, max atomic.Int64
}

func (s *slowServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.max.Load()
		if n <= m || s.max.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(s.latency)
	if strings.HasPrefix(r.URL.Path, "/missing") {
		http.NotFound(w, r)
		return
	}
	w.Write([]byte("content of " + r.URL.Path))
}

// fetchPipeline declares n raw datasets of one file each on srv (and one
// more whose file the server does not have, when broken).
func fetchPipeline(srv string, n int, broken bool) string {
	var b strings.Builder
	for i := range n {
		path := fmt.Sprintf("/file%d", i)
		sum := sha256.Sum256([]byte("content of " + path))
		fmt.Fprintf(&b, "dataset \"d%d\" {\n  source {\n    url    = %q\n    sha256 = %q\n  }\n  format = \"raw\"\n}\n", i, srv+path, hex.EncodeToString(sum[:]))
	}
	if broken {
		fmt.Fprintf(&b, "dataset \"gone\" {\n  source {\n    url    = %q\n    sha256 = %q\n  }\n  format = \"raw\"\n}\n", srv+"/missing", strings.Repeat("ab", 32))
	}
	return b.String()
}

// TestFetchDownloadsSideBySide: fetch of 8 sources from a server that
// answers each request after 100 ms is at least 3x faster than one at a
// time (-parallel 1), and a source that fails does not stop the others:
// every other file is fetched, and the failure is listed at the end.
func TestFetchDownloadsSideBySide(t *testing.T) {
	timed := func(parallel string, broken bool) (time.Duration, result, *slowServer) {
		s := &slowServer{latency: 100 * time.Millisecond}
		srv := httptest.NewServer(s)
		defer srv.Close()
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "main.hcl"), fetchPipeline(srv.URL, 8, broken))
		start := time.Now()
		r := gp(t, t.TempDir(), "fetch", "-parallel", parallel, dir)
		return time.Since(start), r, s
	}
	serial, r1, s1 := timed("1", false)
	side, r8, s8 := timed("16", false)
	if r1.code != exitOK || r8.code != exitOK {
		t.Fatalf("fetch: exit %d / %d\n%s\n%s", r1.code, r8.code, r1.stderr, r8.stderr)
	}
	t.Logf("8 files at 100 ms a request: one at a time %v (at most %d in flight), side by side %v (at most %d in flight): %.1fx",
		serial, s1.max.Load(), side, s8.max.Load(), serial.Seconds()/side.Seconds())
	if s1.max.Load() != 1 || s8.max.Load() < 2 || s8.max.Load() > sources.DefaultPerHost {
		t.Errorf("at most %d and %d requests in flight, want 1 and 2-%d (the per-host limit)", s1.max.Load(), s8.max.Load(), sources.DefaultPerHost)
	}
	if serial < 3*side {
		t.Errorf("side by side took %v, one at a time %v: want 3x faster", side, serial)
	}
	_, r, _ := timed("16", true)
	if r.code != exitRunFailure || !strings.Contains(r.stderr, "1 file(s) could not be fetched") || !strings.Contains(r.stderr, "dataset.gone") ||
		!strings.Contains(r.stdout, "8 file(s) in the cache, 8 downloaded now") {
		t.Errorf("with one source gone: exit %d, want 1 with the 8 others fetched and the failure listed\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
