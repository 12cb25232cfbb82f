package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/hffixture"
)

// winogroundShard is a facebook/winoground-layout shard of n items: an
// item's two images differ in class and its captions swap two words.
func winogroundShard(t *testing.T, n int) []byte {
	rng := rand.New(rand.NewPCG(8, 8))
	words := []string{"dog", "cat", "bike", "man", "woman", "child", "ball", "tree"}
	var imgs [][2][]byte
	var caps [][2]string
	for i := range n {
		a, b := words[i%8], words[(i+3)%8]
		imgs = append(imgs, [2][]byte{hffixture.PNG(hffixture.ClassImage(i%8, 12, 12, rng)), hffixture.PNG(hffixture.ClassImage((i+3)%8, 12, 12, rng))})
		caps = append(caps, [2]string{"a " + a + " beside a " + b, "a " + b + " beside a " + a})
	}
	var buf bytes.Buffer
	if err := hffixture.Winoground(&buf, imgs, caps, 100); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// captionContestShard is a jmhessel/newyorker_caption_contest
// "explanation"-layout shard: n cartoons, each with a caption naming what
// it shows.
func captionContestShard(t *testing.T, n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 9))
	words := []string{"bear", "desk", "boat", "cake", "moon", "fish", "door", "sofa"}
	var imgs [][]byte
	var contests []int32
	var caps []string
	for i := range n {
		imgs = append(imgs, hffixture.PNG(hffixture.ClassImage(i%8, 12, 12, rng)))
		contests = append(contests, int32(100+i))
		caps = append(caps, fmt.Sprintf("that %s again", words[i%8]))
	}
	var buf bytes.Buffer
	if err := hffixture.CaptionContest(&buf, imgs, contests, caps, 100); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// captionHub serves Winoground (gated: HF token) and NYCC's explanation
// config in their Hub layouts.
func captionHub(t *testing.T) (*tierHub, *httptest.Server) {
	h := &tierHub{
		repos: map[string]map[string][]byte{
			"facebook/winoground": {"data/test-00000-of-00001.parquet": winogroundShard(t, 60)},
			"jmhessel/newyorker_caption_contest": {
				"explanation/train-00000-of-00001.parquet":      captionContestShard(t, 48, 1),
				"explanation/validation-00000-of-00001.parquet": captionContestShard(t, 16, 2),
				"explanation/test-00000-of-00001.parquet":       captionContestShard(t, 16, 3),
			},
		},
		token: "hf_winoground",
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

// TestNYCCAndWinogroundTrainThroughMirror applies the tier engine to
// NYCC (its real source, not GATE's Flickr30k) and Winoground fixtures:
// Winoground is gated and asks for HF_TOKEN; with it both train the
// retrieval head, and metrics.json names the results as GATE's matrix
// columns do for these two benchmarks ("Img2Txt", not "Img2Txt Acc@1"),
// with Winoground's text, image and group scores beside them.
func TestNYCCAndWinogroundTrainThroughMirror(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two benchmarks")
	}
	_, srv := captionHub(t)
	dir := t.TempDir()
	writeTierEngine(t, dir, `["nycc", "winoground"]`)
	cache := filepath.Join(t.TempDir(), "c")
	base := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + t.TempDir()}
	r := gpEnv(t, cache, base, "apply", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "HF_TOKEN") {
		t.Fatalf("apply without a token: %d, want a message naming HF_TOKEN\n%s", r.code, r.stderr)
	}
	r = gpEnv(t, cache, append(base, "HF_TOKEN=hf_winoground"), "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "not_run = []") {
		t.Errorf("a benchmark was not run:\n%s", r.stdout)
	}
	want := map[string][]string{
		"nycc":       {"Img2Txt", "Txt2Img", "Img2Txt Acc@5", "Img2Txt Loss"},
		"winoground": {"Img2Txt", "Txt2Img", "Img2Txt Loss", "Txt2Img Loss", "Text Score", "Image Score", "Group Score"},
	}
	found := map[string]bool{}
	for _, m := range readMetricsFiles(t, cache) {
		if want[m.Benchmark] == nil {
			continue
		}
		found[m.Benchmark] = true
		for _, name := range want[m.Benchmark] {
			if _, ok := m.Metrics[name]; !ok {
				t.Errorf("%s: metrics.json lacks %q: %v", m.Benchmark, name, m.Metrics)
			}
		}
		for _, name := range []string{"Img2Txt Acc@1", "Txt2Img Acc@1"} {
			if _, ok := m.Metrics[name]; ok {
				t.Errorf("%s: %q is reported under flickr30k's name, not the benchmark's column name", m.Benchmark, name)
			}
		}
		if _, ok := m.Metrics["Img2Txt Acc@5"]; ok && m.Benchmark == "winoground" {
			t.Errorf("winoground reports Acc@5 over pairs of two")
		}
	}
	if !found["nycc"] || !found["winoground"] {
		t.Fatalf("metrics found for %v", found)
	}
}

// metricsFile is what a train node's metrics.json holds.
type metricsFile struct {
	Benchmark string                     `json:"benchmark"`
	Metrics   map[string]json.RawMessage `json:"metrics"`
}

// readMetricsFiles reads every metrics.json under the cache.
func readMetricsFiles(t *testing.T, cache string) []metricsFile {
	t.Helper()
	var out []metricsFile
	filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.Name() != "metrics.json" {
			return nil
		}
		data, _ := os.ReadFile(p)
		var m metricsFile
		if json.Unmarshal(data, &m) == nil {
			out = append(out, m)
		}
		return nil
	})
	return out
}

// writeTierEngine writes a pipeline that runs the stdlib tier engine on
// the benchmarks (an HCL list) with a tiny convnet at the "test" scale,
// with not_run and measured as outputs.
func writeTierEngine(t *testing.T, dir, benchmarks string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
encoder "mine" {
  arch     = "convnet"
  channels = [8]
  hidden   = []
}

module "gate" {
  source     = "stdlib/tiers/run"
  benchmarks = `+benchmarks+`
  encoder    = encoder.mine
  model      = "tiny-convnet"
  scale      = "test"
  adapters   = "compact"
}

output "not_run"  { value = module.gate.not_run }
output "measured" { value = module.gate.measured }
`)
}
