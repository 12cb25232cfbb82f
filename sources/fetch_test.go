package sources

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
)

// slowServer serves body in small chunks, slowly, so that concurrent
// downloads of it overlap.
func slowServer(t *testing.T, body []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		for off := 0; off < len(body); off += 32 << 10 {
			w.Write(body[off:min(off+32<<10, len(body))])
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestConcurrentFetchesOfOneSource: several nodes (as two dataset blocks
// naming the same file, or two pipelines applied at once) fetch one
// source into one cache at the same time. Each gets the right bytes and
// the store holds one correct blob.
func TestConcurrentFetchesOfOneSource(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	sum := sha256.Sum256(body)
	sha := hex.EncodeToString(sum[:])
	srv := slowServer(t, body)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, withSHA := range []bool{true, false} {
		t.Run(fmt.Sprintf("sha256 declared %v", withSHA), func(t *testing.T) {
			ref := Ref{URL: srv.URL + fmt.Sprintf("/data-%v.bin", withSHA), Name: "data.bin"}
			if withSHA {
				ref.SHA256 = sha
			}
			var wg sync.WaitGroup
			errs := make([]error, 4)
			paths := make([]string, 4)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Separate resolvers: separate nodes or processes.
					r := New(Options{Blobs: c, Getenv: func(string) string { return "" }})
					pin, err := r.Resolve(context.Background(), ref, nil)
					if err == nil {
						paths[i], err = r.Fetch(context.Background(), ref, pin.Files[0], nil)
					}
					errs[i] = err
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("fetch %d: %v", i, err)
				}
				got, _ := os.ReadFile(paths[i])
				if !bytes.Equal(got, body) {
					t.Fatalf("fetch %d got %d bytes of wrong content", i, len(got))
				}
			}
			if p, ok := c.BlobPath(sha); !ok || p != paths[0] {
				t.Fatalf("blob store: %q %v", p, ok)
			}
		})
	}
	parts, _ := filepath.Glob(filepath.Join(c.Dir(), "partial", "*"))
	if len(parts) != 0 {
		t.Fatalf("partial files left: %v", parts)
	}
}

// TestWrongDownloadIsNotStored: a server answering with other bytes than
// the declared checksum leaves nothing in the store or the partial area.
func TestWrongDownloadIsNotStored(t *testing.T) {
	srv := slowServer(t, []byte("not what was promised"))
	c, _ := cache.Open(t.TempDir())
	want := strings.Repeat("ab", 32)
	ref := Ref{URL: srv.URL + "/x.bin", Name: "x.bin", SHA256: want}
	r := New(Options{Blobs: c, Getenv: func(string) string { return "" }})
	pin, _ := r.Resolve(context.Background(), ref, nil)
	_, err := r.Fetch(context.Background(), ref, pin.Files[0], nil)
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v", err)
	}
	parts, _ := filepath.Glob(filepath.Join(c.Dir(), "partial", "*"))
	blobs, _ := filepath.Glob(filepath.Join(c.Dir(), "blobs", "*", "*"))
	if len(parts)+len(blobs) != 0 {
		t.Fatalf("left behind: %v %v", parts, blobs)
	}
}
