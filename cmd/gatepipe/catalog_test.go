package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatalogModulesValidate: every benchmark of the paper's pool has a
// stdlib module, the catalog says runnable for each, and each validates.
func TestCatalogModulesValidate(t *testing.T) {
	f, err := os.Open("../../stdlib/datasets/catalog.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows)-1 != 31 {
		t.Fatalf("catalog has %d benchmarks, the paper's pool 31", len(rows)-1)
	}
	cache := t.TempDir()
	for _, row := range rows[1:] {
		id, status := row[0], row[7]
		t.Run(id, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.hcl"), "module \"b\" {\n  source = \"stdlib/datasets/"+strings.ReplaceAll(id, "-", "_")+"\"\n}\n")
			r := gp(t, cache, "validate", dir)
			if !strings.HasPrefix(status, "runnable") {
				t.Fatalf("catalog status %q: every benchmark of the pool has a reader", status)
			}
			if r.code != 0 {
				t.Fatalf("validate: %d\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestCatalogModuleAppliesThroughMirror runs the stdlib mini-ImageNet
// module against fixture shards in the Hub's layout served as a mirror.
func TestCatalogModuleAppliesThroughMirror(t *testing.T) {
	hub, srv := newFakeHub(t)
	hub.repo = "GATE-engine/mini_imagenet"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
module "mini" {
  source     = "stdlib/datasets/mini"
  image_size = [8, 8]
  max_train  = 200
}
output "splits" { value = module.mini.dataset.splits }
output "info"   { value = module.mini.info.citation }
`)
	cache := filepath.Join(t.TempDir(), "c")
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + t.TempDir()}
	r := gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"200", "Vinyals"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	before := hub.bytes.Load()
	r = gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 || hub.bytes.Load() != before || !strings.Contains(r.stdout+r.stderr, "nothing ran") {
		t.Fatalf("second apply: %d, %d bytes\n%s", r.code, hub.bytes.Load()-before, r.stderr)
	}
	if !strings.Contains(readFile(filepath.Join(dir, "gatepipe.lock.hcl")), "hf GATE-engine/mini_imagenet@main") {
		t.Fatal("the module's source is not in the root's lock file")
	}
}
