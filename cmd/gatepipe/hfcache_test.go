package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/internal/hfcachefixture"
)

// writeTierHFCache lays the small tier's Hub repositories of hub out as a
// Hugging Face cache (huggingface_hub's layout) at root, each at the
// revision its stdlib module asks for.
func writeTierHFCache(t *testing.T, hub *tierHub, root string) {
	t.Helper()
	revisions := map[string]string{"zhoubolei/scene_parse_150": "refs/convert/parquet", "dali-does/clevr-math": "refs/convert/parquet"}
	for repo, files := range hub.repos {
		var fs []hfcachefixture.File
		for p, b := range files {
			fs = append(fs, hfcachefixture.File{Path: p, Data: b, LFS: true})
		}
		fs = append(fs, hfcachefixture.File{Path: ".gitattributes", Data: []byte("*.parquet filter=lfs diff=lfs merge=lfs -text\n")})
		rev := revisions[repo]
		if rev == "" {
			rev = "main"
		}
		if _, err := hfcachefixture.Write(root, "datasets", repo, rev, hubCommit, fs); err != nil {
			t.Fatal(err)
		}
	}
}

// listTree lists the files under root with their sizes and mtimes.
func listTree(t *testing.T, root string) string {
	var lines []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			info, _ := os.Lstat(p)
			lines = append(lines, fmt.Sprintf("%s %d %d", p, info.Size(), info.ModTime().UnixNano()))
		}
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestSmallTierFromTheHFCacheOffline: a researcher's Hugging Face cache
// holds the small tier's Hub datasets; with HF_HUB_OFFLINE=1 and no
// network, apply runs the tier from that cache in place (no Parquet file
// copied into gatepipe's blob store, the Hugging Face cache unchanged, no
// token needed for the gated ImageNet-1k). A damaged blob in the cache is
// refused and named.
func TestSmallTierFromTheHFCacheOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("trains six benchmarks")
	}
	hub, srv := newTierHub(t)
	hfRoot := filepath.Join(t.TempDir(), "hf", "hub")
	writeTierHFCache(t, hub, hfRoot)
	dir := t.TempDir()
	cache := filepath.Join(t.TempDir(), "c")
	home := t.TempDir()

	// CIFAR-100 is a plain URL, not a Hub repository: fetched once, while
	// the network is there, through a pipeline holding it alone.
	writeFile(t, filepath.Join(dir, "main.hcl"), `
module "cifar" {
  source = "stdlib/datasets/cifar100"
}
`)
	if r := gpEnv(t, cache, []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + home}, "fetch", dir); r.code != 0 {
		t.Fatalf("fetch: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	blobsBefore := listTree(t, filepath.Join(cache, "blobs"))

	writeFile(t, filepath.Join(dir, "main.hcl"), tierPipeline)
	hfBefore := listTree(t, hfRoot)
	offline := []string{"HF_HUB_OFFLINE=1", "HF_HUB_CACHE=" + hfRoot, "HOME=" + home, "GATEPIPE_MIRROR=http://127.0.0.1:1"}
	served := hub.bytes.Load()
	r := gpEnv(t, cache, offline, "apply", dir)
	if r.code != 0 {
		t.Fatalf("offline apply from the Hugging Face cache: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`"acdc"`, `"ade20k"`, `"cifar100"`, `"clevr-math"`, `"cubirds"`, `"imagenet1k"`, `"mini"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("measured lacks %s:\n%s", want, r.stdout)
		}
	}
	if hub.bytes.Load() != served {
		t.Errorf("%d bytes were downloaded offline", hub.bytes.Load()-served)
	}
	if after := listTree(t, filepath.Join(cache, "blobs")); after != blobsBefore {
		t.Errorf("the blob store changed (Parquet copied?):\nbefore\n%s\nafter\n%s", blobsBefore, after)
	}
	if after := listTree(t, hfRoot); after != hfBefore {
		t.Errorf("the Hugging Face cache was modified")
	}
	if !strings.Contains(r.stderr, "from the Hugging Face cache") {
		t.Errorf("the log does not say where the data came from:\n%s", r.stderr)
	}

	// Damage one blob (same size): applying that dataset again refuses it,
	// naming it, and fails offline instead of reading it.
	repoDir := filepath.Join(hfRoot, "datasets--GATE-engine--mini_imagenet")
	shard := filepath.Join(repoDir, "snapshots", hubCommit, "data", "train-00000-of-00001.parquet")
	blob, err := filepath.EvalSymlinks(shard)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(blob)
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r = gpEnv(t, cache, offline, "apply", "-replace", "module.gate.module.run.module.mini.dataset.data[0]", dir)
	msg := strings.Join(strings.Fields(r.stderr), " ")
	if r.code == 0 || !strings.Contains(msg, "is not used") || !strings.Contains(msg, "mini_imagenet") {
		t.Fatalf("apply with a damaged blob in the Hugging Face cache: %d\n%s", r.code, r.stderr)
	}
}

// TestNoNetworkFailsFastWithOneHint: with the sources' host unreachable
// (here a mirror that refuses connections), apply fails at once: one
// error per source, no retries, and one closing hint naming fetch,
// -offline, -mirror and the Hugging Face cache it looked in.
func TestNoNetworkFailsFastWithOneHint(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
module "mini" {
  source = "stdlib/datasets/mini"
}
module "cubirds" {
  source = "stdlib/datasets/cubirds"
}
`)
	hfRoot := filepath.Join(t.TempDir(), "hub")
	os.MkdirAll(hfRoot, 0o755)
	start := time.Now()
	r := gpEnv(t, filepath.Join(t.TempDir(), "c"), []string{"GATEPIPE_MIRROR=http://127.0.0.1:1", "HOME=" + t.TempDir(), "HF_HUB_CACHE=" + hfRoot}, "apply", dir)
	took := time.Since(start)
	out := r.stdout + r.stderr
	if r.code == 0 || took > 5*time.Second {
		t.Fatalf("exit %d after %v\n%s", r.code, took, out)
	}
	for _, want := range []string{"module.mini.dataset.data[0]: hf GATE-engine/mini_imagenet", "module.cubirds.dataset.data[0]: hf GATE-engine/cubirds200_bbcrop", "cannot reach 127.0.0.1:1",
		"2 source(s) failed because their host could not be reached", "gatepipe fetch PATH", "apply -offline", "-mirror DIR|URL", hfRoot} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(out, "is this machine offline?"); n != 1 || strings.Contains(out, "retrying") || strings.Contains(out, "giving up") {
		t.Errorf("the hint %d times, or retries:\n%s", n, out)
	}
}

// TestPlanSaysUnpinnedSizesAreUnknown: plan does not present unpinned
// sources as "0 file(s), 0 B" to download.
func TestPlanSaysUnpinnedSizesAreUnknown(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), hubPipeline)
	r := gpEnv(t, filepath.Join(t.TempDir(), "c"), []string{"HOME=" + t.TempDir()}, "plan", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "Downloads: 0 pinned file(s), 0 B to fetch, plus 2 source(s) not pinned yet whose size is unknown until they are fetched") {
		t.Fatalf("plan: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
