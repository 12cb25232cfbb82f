package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatepipe/gatepipe/internal/cifarfixture"
	"github.com/gatepipe/gatepipe/internal/hffixture"
)

// tierHub serves several Hub dataset repositories and plain URLs the way
// a mirror lays them out (/HOST/PATH), every revision resolving to
// hubCommit.
type tierHub struct {
	mu    sync.Mutex
	repos map[string]map[string][]byte // repo -> path -> content
	urls  map[string][]byte            // HOST/PATH -> content
	bytes atomic.Int64
	token string // required as a Bearer token when set
	// kaggle, when set, is the USER:KEY that www.kaggle.com paths require
	// as HTTP basic authentication (401 otherwise).
	kaggle string
}

func (h *tierHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := strings.TrimPrefix(r.URL.Path, "/")
	if u, k, ok := r.BasicAuth(); h.kaggle != "" && strings.HasPrefix(p, "www.kaggle.com/") && (!ok || u+":"+k != h.kaggle) {
		http.Error(w, `{"code":401,"message":"Unauthenticated"}`, http.StatusUnauthorized)
		return
	}
	if b, ok := h.urls[p]; ok {
		h.bytes.Add(int64(len(b)))
		w.Write(b)
		return
	}
	if h.token != "" && strings.Contains(p, "/revision/") && r.Header.Get("Authorization") != "Bearer "+h.token {
		http.Error(w, "gated", http.StatusUnauthorized)
		return
	}
	if serveRepos(w, p, h.repos, &h.bytes) {
		return
	}
	http.NotFound(w, r)
}

// serveRepos answers the Hub API and download paths (as a mirror lays
// them out) for the given dataset repositories, every revision resolving
// to hubCommit; false when p is none of them.
func serveRepos(w http.ResponseWriter, p string, repos map[string]map[string][]byte, count *atomic.Int64) bool {
	for repo, files := range repos {
		api := "huggingface.co/api/datasets/" + repo + "/"
		switch {
		case strings.HasPrefix(p, api+"revision/"):
			json.NewEncoder(w).Encode(map[string]string{"sha": hubCommit})
			return true
		case p == api+"tree/"+hubCommit || strings.HasPrefix(p, api+"tree/"+hubCommit+"/"):
			// The repository's root is listed without a trailing slash.
			dir := strings.TrimPrefix(p, api+"tree/"+hubCommit+"/")
			if p == api+"tree/"+hubCommit {
				dir = "."
			}
			out := []map[string]any{}
			subdirs := map[string]bool{}
			for name, b := range files {
				if path.Dir(name) == dir {
					sum := sha256.Sum256(b)
					out = append(out, map[string]any{"type": "file", "path": name, "size": len(b),
						"lfs": map[string]any{"oid": hex.EncodeToString(sum[:]), "size": len(b)}})
				}
				// Sub-directories are listed as the Hub lists them.
				for d := path.Dir(name); d != "." && d != dir; d = path.Dir(d) {
					if path.Dir(d) == dir && !subdirs[d] {
						subdirs[d] = true
						out = append(out, map[string]any{"type": "directory", "path": d})
					}
				}
			}
			json.NewEncoder(w).Encode(out)
			return true
		case strings.HasPrefix(p, "huggingface.co/datasets/"+repo+"/resolve/"+hubCommit+"/"):
			if b, ok := files[strings.TrimPrefix(p, "huggingface.co/datasets/"+repo+"/resolve/"+hubCommit+"/")]; ok {
				count.Add(int64(len(b)))
				w.Write(b)
				return true
			}
		}
	}
	return false
}

// segShard is an ADE20K-layout shard: 12x12 images whose mask marks a
// bright square as class 1 (the rest class 0).
func segShard(t *testing.T, n int, seed uint64) []byte {
	return segShardAs(t, n, seed, "annotation")
}

