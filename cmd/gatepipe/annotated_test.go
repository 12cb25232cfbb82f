package main

import (
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/annotatedfixture"
)

const hamURL = "www.kaggle.com/api/v1/datasets/download/kmader/skin-cancer-mnist-ham10000"

// annotatedHub serves the Kaggle HAM10000 zip (behind Kaggle credentials)
// and nlphuji/flickr30k's image zip and caption CSV, as a mirror lays
// them out.
func annotatedHub(t *testing.T) (*tierHub, *httptest.Server) {
	t.Helper()
	ham, err := annotatedfixture.HAM10000(60)
	if err != nil {
		t.Fatal(err)
	}
	var caps []annotatedfixture.Caption
	words := []string{"dog", "cat", "bike", "man", "woman", "child", "ball", "tree"}
	for i := range 40 {
		split := "train"
		if i%5 == 3 {
			split = "val"
		} else if i%5 == 4 {
			split = "test"
		}
		caps = append(caps, annotatedfixture.Caption{Text: "A " + words[i%8] + " near a " + words[(i/8)%8], Split: split})
	}
	images, csv, err := annotatedfixture.Flickr30k(caps)
	if err != nil {
		t.Fatal(err)
	}
	h := &tierHub{
		urls:   map[string][]byte{hamURL: ham},
		repos:  map[string]map[string][]byte{"nlphuji/flickr30k": {"flickr30k-images.zip": images, "flickr_annotations_30k.csv": csv}},
		kaggle: "ada:kaggle-key-123",
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

// TestKaggleAndCaptionModulesThroughMirror runs the stdlib HAM10000
// (Kaggle zip + CSV) and Flickr30k (caption zip + CSV) modules against
// fixtures in their real layouts through a mirror: missing or refused
// Kaggle credentials fail with what to set, the datasets come out with
// their classes and splits, the lock file pins both sources without the
// key, a second apply downloads nothing, and a changed upstream file is
// refused with both hashes.
func TestKaggleAndCaptionModulesThroughMirror(t *testing.T) {
	hub, srv := annotatedHub(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
module "ham" {
  source     = "stdlib/datasets/ham10k"
  image_size = [8, 8]
}
module "flickr" {
  source     = "stdlib/datasets/flickr30k"
  image_size = [8, 8]
}
output "ham_classes"   { value = module.ham.dataset.classes }
output "ham_splits"    { value = module.ham.dataset.splits }
output "ham_task"      { value = module.ham.dataset.task }
output "flickr_splits" { value = module.flickr.dataset.splits }
output "flickr_task"   { value = module.flickr.dataset.task }
`)
	cache := filepath.Join(t.TempDir(), "c")
	home := t.TempDir()
	base := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + home}

	r := gpEnv(t, cache, base, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "KAGGLE_USERNAME") || !strings.Contains(r.stderr, "kaggle.json") {
		t.Fatalf("apply without Kaggle credentials: %d, want a message saying what to set\n%s", r.code, r.stderr)
	}
	writeFile(t, filepath.Join(home, ".kaggle", "kaggle.json"), `{"username":"ada","key":"wrong"}`)
	r = gpEnv(t, cache, base, "apply", dir)
	if msg := strings.Join(strings.Fields(r.stderr), " "); r.code == 0 || !strings.Contains(msg, "401") || !strings.Contains(msg, "Kaggle refused the credentials") {
		t.Fatalf("apply with refused credentials: %d\n%s", r.code, r.stderr)
	}

	env := append(base, "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123")
	r = gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		`ham_classes = ["akiec","bcc","bkl","df","mel","nv","vasc"]`,
		`ham_splits = {"test":12,"train":42,"val":6}`, // a seeded 70/10/20 of 60
		`ham_task = "multilabel"`,
		`flickr_splits = {"test":8,"train":24,"val":8}`, // the CSV's split column
		`flickr_task = "retrieval"`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %s:\n%s", want, r.stdout)
		}
	}
	lock := readFile(filepath.Join(dir, "gatepipe.lock.hcl"))
	for _, want := range []string{"url https://" + hamURL, "hf nlphuji/flickr30k@main"} {
		if !strings.Contains(lock, want) {
			t.Errorf("lock file lacks %q:\n%s", want, lock)
		}
	}
	if grepTree(t, cache, "kaggle-key-123") || strings.Contains(lock, "kaggle-key-123") {
		t.Error("the Kaggle key reached the cache or the lock file")
	}

	before := hub.bytes.Load()
	r = gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 || hub.bytes.Load() != before || !strings.Contains(r.stdout+r.stderr, "nothing ran") {
		t.Fatalf("second apply: %d, %d bytes\n%s", r.code, hub.bytes.Load()-before, r.stderr)
	}

	// Upstream changes the archive: a fresh cache must refuse it against
	// the lock file.
	changed, err := annotatedfixture.HAM10000(61)
	if err != nil {
		t.Fatal(err)
	}
	hub.mu.Lock()
	hub.urls[hamURL] = changed
	hub.mu.Unlock()
	r = gpEnv(t, filepath.Join(t.TempDir(), "fresh"), env, "apply", dir)
	if msg := strings.Join(strings.Fields(r.stderr), " "); r.code == 0 || !strings.Contains(msg, "checksum mismatch") || strings.Count(msg, "sha256 ") < 2 {
		t.Fatalf("a changed upstream file was not refused with both hashes: %d\n%s", r.code, r.stderr)
	}
}

// TestTierRunsMedicalAndRetrievalBenchmarks trains the stdlib tier engine
// on HAM10000 (multi-label head) and Flickr30k (retrieval head) fixtures
// and checks that their metrics, named as in GATE's matrix, reach the
// results table and the prediction.
func TestTierRunsMedicalAndRetrievalBenchmarks(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two benchmarks")
	}
	_, srv := annotatedHub(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
encoder "mine" {
  arch     = "convnet"
  channels = [8]
  hidden   = []
}

module "gate" {
  source     = "stdlib/tiers/run"
  benchmarks = ["ham10k", "flickr30k"]
  encoder    = encoder.mine
  model      = "tiny-convnet"
  scale      = "test"
  adapters   = "compact"
}

output "measured" { value = module.gate.measured }
output "table"    { value = module.gate.table }
output "position" { value = module.gate.position }
`)
	cache := filepath.Join(t.TempDir(), "c")
	base := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + t.TempDir()}
	// Without a Kaggle key HAM10000 cannot be had; Flickr30k still trains
	// (each benchmark depends on its own dataset alone).
	r := gpEnv(t, cache, base, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stderr, `finished done=`) || !regexp.MustCompile(`finished .*train\.run\[\\"flickr30k\\"\]`).MatchString(r.stderr) {
		t.Fatalf("apply without a Kaggle key: %d; Flickr30k should have trained anyway\n%s", r.code, r.stderr)
	}
	env := append(base, "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123")
	r = gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// With the key, HAM10000 runs and Flickr30k's training is reused.
	if regexp.MustCompile(`started .*train\.run\[\\"flickr30k\\"\]`).MatchString(r.stderr) {
		t.Errorf("Flickr30k trained again once HAM10000 could be downloaded:\n%s", r.stderr)
	}
	for _, want := range []string{`"flickr30k"`, `"ham10k"`, "AUC Macro", "Img2Txt Acc@1", "Txt2Img Acc@1", " of 22"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, r.stdout)
		}
	}
}
