package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMirrorServesAFreshCache: gatepipe mirror writes every file a
// pipeline pins (a Hub dataset's shards, a Kaggle download) into a
// directory laid out HOST/PATH; a plain HTTP file server over that
// directory, or the directory itself, then lets a fresh cache apply the
// same pipeline (with its lock file) without the original hosts, and no
// credential is needed or written into the mirror.
func TestMirrorServesAFreshCache(t *testing.T) {
	hub, srv := newFakeHub(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), hubPipeline)
	home := t.TempDir()
	creds := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + home, "KAGGLE_USERNAME=me", "KAGGLE_KEY=kagglekey"}
	cache1 := filepath.Join(t.TempDir(), "c1")
	mirror := filepath.Join(t.TempDir(), "mirror")
	if r := gpEnv(t, cache1, creds, "mirror", mirror, dir); r.code != 0 {
		t.Fatalf("mirror: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{"huggingface.co/datasets/gate/tiny/resolve/" + hubCommit + "/data/train-00001-of-00002.parquet",
		"www.kaggle.com/api/v1/datasets/download/someone/skin"} {
		if _, err := os.Stat(filepath.Join(mirror, filepath.FromSlash(p))); err != nil {
			t.Errorf("the mirror lacks %s: %v", p, err)
		}
	}
	if grepTree(t, mirror, "kagglekey") {
		t.Error("a credential reached the mirror")
	}
	// Again: nothing to write.
	if r := gpEnv(t, cache1, creds, "mirror", mirror, dir); r.code != 0 || !strings.Contains(r.stdout, "4 file(s) in the mirror") || !strings.Contains(r.stdout, "0 written now") {
		t.Fatalf("second mirror: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	served := hub.bytes.Load()
	files := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	t.Cleanup(files.Close)
	for name, m := range map[string]string{"plain HTTP server": files.URL, "directory": mirror} {
		t.Run(name, func(t *testing.T) {
			r := gpEnv(t, filepath.Join(t.TempDir(), "fresh"), []string{"GATEPIPE_MIRROR=" + m, "HOME=" + t.TempDir()}, "apply", dir)
			if r.code != 0 || !strings.Contains(r.stdout, "270") {
				t.Fatalf("apply from the mirror: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
	if hub.bytes.Load() != served {
		t.Errorf("applies from the mirror downloaded %d bytes from the original hosts", hub.bytes.Load()-served)
	}
}
