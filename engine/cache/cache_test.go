package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func dummyID(s string) ID { return ID(sha256.Sum256([]byte(s))) }

func putFiles(t *testing.T, c *Cache, a ActionID, files map[string]string) OutputID {
	t.Helper()
	dir, err := c.TempDir("test")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o777)
		if err := os.WriteFile(p, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	o, err := c.Put(a, dir, []byte(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir %s still exists after Put", dir)
	}
	return o
}

func TestPutGetPersists(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := dummyID("a")
	o := putFiles(t, c, a, map[string]string{"x.txt": "hello", "sub/y.bin": "world"})

	c2, err := Open(dir) // reopen: entries persist
	if err != nil {
		t.Fatal(err)
	}
	e, err := c2.Get(a)
	if err != nil {
		t.Fatal(err)
	}
	if e.Output != o {
		t.Fatalf("Get output = %s, want %s", e.Output, o)
	}
	m, odir, err := c2.Output(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 2 || m.Files[0].Path != "sub/y.bin" || string(m.Value) != `{"x":1}` {
		t.Fatalf("manifest = %+v", m)
	}
	b, _ := os.ReadFile(filepath.Join(odir, "x.txt"))
	if string(b) != "hello" {
		t.Fatalf("x.txt = %q", b)
	}
	if _, err := c2.Get(dummyID("other")); !errors.Is(err, ErrMiss) {
		t.Fatalf("Get(unknown) err = %v, want ErrMiss", err)
	}
}

func TestSameContentSharesObject(t *testing.T) {
	c, _ := Open(t.TempDir())
	o1 := putFiles(t, c, dummyID("a"), map[string]string{"f": "same"})
	o2 := putFiles(t, c, dummyID("b"), map[string]string{"f": "same"})
	if o1 != o2 {
		t.Fatalf("identical outputs got different IDs %s %s", o1, o2)
	}
}

func TestDamageIsMiss(t *testing.T) {
	tests := map[string]func(c *Cache, a ActionID, o OutputID){
		"truncated file": func(c *Cache, a ActionID, o OutputID) {
			os.WriteFile(filepath.Join(c.objectDir(o), "f"), []byte("sh"), 0o666)
		},
		"missing file": func(c *Cache, a ActionID, o OutputID) {
			os.Remove(filepath.Join(c.objectDir(o), "f"))
		},
		"edited manifest copy": func(c *Cache, a ActionID, o OutputID) {
			data, _ := os.ReadFile(c.actionFile(a))
			os.WriteFile(c.actionFile(a), bytes.Replace(data, []byte(`"size":7`), []byte(`"size":8`), 1), 0o666)
		},
		"truncated index": func(c *Cache, a ActionID, o OutputID) {
			data, _ := os.ReadFile(c.actionFile(a))
			os.WriteFile(c.actionFile(a), data[:len(data)-3], 0o666)
		},
		"partial index": func(c *Cache, a ActionID, o OutputID) {
			os.WriteFile(c.actionFile(a), []byte("v1 "+a.String()), 0o666)
		},
		"garbage index": func(c *Cache, a ActionID, o OutputID) {
			os.WriteFile(c.actionFile(a), []byte("\x00\x01garbage\n"), 0o666)
		},
		// Same size, and the mtime put back: only the ctime tells.
		"same-size byte flip": func(c *Cache, a ActionID, o OutputID) {
			p := filepath.Join(c.objectDir(o), "f")
			info, _ := os.Stat(p)
			os.Chmod(p, 0o644)
			os.WriteFile(p, []byte("cOntent"), 0o644)
			os.Chtimes(p, info.ModTime(), info.ModTime())
		},
		"file replaced by a symlink": func(c *Cache, a ActionID, o OutputID) {
			p := filepath.Join(c.objectDir(o), "f")
			elsewhere := filepath.Join(c.dir, "elsewhere")
			os.WriteFile(elsewhere, []byte("content"), 0o644)
			os.Remove(p)
			os.Symlink(elsewhere, p)
		},
	}
	for name, damage := range tests {
		t.Run(name, func(t *testing.T) {
			c, _ := Open(t.TempDir())
			a := dummyID(name)
			o := putFiles(t, c, a, map[string]string{"f": "content"})
			damage(c, a, o)
			if _, err := c.Get(a); !errors.Is(err, ErrMiss) {
				t.Fatalf("Get after damage: err = %v, want ErrMiss", err)
			}
			// Recomputing repairs the entry.
			o2 := putFiles(t, c, a, map[string]string{"f": "content"})
			if _, err := c.Get(a); err != nil || o2 != o {
				t.Fatalf("Get after re-Put: %v (outputs %s %s)", err, o, o2)
			}
		})
	}
}

func TestMissingObjectManifest(t *testing.T) {
	c, _ := Open(t.TempDir())
	o := putFiles(t, c, dummyID("a"), map[string]string{"f": "content"})
	os.Remove(c.manifestFile(o))
	if _, _, err := c.Output(o); err == nil {
		t.Fatal("Output with its manifest removed should fail")
	}
	if probs, _ := c.Verify(false); len(probs) != 1 {
		t.Fatalf("verify found %v, want the missing manifest", probs)
	}
}

func TestVerifyFindsBitrot(t *testing.T) {
	c, _ := Open(t.TempDir())
	a := dummyID("a")
	o := putFiles(t, c, a, map[string]string{"f": "content"})
	if probs, err := c.Verify(false); err != nil || len(probs) != 0 {
		t.Fatalf("clean cache: problems %v err %v", probs, err)
	}
	// Same size, different bytes: only a full verify sees it.
	os.WriteFile(filepath.Join(c.objectDir(o), "f"), []byte("CONTENT"), 0o666)
	probs, err := c.Verify(true)
	if err != nil || len(probs) != 1 {
		t.Fatalf("problems %v err %v, want 1", probs, err)
	}
	if _, err := c.Get(a); !errors.Is(err, ErrMiss) {
		t.Fatalf("repaired entry should be a miss, got %v", err)
	}
}

func TestGC(t *testing.T) {
	c, _ := Open(t.TempDir())
	now := time.Now()
	c.SetClock(func() time.Time { return now })
	old, fresh := dummyID("old"), dummyID("fresh")
	putFiles(t, c, old, map[string]string{"f": "old"})
	putFiles(t, c, fresh, map[string]string{"f": "fresh"})
	past := now.Add(-48 * time.Hour)
	os.Chtimes(c.actionFile(old), past, past)
	// An older torch worker's copy: programs are rewritten when needed.
	prog := filepath.Join(c.Dir(), "programs", "torch-worker-0123456789abcdef", "gatepipe_worker")
	os.MkdirAll(prog, 0o755)
	os.WriteFile(filepath.Join(prog, "run.py"), []byte("x = 1\n"), 0o644)
	st, err := c.GC(context.Background(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if st.Actions != 1 || st.Objects != 1 || st.Other != 1 {
		t.Fatalf("GC stats = %+v, want 1 action, 1 object and 1 other (the program)", st)
	}
	if _, err := os.Stat(filepath.Dir(prog)); !os.IsNotExist(err) {
		t.Fatalf("programs survived gc: %v", err)
	}
	if _, err := c.Get(old); !errors.Is(err, ErrMiss) {
		t.Fatal("old entry survived gc")
	}
	if _, err := c.Get(fresh); err != nil {
		t.Fatalf("fresh entry lost: %v", err)
	}
}

func TestBlobs(t *testing.T) {
	c, _ := Open(t.TempDir())
	tmp := filepath.Join(t.TempDir(), "dl")
	os.WriteFile(tmp, []byte("data"), 0o666)
	sum, _, _ := FileSHA256(tmp)
	if _, ok := c.BlobPath(sum.String()); ok {
		t.Fatal("blob present before add")
	}
	p, _, err := c.AddBlob(tmp, sum.String())
	if err != nil {
		t.Fatal(err)
	}
	got, ok := c.BlobPath(sum.String())
	if !ok || got != p {
		t.Fatalf("BlobPath = %q %v", got, ok)
	}
	if _, err := c.PartialPath("../evil"); err == nil {
		t.Fatal("PartialPath accepted a path")
	}
}

// TestConcurrentPutsOfSameContent: nodes that produce identical outputs
// share one object; while one installs it, another's Put must neither move
// it aside nor leave a moment in which the first cannot read it back.
func TestConcurrentPutsOfSameContent(t *testing.T) {
	c, _ := Open(t.TempDir())
	const workers, rounds = 8, 40
	for r := range rounds {
		content := fmt.Sprintf("round %d", r)
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			dir, err := c.TempDir("test")
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "log"), []byte(content), 0o666)
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, err := c.Put(dummyID(fmt.Sprintf("%d/%d", r, w)), dir, []byte(`null`))
				if err == nil {
					_, _, err = c.Output(o)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
	}
}

// TestStoredFilesAreReadOnlyCopies: a command output that is a hard link
// to a file outside the cache is stored as a copy, so editing that file
// later changes nothing cached.
func TestStoredFilesAreReadOnlyCopies(t *testing.T) {
	c, _ := Open(t.TempDir())
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("original"), 0o644)
	dir, _ := c.TempDir("test")
	if err := os.Link(outside, filepath.Join(dir, "out.txt")); err != nil {
		t.Skip("no hard links:", err)
	}
	a := dummyID("linked")
	o, err := c.Put(a, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(outside, []byte("ORIGINAL"), 0o644) // same size
	_, m, odir, err := c.GetOutput(a)
	if err != nil || m.Files[0].Size != 8 {
		t.Fatalf("Get after editing the linked file: %v", err)
	}
	p := filepath.Join(odir, "out.txt")
	if b, _ := os.ReadFile(p); string(b) != "original" {
		t.Fatalf("cached file follows the outside file: %q", b)
	}
	info, _ := os.Stat(p)
	if info.Mode().Perm()&0o222 != 0 {
		t.Fatalf("stored file is writable: %v", info.Mode())
	}
	if _, _, err := c.Output(o); err != nil {
		t.Fatal(err)
	}
}

// TestHitReadsOnlyStampsUntilAFileChanges: a hit whose stamps match does
// not re-hash; a file whose stamp changed (a chmod, here) is re-hashed
// once, served if intact, and its new stamp recorded.
func TestHitReadsOnlyStampsUntilAFileChanges(t *testing.T) {
	c, _ := Open(t.TempDir())
	hashed := 0
	c.hash = func(p string) (ID, int64, error) { hashed++; return FileSHA256(p) }
	a := dummyID("stamped")
	o := putFiles(t, c, a, map[string]string{"f": "content", "g": "other"})
	for i := 0; i < 3; i++ {
		if _, err := c.Get(a); err != nil {
			t.Fatal(err)
		}
	}
	if hashed != 0 {
		t.Fatalf("hits with matching stamps hashed %d files", hashed)
	}
	os.Chmod(filepath.Join(c.objectDir(o), "f"), 0o400) // changes the ctime
	for i := 0; i < 2; i++ {
		if _, err := c.Get(a); err != nil {
			t.Fatalf("intact file after a chmod: %v", err)
		}
	}
	if hashed != 1 {
		t.Fatalf("hashed %d files after one changed stamp, want 1", hashed)
	}
	os.Remove(c.stampFile(o)) // a lost stamp file costs one re-hash of each file
	c.Get(a)
	c.Get(a)
	if hashed != 3 {
		t.Fatalf("hashed %d files in all, want 3", hashed)
	}
}

func TestDamagedBlobIsNotServed(t *testing.T) {
	c, _ := Open(t.TempDir())
	tmp := filepath.Join(t.TempDir(), "dl")
	os.WriteFile(tmp, []byte("data"), 0o666)
	sum, _, _ := FileSHA256(tmp)
	p, _, err := c.AddBlob(tmp, sum.String())
	if err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(p)
	os.Chmod(p, 0o644)
	os.WriteFile(p, []byte("DATA"), 0o644)
	os.Chtimes(p, info.ModTime(), info.ModTime())
	if _, ok := c.BlobPath(sum.String()); ok {
		t.Fatal("a blob whose content no longer matches its name was served")
	}
	if _, err := os.Stat(p); err == nil {
		t.Fatal("the damaged blob was left in the store")
	}
}

func TestAddBlobVerifies(t *testing.T) {
	c, _ := Open(t.TempDir())
	tmp := filepath.Join(t.TempDir(), "dl")
	os.WriteFile(tmp, []byte("data"), 0o666)
	wrong := dummyID("not data").String()
	_, _, err := c.AddBlob(tmp, wrong)
	var ce *ChecksumError
	if !errors.As(err, &ce) {
		t.Fatalf("AddBlob with a wrong sha256: %v", err)
	}
	if _, ok := c.BlobPath(wrong); ok {
		t.Fatal("a blob was stored under a name its content does not match")
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Fatal("the wrong file was kept for resuming")
	}
}

func TestLockBlobSerialises(t *testing.T) {
	c, _ := Open(t.TempDir())
	ctx := context.Background()
	var mu sync.Mutex
	inside, most := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := c.LockBlob(ctx, "key")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Fatalf("%d holders of one blob lock at once", most)
	}
	if _, err := c.LockBlob(ctx, "../x"); err == nil {
		t.Fatal("a key with a path was accepted")
	}
}

// TestGCBesideAnApply: while an apply holds the cache (its shared lock),
// GCNow removes only what no run holds: an old download nobody reads and
// an old output no entry refers to, not a download a node is reading, an
// old entry (an apply may be about to read it) or a work directory. Once
// the apply ends, GCNow collects the rest.
func TestGCBesideAnApply(t *testing.T) {
	ctx := context.Background()
	c, _ := Open(t.TempDir())
	now := time.Now()
	c.SetClock(func() time.Time { return now })
	past := now.Add(-48 * time.Hour)
	blob := func(content string) string {
		tmp := filepath.Join(t.TempDir(), "dl")
		os.WriteFile(tmp, []byte(content), 0o666)
		p, sha, err := c.AddBlob(tmp, "")
		if err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, past, past)
		os.Chtimes(p+".stat", past, past)
		return sha
	}
	read, idle := blob("a source a node reads"), blob("a source nobody reads")
	old := dummyID("old entry")
	putFiles(t, c, old, map[string]string{"f": "old"})
	os.Chtimes(c.actionFile(old), past, past)
	orphan := putFiles(t, c, dummyID("orphan"), map[string]string{"f": "orphan"})
	os.Remove(c.actionFile(dummyID("orphan")))
	os.Chtimes(c.objectDir(orphan), past, past)
	work, _ := c.TempDir("running")
	// Two trainings' checkpoints, both old: one is running (its lock).
	held, unlockHeld, err := c.ResumeDir(ctx, "running-training")
	if err != nil {
		t.Fatal(err)
	}
	left, unlockLeft, _ := c.ResumeDir(ctx, "interrupted-training")
	unlockLeft()
	for _, d := range []string{held, left} {
		os.WriteFile(filepath.Join(d, "state.safetensors"), []byte("x"), 0o644)
		os.Chtimes(d, past, past)
	}

	unlockApply, err := c.LockShared(ctx)
	if err != nil {
		t.Fatal(err)
	}
	unlockUse, err := c.UseBlob(ctx, read)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.GCNow(ctx, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Beside || st.Blobs != 1 || st.Objects != 1 || st.Actions != 0 || st.Other != 1 {
		t.Fatalf("beside an apply: %+v, want the idle download, the orphan output and the interrupted checkpoints only", st)
	}
	if _, err := os.Stat(held); err != nil {
		t.Errorf("gc removed a running training's checkpoints: %v", err)
	}
	if _, err := os.Stat(left); err == nil {
		t.Error("an interrupted training's old checkpoints survived")
	}
	unlockHeld()
	// Stat, not BlobPath or Get: those mark a use.
	if _, err := os.Stat(c.blobFile(idle)); err == nil {
		t.Error("the idle download survived")
	}
	if _, err := os.Stat(c.blobFile(read)); err != nil {
		t.Errorf("gc removed a download a node is reading: %v", err)
	}
	if _, err := os.Stat(c.actionFile(old)); err != nil {
		t.Errorf("gc removed an entry beside an apply: %v", err)
	}
	if _, err := os.Stat(work); err != nil {
		t.Errorf("gc removed a running apply's work directory: %v", err)
	}
	unlockUse()
	unlockApply()
	if st, err = c.GCNow(ctx, 24*time.Hour); err != nil || st.Beside || st.Actions != 1 || st.Blobs != 1 {
		t.Fatalf("after the apply: %+v, %v; want the old entry and the download collected", st, err)
	}
}
