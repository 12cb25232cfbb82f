package main

import (
	"bytes"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/pipelines"
)

// TestPlantedPartialDoesNotLeaveTheCache: with a local source's blob
// removed and its partial file (partial/local-<sha256>.part) replaced by
// a link to a file elsewhere, `apply -replace` overwrote that file with
// the source's bytes and stored the blob as a link to it, and `cache
// verify` called the cache intact. Now the file elsewhere is unchanged,
// the blob is a regular file, and verify finds a link planted elsewhere
// in the cache and -repair removes it.
func TestPlantedPartialDoesNotLeaveTheCache(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "data.bin"), strings.Repeat("a source's bytes\n", 100))
	writeFile(t, filepath.Join(dir, "main.hcl"), `
dataset "d" {
  source {
    url = "data.bin"
  }
  format = "raw"
}
`)
	if r := gp(t, cache, "apply", dir); r.code != 0 {
		t.Fatalf("apply: %s%s", r.stdout, r.stderr)
	}
	blobs, _ := filepath.Glob(filepath.Join(cache, "blobs", "*", "*"))
	var sha string
	for _, b := range blobs {
		if !strings.HasSuffix(b, ".stat") {
			sha = filepath.Base(b)
		}
		os.Remove(b)
	}
	if sha == "" {
		t.Fatalf("no blob stored: %v", blobs)
	}
	victim := filepath.Join(t.TempDir(), "precious")
	precious := []byte("the user's own file\n")
	writeFile(t, victim, string(precious))
	if err := os.Symlink(victim, filepath.Join(cache, "partial", "local-"+sha+".part")); err != nil {
		t.Fatal(err)
	}
	if r := gp(t, cache, "apply", "-replace=dataset.d", dir); r.code != 0 {
		t.Fatalf("apply -replace: %s%s", r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(victim); !bytes.Equal(got, precious) {
		t.Fatalf("the file outside the cache was overwritten: %q", got)
	}
	blob := filepath.Join(cache, "blobs", sha[:2], sha)
	if info, err := os.Lstat(blob); err != nil || !info.Mode().IsRegular() {
		t.Fatalf("the blob is not a regular file: %v", err)
	}
	// A link planted elsewhere: verify names it; -repair removes the link only.
	link := filepath.Join(cache, "objects", "zz")
	os.Symlink(filepath.Dir(victim), link)
	r := gp(t, cache, "cache", "verify")
	if r.code == 0 || !strings.Contains(r.stdout, "symbolic link") || !strings.Contains(r.stdout, "objects/zz") {
		t.Fatalf("cache verify with a planted link: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := gp(t, cache, "cache", "verify", "-repair"); r.code != 0 {
		t.Fatalf("cache verify -repair: %s%s", r.stdout, r.stderr)
	}
	if _, err := os.Lstat(link); err == nil {
		t.Fatal("verify -repair left the planted link")
	}
	if got, _ := os.ReadFile(victim); !bytes.Equal(got, precious) {
		t.Fatalf("repair changed the file outside the cache: %q", got)
	}
}

// TestGCDeletesNothingOutsideTheCache: with objects/zz a link to a
// directory elsewhere holding an old file, `cache gc -older-than 1s`
// deleted that file. Now gc removes the link, says so, and the file stays.
func TestGCDeletesNothingOutsideTheCache(t *testing.T) {
	cache := t.TempDir()
	if r := gp(t, cache, "cache", "du"); r.code != 0 {
		t.Fatalf("cache du: %s%s", r.stdout, r.stderr)
	}
	elsewhere := t.TempDir()
	old := filepath.Join(elsewhere, "old-results.csv")
	writeFile(t, old, "model,acc\nmine,0.9\n")
	past := time.Now().Add(-48 * time.Hour)
	os.Chtimes(old, past, past)
	os.Symlink(elsewhere, filepath.Join(cache, "objects", "zz"))
	r := gp(t, cache, "cache", "gc", "-older-than", "1s")
	if r.code != 0 {
		t.Fatalf("gc: %s%s", r.stdout, r.stderr)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("gc deleted a file outside the cache: %v", err)
	}
	if !strings.Contains(r.stdout, "objects/zz") {
		t.Errorf("gc did not report the planted link:\n%s", r.stdout)
	}
}

// TestSpecialFilesAsSourcesAreRefusedAtPlan: `url = "/dev/zero"` hung
// plan at 100% CPU (hashing the device) and ignored SIGTERM; a FIFO as a
// CSV source blocked forever. Both are refused at plan, naming the file
// and the block's line, before anything is read.
func TestSpecialFilesAsSourcesAreRefusedAtPlan(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "train.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, want string }{
		{"/dev/zero", "source /dev/zero is a character device, not a regular file"},
		{"train.csv", "is a FIFO (named pipe), not a regular file"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			writeFile(t, filepath.Join(dir, "main.hcl"), `
locals {
  x = 1
}

dataset "d" {
  source {
    url = "`+tc.url+`"
  }
  format       = "csv"
  train        = ["train.csv"]
  label_column = "y"
}
`)
			done := make(chan result, 1)
			go func() { done <- gp(t, t.TempDir(), "plan", dir) }()
			select {
			case r := <-done:
				flat := strings.Join(strings.Fields(r.stderr), " ")
				if r.code != exitConfigError || !strings.Contains(flat, tc.want) || !strings.Contains(r.stderr, "main.hcl:6") {
					t.Fatalf("plan: exit %d, want %d with %q at main.hcl:6:\n%s", r.code, exitConfigError, tc.want, r.stderr)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("plan hung on a special file")
			}
		})
	}
}

// TestFallbackCacheIsPrivate: with HOME, XDG_CACHE_HOME and
// GATEPIPE_CACHE_DIR unset, the cache went to $TMPDIR/gatepipe-cache and
// an existing world-writable directory there was used without a check.
// Now the home directory comes from the password database, and the last
// resort, gatepipe-cache-<uid> in the temporary directory, is made 0700
// or refused when it is not the user's own and private.
func TestFallbackCacheIsPrivate(t *testing.T) {
	c := &cli{env: func(string) string { return "" }}
	if got := c.cacheDir("", &pipelines.Settings{}, "."); strings.HasPrefix(got, os.TempDir()) {
		if u, err := user.Current(); err == nil && u.HomeDir != "" && u.HomeDir != "/" {
			t.Errorf("without $HOME the cache is %s, not under the user's home %s", got, u.HomeDir)
		}
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := fallbackCacheDir()
	if filepath.Dir(dir) != tmp || !strings.Contains(filepath.Base(dir), strconv.Itoa(os.Getuid())) {
		t.Fatalf("fallback %s: want gatepipe-cache-<uid> in %s", dir, tmp)
	}
	var errb bytes.Buffer
	c.stderr = &errb
	if _, err := c.openCache(dir); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Errorf("fallback cache made with mode %04o, want 0700", info.Mode().Perm())
	}
	if !strings.Contains(errb.String(), "GATEPIPE_CACHE_DIR") {
		t.Errorf("no warning that the cache is in the temporary directory: %q", errb.String())
	}
	for _, tc := range []struct {
		name, want string
		spoil      func()
	}{
		{"world-writable", "chmod 700", func() { os.Chmod(dir, 0o1777) }},
		{"another user's", "belongs to user 4242", func() {
			if os.Getuid() != 0 {
				t.Skip("only root can give a directory away")
			}
			os.Chown(dir, 4242, 4242)
		}},
		{"a link", "not a directory", func() {
			os.RemoveAll(dir)
			os.Symlink(t.TempDir(), dir)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(dir)
			os.Mkdir(dir, 0o700)
			tc.spoil()
			_, err := c.openCache(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("openCache of %s fallback: %v, want %q", tc.name, err, tc.want)
			}
		})
	}
}
