package sources

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
)

// TestFetchNeverWritesThroughAPlantedPartial: a link planted where the
// cache keeps an interrupted download (partial/<key>.part) pointing at a
// file outside the cache. A fresh download, a resumed one, and a copy
// from a mirror directory each leave that file unchanged, byte for byte,
// and store a regular blob with the source's bytes.
func TestFetchNeverWritesThroughAPlantedPartial(t *testing.T) {
	body := bytes.Repeat([]byte("source bytes "), 1000)
	sum := sha256.Sum256(body)
	sha := hex.EncodeToString(sum[:])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "data.bin", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	mirror := t.TempDir()
	u, _ := url.Parse(srv.URL)
	os.MkdirAll(filepath.Join(mirror, u.Host), 0o755)
	os.WriteFile(filepath.Join(mirror, u.Host, "data.bin"), body, 0o644)
	precious := []byte("the user's file, 26 bytes\n")
	for _, tc := range []struct{ name, mirror string }{
		// The link's target looks like a partial download: followed, the
		// rest of the source would be appended to it.
		{"resumed download", ""},
		{"mirror copy", mirror},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cache.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(t.TempDir(), "precious")
			os.WriteFile(victim, precious, 0o644)
			part, _ := c.PartialPath(sha)
			os.Symlink(victim, part)
			m, err := ParseMirror(tc.mirror, "")
			if err != nil {
				t.Fatal(err)
			}
			r := New(Options{Blobs: c, Mirror: m, Getenv: func(string) string { return "" }})
			ref := Ref{URL: srv.URL + "/data.bin", Name: "data.bin", SHA256: sha}
			pin, err := r.Resolve(context.Background(), ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := r.Fetch(context.Background(), ref, pin.Files[0], nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(victim); !bytes.Equal(got, precious) {
				t.Fatalf("the file outside the cache changed: %q", got)
			}
			info, err := os.Lstat(p)
			if err != nil || !info.Mode().IsRegular() {
				t.Fatalf("the blob is not a regular file: %v %v", info.Mode(), err)
			}
			if got, _ := os.ReadFile(p); !bytes.Equal(got, body) {
				t.Fatal("the blob does not hold the source's bytes")
			}
		})
	}
}
