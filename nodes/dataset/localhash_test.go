package dataset

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
)

// recordingBlobs counts how local sources reach the blob store: hashed
// again (AddBlob) or stored under the hash their stamp vouches for.
type recordingBlobs struct {
	*cache.Cache
	hashed, vouched int
}

func (r *recordingBlobs) AddBlob(p, want string) (string, string, error) {
	r.hashed++
	return r.Cache.AddBlob(p, want)
}

func (r *recordingBlobs) AddHashedBlob(p, sha string) (string, error) {
	r.vouched++
	return r.Cache.AddHashedBlob(p, sha)
}

// A local source hashed at planning is copied into the blob store without
// a second hash only when its stamp vouches for that hash: modified well
// before the plan and unchanged since. A file written just before, or
// edited after planning (even with its modification time put back), is
// hashed again, and the edit is refused.
func TestLocalSourceHashedOnce(t *testing.T) {
	long := time.Now().Add(-time.Hour)
	tests := map[string]struct {
		age        func(t *testing.T, tarball string)
		edit       func(t *testing.T, dir string)
		wantVouch  bool
		wantErrMsg string
	}{
		"written long before": {age: setTimes(long), wantVouch: true},
		"written just now":    {age: func(*testing.T, string) {}},
		// The action ID stands for the planned bytes: an edit is refused,
		// not stored under the old ID.
		"rewritten after the plan": {age: func(*testing.T, string) {}, edit: rewrite,
			wantErrMsg: "imgs.tar changed while it was being read"},
		"rewritten after the plan, times put back": {age: setTimes(long), edit: rewrite,
			wantErrMsg: "imgs.tar changed while it was being read"},
		"a byte changed after the plan, size and times kept": {age: setTimes(long), edit: flipByte,
			wantErrMsg: "imgs.tar changed while it was being read"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeImageFolder(t, dir, 6)
			tarTree(t, dir, "imgs")
			tarball := filepath.Join(dir, "imgs.tar")
			tc.age(t, tarball)
			n, diags := decode(t, dir, `
source { url = "imgs.tar" }
format     = "image_folder"
train      = ["imgs"]
image_size = [4, 4]
`)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if err := n.Fingerprint(context.Background(), io.Discard); err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(t, dir)
				tc.age(t, tarball)
			}
			c, err := cache.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			blobs := &recordingBlobs{Cache: c}
			out, _ := c.TempDir("dataset")
			_, err = n.Run(context.Background(), &nodes.Env{OutDir: out, Blobs: blobs, Log: zerolog.Nop(), Progress: nodes.NoProgress{}})
			if tc.wantErrMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrMsg) {
					t.Fatalf("err = %v, want %q", err, tc.wantErrMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := blobs.vouched == 1 && blobs.hashed == 0; got != tc.wantVouch {
				t.Errorf("stored by stamp: %v (vouched %d, hashed %d), want %v", got, blobs.vouched, blobs.hashed, tc.wantVouch)
			}
			sum, _, err := cache.FileSHA256(tarball)
			if err != nil {
				t.Fatal(err)
			}
			p, ok := c.BlobPath(sum.String())
			if !ok {
				t.Fatalf("no blob %s", sum)
			}
			if got, _, err := cache.FileSHA256(p); err != nil || got != sum {
				t.Errorf("the blob hashes to %s (%v), want its name %s", got, err, sum)
			}
		})
	}
}

func rewrite(t *testing.T, dir string) {
	writeImageFolder(t, dir, 9)
	tarTree(t, dir, "imgs")
}

// flipByte changes one byte of the tarball's padding in place.
func flipByte(t *testing.T, dir string) {
	f, err := os.OpenFile(filepath.Join(dir, "imgs.tar"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	if _, err := f.WriteAt([]byte{1}, info.Size()-1); err != nil {
		t.Fatal(err)
	}
}

func setTimes(at time.Time) func(t *testing.T, p string) {
	return func(t *testing.T, p string) {
		t.Helper()
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAddHashedBlobRefusesABadName(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("x"), 0o644)
	for _, sha := range []string{"", "abc", strings.Repeat("g", 64)} {
		if _, err := c.AddHashedBlob(p, sha); err == nil {
			t.Errorf("AddHashedBlob(%q) stored the file", sha)
		}
	}
}
