package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheOpenFailureIsHeadedBySo: a cache that cannot be opened (here
// its directory would lie under a regular file; for a user, a directory
// without write permission) was reported as "Error: Error"; the heading
// now says what failed and the detail names the directory and the cause,
// in text and in JSON.
func TestCacheOpenFailureIsHeadedBySo(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), "command \"ok\" {\n  run = [\"true\"]\n}\n")
	file := filepath.Join(t.TempDir(), "a-file")
	writeFile(t, file, "not a directory")
	cacheDir := filepath.Join(file, "cache")
	for _, verb := range []string{"plan", "apply"} {
		t.Run(verb, func(t *testing.T) {
			code, _, stderr := runCLI(verb, "-cache-dir", cacheDir, dir)
			if code == 0 || strings.Contains(stderr, "Error: Error") || !strings.Contains(stderr, "Error: Cannot open the cache\n") ||
				!strings.Contains(stderr, cacheDir) || !strings.Contains(stderr, "not a directory") {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		_, _, stderr := runCLI("plan", "-log-format", "json", "-cache-dir", cacheDir, dir)
		var d jsonDiag
		if err := json.Unmarshal([]byte(strings.TrimSpace(stderr)), &d); err != nil {
			t.Fatalf("%v: %s", err, stderr)
		}
		if d.Severity != "error" || d.Summary != "Cannot open the cache" || !strings.Contains(d.Detail, cacheDir) {
			t.Fatalf("diagnostic %+v", d)
		}
	})
}

// TestShowServesADamagedManifestAsApplyDoes: with the manifest beside a
// cached output damaged, apply still serves the output from the copy in
// its action's index entry; show failed ("does not match its hash") and
// now finds it the same way.
func TestShowServesADamagedManifestAsApplyDoes(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), "command \"ok\" {\n  run = [\"true\"]\n}\n")
	if r := gp(t, cache, "apply", dir); r.code != 0 {
		t.Fatalf("apply: %s%s", r.stdout, r.stderr)
	}
	manifests, _ := filepath.Glob(filepath.Join(cache, "objects", "*", "*.json"))
	if len(manifests) == 0 {
		t.Fatal("no manifest in the cache")
	}
	for _, p := range manifests {
		if err := os.WriteFile(p, []byte("{damaged"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := gp(t, cache, "apply", dir); r.code != 0 || !strings.Contains(r.stdout, "cached") {
		t.Fatalf("apply after damage: %d %s%s", r.code, r.stdout, r.stderr)
	}
	r := gp(t, cache, "show", "command.ok", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "command.ok (command): cached") || !strings.Contains(r.stdout, "command.log") {
		t.Fatalf("show: %d %s%s", r.code, r.stdout, r.stderr)
	}
}
