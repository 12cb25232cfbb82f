package cache

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestResumeDirsOutliveRunsUntilDroppedOrOld: a resume directory is
// locked while held, survives its holder, is removed by DropResume, and
// gc removes one nobody came back to within the age but keeps a fresh one.
func TestResumeDirsOutliveRunsUntilDroppedOrOld(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir, unlock, err := c.ResumeDir(ctx, "k1")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "state"), []byte("x"), 0o644)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if _, _, err := c.ResumeDir(short, "k1"); err == nil {
		t.Fatal("a held resume directory was handed out twice")
	}
	cancel()
	unlock()
	dir2, unlock2, err := c.ResumeDir(ctx, "k1")
	if err != nil || dir2 != dir {
		t.Fatalf("second hold: %v %q", err, dir2)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); err != nil {
		t.Fatalf("the checkpoint did not survive its holder: %v", err)
	}
	if err := c.DropResume("k1"); err != nil {
		t.Fatal(err)
	}
	unlock2()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dropped directory still there: %v", err)
	}
	if _, _, err := c.ResumeDir(ctx, "../x"); err == nil {
		t.Fatal("a key with a slash was accepted")
	}

	old, u1, _ := c.ResumeDir(ctx, "old")
	fresh, u2, _ := c.ResumeDir(ctx, "fresh")
	u1()
	u2()
	past := time.Now().Add(-48 * time.Hour)
	os.Chtimes(old, past, past)
	if _, err := c.GC(ctx, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("gc kept a resume directory untouched for 48 h")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("gc removed a fresh resume directory: %v", err)
	}
}
