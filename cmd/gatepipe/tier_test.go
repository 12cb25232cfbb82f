package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatepipe/gatepipe/internal/smokehub"
	"github.com/gatepipe/gatepipe/internal/torchtest"
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

// serveRepos answers the Hub API and download paths for repos
// (smokehub.ServeRepos).
func serveRepos(w http.ResponseWriter, p string, repos map[string]map[string][]byte, count *atomic.Int64) bool {
	return smokehub.ServeRepos(w, p, repos, count)
}

// must returns a fixture, failing t when it could not be made.
func must(t *testing.T) func([]byte, error) []byte {
	return func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func segShard(t *testing.T, n int, seed uint64) []byte {
	return must(t)(smokehub.SegShard(n, seed, "annotation"))
}

func segShardAs(t *testing.T, n int, seed uint64, maskColumn string) []byte {
	return must(t)(smokehub.SegShard(n, seed, maskColumn))
}

func clevrMathShard(t *testing.T, n int, seed uint64) []byte {
	return must(t)(smokehub.ClevrMathShard(n, seed))
}

func acdcShard(t *testing.T, n int, seed uint64) []byte { return must(t)(smokehub.ACDCShard(n, seed)) }

func cifar100Tarball(t *testing.T) []byte { return smokehub.CIFAR100Tarball() }

// newTierHub serves fixtures of the small tier's readable benchmarks in
// their real layouts: Hub Parquet shards (classification, few-shot,
// ADE20K masks, ACDC arrays; ImageNet-1k gated) and the CIFAR-100 tarball.
func newTierHub(t testing.TB) (*tierHub, *httptest.Server) {
	small, err := smokehub.SmallTier()
	if err != nil {
		t.Fatal(err)
	}
	h := &tierHub{repos: small.Repos, urls: small.URLs}
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
  adapters = "compact"
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
	// GATE's adapters (adapters = "gate") train on CPU torch at their
	// test sizes; the Go runtime trains the relational and retrieval heads.
	torchtest.Need(t, "torch")
	hub, srv := newTierHub(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(tierPipeline, `adapters = "compact"`, fmt.Sprintf("python  = %q\n  adapters = \"gate\"", torchtest.Python()), 1))
	cache := filepath.Join(t.TempDir(), "c")
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + t.TempDir(), "HF_TOKEN=hf_tier", "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	hub.token = "hf_tier"

	if r := gpEnv(t, cache, env, "validate", dir); r.code != 0 {
		t.Fatalf("validate: %d\n%s", r.code, r.stderr)
	}
	// Each GATE adapter's card, on the torch runtime.
	if r := gpEnv(t, cache, env, "plan", dir); r.code != 0 || !strings.Contains(r.stdout, "Protocol: GATE's adapters") ||
		!strings.Contains(r.stdout, `train.run["ade20k"]: transformer decoder head (1 blocks (computed by GATE but not applied), width 16, 2 heads`) ||
		!strings.Contains(r.stdout, `train.run["iwildcam"]: temporal transformer head (1 blocks, width 16, 2 heads, on a 16-d projection), l1 loss`) ||
		!strings.Contains(r.stdout, `train.run["clevr-math"]: relational transformer head (1 blocks, width 16, 2 heads, on a 16-d projection), text openai/clip-vit-base-patch16 (its tokenizer; a 1-layer width-16 tower from the seed)`) ||
		!strings.Contains(r.stdout, "GATE's adapters run on PyTorch") {
		t.Fatalf("plan: %d\n%s\n%s", r.code, r.stdout, r.stderr)
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
	// ACDC's measured Dice and the paper's column on one scale (fractions).
	checkedDice := false
	filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "predictions.csv" {
			return nil
		}
		for _, line := range strings.Split(readFile(p), "\n") {
			f := strings.Split(line, ",")
			if len(f) == 7 && f[1] == "acdc" && f[2] == "Dice Score" {
				pred, _ := strconv.ParseFloat(f[3], 64)
				meas, err := strconv.ParseFloat(f[5], 64)
				if err != nil || meas < 0 || meas > 1 || pred < 0 || pred > 1 {
					t.Errorf("acdc Dice Score: predicted %s, measured %q, want both fractions", f[3], f[5])
				}
				checkedDice = true
			}
		}
		return nil
	})
	if !checkedDice {
		t.Error("no acdc Dice Score in predictions.csv")
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
	checkTierReport(t, readFile(html), r.stdout)

	before := hub.bytes.Load()
	r = gpEnv(t, cache, env, "apply", dir)
	if r.code != 0 || hub.bytes.Load() != before || !strings.Contains(r.stdout+r.stderr, "nothing ran") {
		t.Fatalf("second apply: %d, %d bytes\n%s", r.code, hub.bytes.Load()-before, r.stderr)
	}
}

// checkTierReport: the tier's report leads with the placement the apply
// prints, with its interval, under the scale's caveat and the protocol;
// it shows iWildCam's measured MAE and says why iWildCam is left out of
// the placement; the measured model's one rank is its placement.
func checkTierReport(t *testing.T, page, stdout string) {
	t.Helper()
	pos := regexp.MustCompile(`position = "(\d+ of 22 \(interval \d+–\d+\))`).FindStringSubmatch(stdout)
	if pos == nil {
		t.Fatalf("apply prints no position with its interval:\n%s", stdout)
	}
	lead, tiers := strings.Index(page, "<b>tiny-convnet: "+pos[1]+"</b>"), strings.Index(page, `<table class="results" id="tiers">`)
	if lead < 0 || lead > tiers {
		t.Errorf("the report does not lead with the placement %s", pos[1])
	}
	for _, want := range []string{"Scale test: mechanics only, not comparable with the paper.", "<dt>protocol</dt><dd>gate — ",
		"Measured but left out of the placement: iwildcam"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, l := range strings.Split(page, "\n") {
		switch {
		case strings.HasPrefix(l, `<tr><th scope="row">iwildcam:MAE Score `) && strings.HasSuffix(l, `–</td></tr>`):
			t.Errorf("iwildcam's measured MAE is missing from the report:\n%s", l)
		case strings.Contains(l, "Small GATE Rank</span>") && !strings.HasSuffix(l, "see placement</td></tr>"):
			t.Errorf("the Small GATE Rank row gives tiny-convnet a rank of its own:\n%s", l)
		}
	}
}