// segShardAs is segShard with its mask column named maskColumn.
func segShardAs(t *testing.T, n int, seed uint64, maskColumn string) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	var imgs, masks [][]byte
	for range n {
		img := image.NewRGBA(image.Rect(0, 0, 12, 12))
		mask := image.NewGray(image.Rect(0, 0, 12, 12))
		x0, y0 := rng.IntN(6), rng.IntN(6)
		for y := range 12 {
			for x := range 12 {
				v := uint8(rng.IntN(60))
				if x >= x0 && x < x0+6 && y >= y0 && y < y0+6 {
					v, mask.Pix[y*12+x] = 200+uint8(rng.IntN(40)), 1
				}
				img.Set(x, y, color.RGBA{v, v, v, 255})
			}
		}
		imgs, masks = append(imgs, hffixture.PNG(img)), append(masks, hffixture.PNG(mask))
	}
	var buf bytes.Buffer
	if err := hffixture.SegmentationAs(&buf, imgs, masks, maskColumn, 100); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// clevrMathShard is a CLEVR-Math-layout shard (the Hub's Parquet
// conversion): the answer is the number of bright squares the image shows,
// the question names what to count.
func clevrMathShard(t *testing.T, n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 5))
	var imgs [][]byte
	var qs []string
	var ans []int64
	for i := range n {
		count := i % 4
		img := image.NewRGBA(image.Rect(0, 0, 12, 12))
		for k := range count {
			for y := range 3 {
				for x := range 3 {
					img.Set(k*3+x, 4+y, color.RGBA{220, 220, 220, 255})
				}
			}
		}
		img.Set(rng.IntN(12), 11, color.RGBA{uint8(rng.IntN(80)), 0, 0, 255})
		imgs = append(imgs, hffixture.PNG(img))
		qs = append(qs, "Subtract all red spheres. How many cubes are left?")
		ans = append(ans, int64(count))
	}
	var buf bytes.Buffer
	if err := hffixture.VQA(&buf, imgs, qs, ans, 100); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// acdcShard is an ACDC-layout shard: 16x16 float slices with an integer
