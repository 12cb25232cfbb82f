package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// victim is a directory outside the cache holding one file, whose bytes
// every test checks are unchanged after the cache met a link to it.
type victim struct {
	dir, file string
	content   []byte
}

func newVictim(t *testing.T) victim {
	t.Helper()
	dir := t.TempDir()
	v := victim{dir: dir, file: filepath.Join(dir, "precious"), content: []byte("the user's own file\n")}
	if err := os.WriteFile(v.file, v.content, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-72 * time.Hour)
	os.Chtimes(v.file, old, old)
	return v
}

// intact checks the victim's file is there with its bytes and that
// nothing else appeared beside it.
func (v victim) intact(t *testing.T) {
	t.Helper()
	got, err := os.ReadFile(v.file)
	if err != nil {
		t.Fatalf("the file outside the cache is gone: %v", err)
	}
	if !bytes.Equal(got, v.content) {
		t.Fatalf("the file outside the cache changed: %q", got)
	}
	entries, _ := os.ReadDir(v.dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("the cache wrote beside the file outside it: %v", names)
	}
}

func plant(t *testing.T, target, link string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(link), 0o777)
	os.RemoveAll(link)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func isPlanted(err error) bool {
	var pe *PlantedError
	return errors.As(err, &pe)
}

// TestNoWriteLeavesTheCache plants a link at each place the cache names
// and runs the entry point that writes there: the file outside is
// unchanged, byte for byte, and nothing is written beside it.
func TestNoWriteLeavesTheCache(t *testing.T) {
	data := []byte("a source's bytes")
	sum := ID(sha256Of(data)).String()
	tests := []struct {
		name string
		// run plants links (to v's file or directory) and uses the cache.
		run func(t *testing.T, c *Cache, v victim)
	}{
		{"finished download is a link", func(t *testing.T, c *Cache, v victim) {
			part, _ := c.PartialPath("local-" + sum)
			plant(t, v.file, part)
			if _, _, err := c.AddBlob(part, ""); !isPlanted(err) {
				t.Errorf("AddBlob of a link: %v, want a planted-link error", err)
			}
			if _, err := c.AddHashedBlob(part, sum); !isPlanted(err) {
				t.Errorf("AddHashedBlob of a link: %v, want a planted-link error", err)
			}
		}},
		{"partial file is a link (CreateFresh)", func(t *testing.T, c *Cache, v victim) {
			part, _ := c.PartialPath("url-x")
			plant(t, v.file, part)
			f, err := c.CreateFresh(part)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(data)
			f.Close()
			if info, _ := os.Lstat(part); !info.Mode().IsRegular() {
				t.Error("the partial file is still a link")
			}
		}},
		{"blob fan-out is a link", func(t *testing.T, c *Cache, v victim) {
			plant(t, v.dir, filepath.Join(c.Dir(), "blobs", sum[:2]))
			tmp := filepath.Join(c.Dir(), "partial", "x.part")
			os.WriteFile(tmp, data, 0o644)
			if _, _, err := c.AddBlob(tmp, sum); !isPlanted(err) {
				t.Errorf("AddBlob into a linked fan-out: %v", err)
			}
		}},
		{"object fan-out is a link (store)", func(t *testing.T, c *Cache, v victim) {
			work, _ := c.TempDir("w")
			os.WriteFile(filepath.Join(work, "out"), data, 0o644)
			for _, fan := range []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"} {
				for _, g := range []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"} {
					plant(t, v.dir, filepath.Join(c.Dir(), "objects", fan+g))
				}
			}
			if _, err := c.Put(ID{1}, work, nil); !isPlanted(err) {
				t.Errorf("Put into a linked fan-out: %v", err)
			}
		}},
		{"action fan-out is a link (index entry)", func(t *testing.T, c *Cache, v victim) {
			a := ID{0xab}
			plant(t, v.dir, filepath.Join(c.Dir(), "actions", "ab"))
			work, _ := c.TempDir("w")
			os.WriteFile(filepath.Join(work, "out"), data, 0o644)
			if _, err := c.Put(a, work, nil); !isPlanted(err) {
				t.Errorf("Put with a linked actions fan-out: %v", err)
			}
		}},
		{"index entry is a link", func(t *testing.T, c *Cache, v victim) {
			a := ID{0xcd}
			plant(t, v.file, IndexPath(c.Dir(), a))
			if _, err := c.Get(a); !errors.Is(err, ErrMiss) {
				t.Errorf("Get through a linked index entry: %v", err)
			}
			work, _ := c.TempDir("w")
			os.WriteFile(filepath.Join(work, "out"), data, 0o644)
			if _, err := c.Put(a, work, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Get(a); err != nil {
				t.Errorf("Get after Put replaced the link: %v", err)
			}
		}},
		{"object directory is a link", func(t *testing.T, c *Cache, v victim) {
			work, _ := c.TempDir("w")
			os.WriteFile(filepath.Join(work, "precious"), v.content, 0o644)
			o, err := c.Put(ID{2}, work, nil)
			if err != nil {
				t.Fatal(err)
			}
			dir := c.objectDir(o)
			os.Chmod(dir, 0o755)
			os.RemoveAll(dir)
			plant(t, v.dir, dir)
			if _, _, err := c.Output(o); err == nil {
				t.Error("an output served through a link")
			}
			work, _ = c.TempDir("w")
			os.WriteFile(filepath.Join(work, "precious"), v.content, 0o644)
			if _, err := c.Put(ID{3}, work, nil); err != nil {
				t.Fatal(err)
			}
			if info, _ := os.Lstat(dir); !info.IsDir() {
				t.Error("the object is still a link")
			}
		}},
		{"run record area fan-out and lock file are links", func(t *testing.T, c *Cache, v victim) {
			plant(t, filepath.Join(v.dir, "made-by-the-lock"), filepath.Join(c.Dir(), "locks", "blob-k.lock"))
			unlock, err := c.LockBlob(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			unlock()
			plant(t, v.dir, filepath.Join(c.Dir(), "noop"))
			if err := c.WriteNoopRecord("k", data); !isPlanted(err) {
				t.Errorf("a no-op record through a linked area: %v", err)
			}
		}},
		{"resume directory and a checkpoint are links", func(t *testing.T, c *Cache, v victim) {
			plant(t, v.dir, filepath.Join(c.Dir(), "resume", "k1"))
			dir, unlock, err := c.ResumeDir(context.Background(), "k1")
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "checkpoint"), data, 0o644)
			unlock()
			os.MkdirAll(filepath.Join(c.Dir(), "resume", "k2"), 0o777)
			plant(t, v.file, filepath.Join(c.Dir(), "resume", "k2", "checkpoint"))
			dir, unlock, err = c.ResumeDir(context.Background(), "k2")
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "checkpoint"), data, 0o644)
			unlock()
		}},
		{"gc meets a linked object fan-out", func(t *testing.T, c *Cache, v victim) {
			link := filepath.Join(c.Dir(), "objects", "zz")
			plant(t, v.dir, link)
			st, err := c.GC(context.Background(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Planted) != 1 || !strings.Contains(st.Planted[0], "zz") {
				t.Errorf("gc reported %v, want the planted link", st.Planted)
			}
			if _, err := os.Lstat(link); err == nil {
				t.Error("gc left the planted link")
			}
		}},
		{"gc beside an apply meets links in every area", func(t *testing.T, c *Cache, v victim) {
			for _, area := range []string{"objects", "blobs", "partial", "resume", "actions"} {
				plant(t, v.dir, filepath.Join(c.Dir(), area, "zz"))
			}
			st, err := c.GCBeside(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Planted) != 5 {
				t.Errorf("gc reported %d planted links, want 5: %v", len(st.Planted), st.Planted)
			}
		}},
		{"verify meets a linked blob", func(t *testing.T, c *Cache, v victim) {
			vsum := ID(sha256Of(v.content)).String()
			link := c.blobFile(vsum)
			plant(t, v.file, link)
			if _, ok := c.BlobPath(vsum); ok {
				t.Error("a linked blob is served")
			}
			problems, err := c.Verify(false)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != 1 || !strings.Contains(problems[0].Err.Error(), "symbolic link") {
				t.Fatalf("verify found %v, want the planted link", problems)
			}
			if _, err := c.Verify(true); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(link); err == nil {
				t.Error("verify -repair left the planted link")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			v := newVictim(t)
			tc.run(t, c, v)
			v.intact(t)
		})
	}
}

// TestOpenRefusesALinkedArea: an area that is a link would take every
// write of its kind out of the cache.
func TestOpenRefusesALinkedArea(t *testing.T) {
	for _, area := range areas {
		t.Run(area, func(t *testing.T) {
			root := t.TempDir()
			v := newVictim(t)
			plant(t, v.dir, filepath.Join(root, area))
			_, err := Open(root)
			if !isPlanted(err) || !strings.Contains(err.Error(), area) {
				t.Fatalf("Open with %s a link: %v", area, err)
			}
			v.intact(t)
		})
	}
}

// TestALinkedRootIsFollowed: the root itself may be a link the user made
// (a cache on another disk).
func TestALinkedRootIsFollowed(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "cache")
	plant(t, real, link)
	c, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	work, _ := c.TempDir("w")
	os.WriteFile(filepath.Join(work, "out"), []byte("x"), 0o644)
	if _, err := c.Put(ID{9}, work, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ID{9}); err != nil {
		t.Fatal(err)
	}
}

func sha256Of(b []byte) [32]byte { return sha256.Sum256(b) }
