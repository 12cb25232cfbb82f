package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/formats/safetensors"
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
// holds the small tier's Hub datasets and the encoder's model repository;
// with HF_HUB_OFFLINE=1 and no network, apply runs the tier from that
// cache in place (no Parquet file
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

	// CIFAR-100 and iWildCam's competition zip are plain URLs, not Hub
	// repositories: fetched once, while the network is there, through a
	// pipeline holding them alone.
	writeFile(t, filepath.Join(dir, "main.hcl"), `
module "cifar" {
  source = "stdlib/datasets/cifar100"
}
module "iwildcam" {
  source = "stdlib/datasets/iwildcam"
}
`)
	if r := gpEnv(t, cache, []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + home, "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}, "fetch", dir); r.code != 0 {
		t.Fatalf("fetch: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	blobsBefore := listTree(t, filepath.Join(cache, "blobs"))

	// The encoder's weights come from a model repository in the same cache.
	if _, err := hfcachefixture.Write(hfRoot, "models", "gate-test/tiny-convnet", "main", hubCommit, convnetModelFiles(t)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(tierPipeline, `  channels = [8]
  hidden   = []`, `  channels = [4, 6]
  hidden   = [12]
  weights  = "hf:gate-test/tiny-convnet"`, 1))
	hfBefore := listTree(t, hfRoot)
	offline := []string{"HF_HUB_OFFLINE=1", "HF_HUB_CACHE=" + hfRoot, "HOME=" + home, "GATEPIPE_MIRROR=http://127.0.0.1:1"}
	served := hub.bytes.Load()
	r := gpEnv(t, cache, offline, "apply", dir)
	if r.code != 0 {
		t.Fatalf("offline apply from the Hugging Face cache: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`"acdc"`, `"ade20k"`, `"cifar100"`, `"clevr-math"`, `"cubirds"`, `"imagenet1k"`, `"iwildcam"`, `"mini"`} {
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
	if n := strings.Count(r.stderr, `weights=hf:gate-test/tiny-convnet`); n < 7 {
		t.Errorf("the encoder's Hub weights were loaded by %d of the 7 benchmarks:\n%s", n, r.stderr)
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
// sources as "0 file(s), 0 B" to download: where their servers cannot be
// asked (no network here), their sizes are unknown, and why.
func TestPlanSaysUnpinnedSizesAreUnknown(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), hubPipeline)
	r := gpEnv(t, filepath.Join(t.TempDir(), "c"), []string{"HOME=" + t.TempDir(), "HF_ENDPOINT=http://127.0.0.1:1"}, "plan", dir)
	for _, want := range []string{"Downloads: 0 pinned file(s), 0 B to fetch, plus 2 source(s) not pinned yet.", "(size unknown: ", "plus 2 source(s) of unknown size"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("plan does not say %q: %d\n%s%s", want, r.code, r.stdout, r.stderr)
		}
	}
}

// timmModelFiles is the train package's ViT parity fixture as a timm Hub
// model repository holds it: model.safetensors under timm's names (no
// "encoder." prefix, the head as head.*) and a config.json whose
// pretrained_cfg gives the evaluation transform.
func timmModelFiles(t *testing.T) []hfcachefixture.File {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join("..", "..", "train", "testdata", "parity", "vit.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for name, tensor := range f.Tensors {
		if strings.HasPrefix(name, "parity.") {
			continue
		}
		tensor.Name = strings.TrimPrefix(name, "encoder.")
		ts = append(ts, *tensor)
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := safetensors.WriteFile(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	model, _ := os.ReadFile(path)
	config := `{"architecture": "vit_parity_tiny", "num_classes": 5, "pretrained_cfg": {"input_size": [3, 8, 8], "interpolation": "bicubic", "crop_pct": 1.0, "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}}`
	return []hfcachefixture.File{
		{Path: "model.safetensors", Data: model, LFS: true},
		{Path: "config.json", Data: []byte(config)},
		{Path: "README.md", Data: []byte("---\nlibrary_name: timm\n---\n")},
	}
}

const hubWeightsPipeline = `
dataset "shapes" {
  format = "generated"
  generator {
    task  = "shape"
    train = 40
    test  = 10
    size  = 12
    seed  = 3
  }
  val_fraction = 0.2
}
encoder "vit" {
  arch      = "vit"
  patch     = 4
  dim       = 16
  depth     = 2
  heads     = 2
  mlp_ratio = 2
  weights   = "hf:timm/vit_parity_tiny.test_in1k"
}
benchmark "shapes" {
  dataset = dataset.shapes.path
  id      = "shapes"
}
features "vit" {
  encoder   = encoder.vit
  benchmark = benchmark.shapes
}
output "dim" { value = features.vit.dim }
`

// TestHubWeightsFromTheHFCache: weights = "hf:OWNER/NAME" reads a timm
// model from the Hugging Face cache offline (config.json's transform
// applied, model.safetensors loaded in place, nothing copied into the blob
// store); a second apply is cached; online, the same model is pinned in
// the lock file under hf-model and fetched through a mirror.
func TestHubWeightsFromTheHFCache(t *testing.T) {
	files := timmModelFiles(t)
	hfRoot := filepath.Join(t.TempDir(), "hub")
	if _, err := hfcachefixture.Write(hfRoot, "models", "timm/vit_parity_tiny.test_in1k", "main", hubCommit, files); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), hubWeightsPipeline)
	cache := filepath.Join(t.TempDir(), "c")
	offline := []string{"HF_HUB_OFFLINE=1", "HF_HUB_CACHE=" + hfRoot, "HOME=" + t.TempDir()}
	if r := gpEnv(t, cache, offline, "validate", dir); r.code != 0 {
		t.Fatalf("validate: %d\n%s", r.code, r.stderr)
	}
	r := gpEnv(t, cache, offline, "apply", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "dim = 16") || !strings.Contains(r.stderr, `weights=hf:timm/vit_parity_tiny.test_in1k`) || !strings.Contains(r.stderr, "tensors=") {
		t.Fatalf("offline apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sum := sha256.Sum256(files[0].Data)
	if model := hex.EncodeToString(sum[:]); fileExists(filepath.Join(cache, "blobs", model[:2], model)) {
		t.Errorf("the model was copied into the blob store")
	}
	if r = gpEnv(t, cache, offline, "apply", dir); r.code != 0 || !strings.Contains(r.stdout, "nothing ran") {
		t.Fatalf("second apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Without the cache, validate cannot know the architecture when no
	// arch is given, and says what to do.
	dir3 := t.TempDir()
	writeFile(t, filepath.Join(dir3, "main.hcl"), "encoder \"vit\" {\n  weights = \"hf:timm/vit_parity_tiny.test_in1k\"\n}\n")
	r = gpEnv(t, filepath.Join(t.TempDir(), "c3"), []string{"HOME=" + t.TempDir()}, "validate", dir3)
	if msg := strings.Join(strings.Fields(r.stderr), " "); r.code == 0 || !strings.Contains(msg, "is not pinned yet, so its config.json, which names the architecture, cannot be read: run `gatepipe fetch` (or apply), or set preset") || !strings.Contains(msg, "main.hcl:2") {
		t.Errorf("validate without the model: %d\n%s", r.code, r.stderr)
	}

	// With the network (a mirror serving the Hub), apply pins the
	// model in the lock file and fetches it.
	srv := timmHub(t, files)
	dir2 := t.TempDir()
	writeFile(t, filepath.Join(dir2, "main.hcl"), hubWeightsPipeline)
	online := []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + t.TempDir(), "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	if r = gpEnv(t, filepath.Join(t.TempDir(), "c2"), online, "apply", dir2); r.code != 0 || !strings.Contains(r.stdout, "dim = 16") {
		t.Fatalf("online apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if lock := readFile(filepath.Join(dir2, "gatepipe.lock.hcl")); !strings.Contains(lock, `source "hf-model timm/vit_parity_tiny.test_in1k@main model.safetensors config.json"`) {
		t.Errorf("lock file:\n%s", lock)
	}
}

// timmHub is a local Hub (a mirror) serving the model repository
// timm/vit_parity_tiny.test_in1k with files.
func timmHub(t *testing.T, files []hfcachefixture.File) *httptest.Server {
	t.Helper()
	hub := &tierHub{repos: map[string]map[string][]byte{}}
	modelRepo := map[string][]byte{}
	for _, f := range files {
		modelRepo[f.Path] = f.Data
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, "/")
		p = strings.Replace(p, "huggingface.co/api/models/", "huggingface.co/api/datasets/", 1)
		p = strings.Replace(p, "huggingface.co/timm/", "huggingface.co/datasets/timm/", 1)
		if !serveRepos(w, p, map[string]map[string][]byte{"timm/vit_parity_tiny.test_in1k": modelRepo}, &hub.bytes) {
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHubWeightsThroughFetchMirrorLockAndOffline: weights = "hf:..." of an
// encoder whose block waits on its dataset are sources like a dataset's:
// plan names them, fetch downloads them (and writes them into the Hugging
// Face cache with -hf-cache), mirror copies them, lock keeps their pin;
// with the Hub gone, -offline applies on gatepipe's cache or on the
// Hugging Face cache give the online run's features, and an -offline run
// with neither refuses before starting, naming the files.
func TestHubWeightsThroughFetchMirrorLockAndOffline(t *testing.T) {
	files := timmModelFiles(t)
	srv := timmHub(t, files)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), hubWeightsPipeline+`output "features" { value = features.vit.path }
`)
	hfRoot := filepath.Join(t.TempDir(), "hub")
	home := "HOME=" + t.TempDir()
	online := []string{"GATEPIPE_MIRROR=" + srv.URL, home, "HF_HUB_CACHE=" + hfRoot}
	cache := filepath.Join(t.TempDir(), "c")
	said := func(r result) string { return strings.Join(strings.Fields(r.stdout+r.stderr), " ") }

	if r := gpEnv(t, cache, online, "fetch", "-hf-cache", dir); r.code != 0 || !strings.Contains(said(r), "2 file(s) in the cache") || !strings.Contains(said(r), "fetching https://huggingface.co/timm/vit_parity_tiny.test_in1k/resolve/"+hubCommit+"/model.safetensors") {
		t.Fatalf("fetch -hf-cache: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"model.safetensors", "config.json"} {
		if !fileExists(filepath.Join(hfRoot, "models--timm--vit_parity_tiny.test_in1k", "snapshots", hubCommit, f)) {
			t.Errorf("fetch -hf-cache did not write %s into the Hugging Face cache", f)
		}
	}
	noHF := "HF_HUB_CACHE=" + filepath.Join(t.TempDir(), "none")
	if r := gpEnv(t, filepath.Join(t.TempDir(), "fresh"), []string{home, noHF}, "plan", dir); r.code != 0 || !strings.Contains(said(r), "Downloads: 2 pinned file(s)") ||
		!strings.Contains(said(r), "encoder.vit: hf-model timm/vit_parity_tiny.test_in1k@main model.safetensors config.json (2 file(s), 24.") {
		t.Errorf("plan on a fresh cache does not name the weights' files:\n%s%s", r.stdout, r.stderr)
	}
	if r := gpEnv(t, cache, online, "lock", dir); r.code != 0 {
		t.Fatalf("lock: %d\n%s", r.code, r.stderr)
	}
	if lock := readFile(filepath.Join(dir, "gatepipe.lock.hcl")); !strings.Contains(lock, `hf-model timm/vit_parity_tiny.test_in1k@main model.safetensors config.json`) {
		t.Errorf("lock dropped the model's pin:\n%s", lock)
	}
	mirror := t.TempDir()
	if r := gpEnv(t, cache, online, "mirror", mirror, dir); r.code != 0 || !strings.Contains(said(r), "model.safetensors") || !strings.Contains(said(r), "2 file(s) in the mirror") {
		t.Errorf("mirror: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r := gpEnv(t, cache, online, "apply", dir)
	if r.code != 0 {
		t.Fatalf("online apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := featuresOf(t, r.stdout)
	srv.Close() // the Hub is gone
	for name, env := range map[string][]string{
		"gatepipe's cache":       {home, "HF_HUB_CACHE=" + filepath.Join(t.TempDir(), "none")},
		"the Hugging Face cache": {home, "HF_HUB_CACHE=" + hfRoot},
	} {
		c := cache
		if name != "gatepipe's cache" {
			c = filepath.Join(t.TempDir(), "c2")
		}
		r := gpEnv(t, c, env, "apply", "-offline", "-replace", "features.vit", dir)
		if r.code != 0 {
			t.Fatalf("offline apply from %s: %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
		if got := featuresOf(t, r.stdout); got != want {
			t.Errorf("offline apply from %s: features differ from the online run's", name)
		}
	}
	r = gpEnv(t, filepath.Join(t.TempDir(), "c3"), []string{home, "HF_HUB_CACHE=" + filepath.Join(t.TempDir(), "none")}, "apply", "-offline", dir)
	if r.code == 0 || !strings.Contains(said(r), "model.safetensors (sha256") || !strings.Contains(said(r), "config.json (sha256") || strings.Contains(said(r), "dim =") {
		t.Errorf("offline apply without the weights: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// featuresOf is the SHA-256 of the features files under the path the
// apply printed as its "features" output.
func featuresOf(t *testing.T, stdout string) string {
	t.Helper()
	_, rest, ok := strings.Cut(stdout, `features = "`)
	if !ok {
		t.Fatalf("no features output in\n%s", stdout)
	}
	dir, _, _ := strings.Cut(rest, `"`)
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".safetensors") {
			return err
		}
		b, err := os.ReadFile(p)
		h.Write([]byte(d.Name()))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestFetchWritesTheHFCache: fetch -hf-cache puts every Hub file it pins
// into the Hugging Face cache in huggingface_hub's layout (refs, blobs
// named by the LFS SHA-256, relative snapshot links), creating the cache;
// an offline apply on a fresh gatepipe cache then reads the dataset there.
func TestFetchWritesTheHFCache(t *testing.T) {
	_, srv := newFakeHub(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
dataset "tiny" {
  source {
    hf    = "gate/tiny"
    files = ["data/train-*.parquet", "data/test-*.parquet"]
  }
  format     = "parquet"
  train      = ["data/train-*.parquet"]
  test       = ["data/test-*.parquet"]
  image_size = [8, 8]
}
output "splits" { value = dataset.tiny.splits }
`)
	hfRoot := filepath.Join(t.TempDir(), "hf", "hub") // does not exist yet
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + t.TempDir(), "HF_HUB_CACHE=" + hfRoot, "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	if r := gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "fetch", "-hf-cache", dir); r.code != 0 || !strings.Contains(r.stdout, "also in the Hugging Face cache "+hfRoot) {
		t.Fatalf("fetch -hf-cache: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	repo := filepath.Join(hfRoot, "datasets--gate--tiny")
	if got := readFile(filepath.Join(repo, "refs", "main")); got != hubCommit {
		t.Errorf("refs/main = %q", got)
	}
	link := filepath.Join(repo, "snapshots", hubCommit, "data", "train-00001-of-00002.parquet")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(link)
	sum := sha256.Sum256(data)
	if want := filepath.Join("..", "..", "..", "blobs", hex.EncodeToString(sum[:])); target != want || len(data) == 0 {
		t.Errorf("snapshot link -> %s, want %s (the blob named by its SHA-256)", target, want)
	}
	r := gpEnv(t, filepath.Join(t.TempDir(), "fresh"), []string{"HF_HUB_OFFLINE=1", "HF_HUB_CACHE=" + hfRoot, "HOME=" + t.TempDir()}, "apply", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "270") {
		t.Fatalf("offline apply from the Hugging Face cache fetch wrote: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// convnetModelFiles is the train package's convnet parity fixture as a
// model repository holds it (gatepipe's names; config.json with the 8x8
// RGB transform its 24-wide dense layer expects, and no architecture to
// take a preset from).
func convnetModelFiles(t *testing.T) []hfcachefixture.File {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join("..", "..", "train", "testdata", "parity", "convnet.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for name, tensor := range f.Tensors {
		if strings.HasPrefix(name, "encoder.") {
			ts = append(ts, *tensor)
		}
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := safetensors.WriteFile(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	model, _ := os.ReadFile(path)
	return []hfcachefixture.File{{Path: "model.safetensors", Data: model, LFS: true}, {Path: "config.json", Data: []byte(`{"num_classes": 0, "pretrained_cfg": {"input_size": [3, 8, 8], "interpolation": "bilinear", "crop_pct": 1.0, "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}}`)}}
}

// TestHugeHubConfigIsRefusedBeforeHashing: a Hub model whose config.json
// in the Hugging Face cache is an 8 GiB blob (a damaged or hostile cache
// entry) is refused by its size, named, before anything hashes it; it used
// to be hashed first (34-65 s for 5-10 GiB) and its size refused after.
func TestHugeHubConfigIsRefusedBeforeHashing(t *testing.T) {
	files := timmModelFiles(t)
	for i := range files {
		files[i].LFS = true
	}
	hfRoot := filepath.Join(t.TempDir(), "hub")
	repo, err := hfcachefixture.Write(hfRoot, "models", "timm/vit_parity_tiny.test_in1k", "main", hubCommit, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == "config.json" {
			// A sparse file: 8 GiB to stat, nothing on disk.
			if err := os.Truncate(filepath.Join(repo, "blobs", f.Etag()), 8<<30); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), hubWeightsPipeline)
	offline := []string{"HF_HUB_OFFLINE=1", "HF_HUB_CACHE=" + hfRoot, "HOME=" + t.TempDir()}
	r := gpEnv(t, filepath.Join(t.TempDir(), "c"), offline, "apply", dir)
	if msg := strings.Join(strings.Fields(r.stderr), " "); r.code == 0 || !strings.Contains(msg, "config.json is 8589934592 bytes") {
		t.Fatalf("apply: %d\n%s", r.code, r.stderr)
	}
}