// mask of 3 classes.
func acdcShard(t *testing.T, n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	var imgs [][][]float32
	var masks [][][]int64
	for range n {
		img, mask := make([][]float32, 16), make([][]int64, 16)
		r := 3 + rng.IntN(4)
		for y := range 16 {
			img[y], mask[y] = make([]float32, 16), make([]int64, 16)
			for x := range 16 {
				d := (x-8)*(x-8) + (y-8)*(y-8)
				switch {
				case d < r*r/2:
					img[y][x], mask[y][x] = 0.9, 2
				case d < r*r:
					img[y][x], mask[y][x] = 0.5, 1
				}
				img[y][x] += float32(rng.Float64() * 0.1)
			}
		}
		imgs, masks = append(imgs, img), append(masks, mask)
	}
	var buf bytes.Buffer
	if err := hffixture.Arrays(&buf, imgs, masks, 100); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cifar100Tarball is cifar-100-python.tar.gz as its authors publish it
// and torchvision downloads it: train and test batches and the meta file,
// pickled by Python 2.
func cifar100Tarball(t *testing.T) []byte {
	rng := rand.New(rand.NewPCG(4, 4))
	batch := func(n int) []byte {
		px := make([]byte, 0, n*3072)
		fine, coarse := make([]int, n), make([]int, n)
		for i := range n {
			fine[i], coarse[i] = i%4, i%4/2
			for c := range 3 * 32 * 32 {
				px = append(px, byte(fine[i]*50+c%7+rng.IntN(20)))
			}
		}
		return cifarfixture.Py2Batch(px, n, map[string][]int{"fine_labels": fine, "coarse_labels": coarse})
	}
	names := make([]string, 100)
	for i := range names {
		names[i] = "class" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return cifarfixture.Tarball100(batch(120), batch(40), names)
}

// newTierHub serves fixtures of the small tier's readable benchmarks in
// their real layouts: Hub Parquet shards (classification, few-shot,
// ADE20K masks, ACDC arrays; ImageNet-1k gated) and the CIFAR-100 tarball.
func newTierHub(t *testing.T) (*tierHub, *httptest.Server) {
	cls := func(seed uint64) map[string][]byte {
		return map[string][]byte{
			"data/train-00000-of-00001.parquet":      parquetShard(t, 400, seed),
			"data/validation-00000-of-00001.parquet": parquetShard(t, 45, seed+1),
			"data/test-00000-of-00001.parquet":       parquetShard(t, 45, seed+2),
		}
	}
	h := &tierHub{
		repos: map[string]map[string][]byte{
			"ILSVRC/imagenet-1k":            cls(10),
			"GATE-engine/mini_imagenet":     cls(20),
			"GATE-engine/cubirds200_bbcrop": cls(30),
			"zhoubolei/scene_parse_150": {
				"scene_parsing/train/0000.parquet":      segShard(t, 60, 1),
				"scene_parsing/validation/0000.parquet": segShard(t, 30, 2),
			},
			"dali-does/clevr-math": {
				"general/train/0000.parquet":      clevrMathShard(t, 60, 1),
				"general/validation/0000.parquet": clevrMathShard(t, 20, 2),
				"general/test/0000.parquet":       clevrMathShard(t, 20, 3),
			},
			"GATE-engine/automated_cardiac_diagnosis_competition.ACDC": {
				"data/train-00000-of-00001.parquet": acdcShard(t, 60, 1),
				"data/test-00000-of-00001.parquet":  acdcShard(t, 30, 2),
			},
		},
		urls: map[string][]byte{"www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz": cifar100Tarball(t)},
	}
	zipped, splits := iwildcamFixture(t, 40)
	h.urls[iwildcamURL], h.repos[iwildcamSplit] = zipped, splits
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

const tierPipeline = `
encoder "mine" {
  arch     = "convnet"
  channels = [8]
  hidden   = []
}

module "gate" {
  source  = "stdlib/tiers/small"
  encoder = encoder.mine
  model   = "tiny-convnet"
  scale   = "test"
}

output "position" { value = module.gate.position }
output "not_run"  { value = module.gate.not_run }
output "measured" { value = module.gate.measured }
output "table"    { value = module.gate.table }
output "report"   { value = module.gate.report }
`

// TestSmallTierRunsEndToEnd applies the stdlib small tier with a user
// encoder at the "test" scale against fixtures of its readable benchmarks
// served as a mirror: the results table, the predicted placement among
// the paper's encoders and the report come out, and a second apply
// downloads nothing and runs nothing.
func TestSmallTierRunsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains six benchmarks")
	}
	hub, srv := newTierHub(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), tierPipeline)
	cache := filepath.Join(t.TempDir(), "c")
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + t.TempDir(), "HF_TOKEN=hf_tier", "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	hub.token = "hf_tier"

	if r := gpEnv(t, cache, env, "validate", dir); r.code != 0 {
		t.Fatalf("validate: %d\n%s", r.code, r.stderr)
	}
	r := gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 {
		filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
			if err == nil && (d.Name() == "matrix.csv" || d.Name() == "metrics.json") {
				t.Log(p, readFile(p))
			}
			return nil
		})
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`"acdc"`, `"ade20k"`, `"cifar100"`, `"clevr-math"`, `"cubirds"`, `"imagenet1k"`, `"iwildcam"`, `"mini"`, // measured
		`not_run = []`,                               // every benchmark of the tier
		"mIoU", "Acc@1", "MAE Score", "tiny-convnet", // the results table
		" of 22", // placed among the paper's 21 encoders and itself
		"report.html",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, r.stdout)
		}
	}
	lock := readFile(filepath.Join(dir, "gatepipe.lock.hcl"))
	for _, want := range []string{"hf ILSVRC/imagenet-1k@main", "cifar-100-python.tar.gz", "zhoubolei/scene_parse_150@refs/convert/parquet"} {
		if !strings.Contains(lock, want) {
			t.Errorf("lock file lacks %q", want)
		}
	}
	if grepTree(t, cache, "hf_tier") || strings.Contains(lock, "hf_tier") {
		t.Error("the token reached the cache or the lock file")
	}
	html := ""
	for _, line := range strings.Split(r.stdout, "\n") {
		if i := strings.Index(line, "/"); i >= 0 && strings.HasSuffix(strings.TrimSpace(line), "report.html\"") {
			html = strings.Trim(strings.TrimSpace(line[i:]), "\"")
		}
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("tiny-convnet")) || !bytes.Contains(b, []byte("Small")) {
		t.Errorf("report %q: %v, or it lacks the model or the tier", html, err)
	}

	before := hub.bytes.Load()
	r = gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 || hub.bytes.Load() != before || !strings.Contains(r.stdout+r.stderr, "nothing ran") {
		t.Fatalf("second apply: %d, %d bytes\n%s", r.code, hub.bytes.Load()-before, r.stderr)
	}
}
