package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/annotatedfixture"
	"github.com/gatepipe/gatepipe/internal/torchtest"
	"github.com/gatepipe/gatepipe/internal/videofixture"
)

// chestXrayRepo is alkzar90/NIH-Chest-X-ray-dataset's layout: image zips
// (images/NNNNNNNN_000.png inside), the Data_Entry CSV with "|"-separated
// findings, and the official train/val and test lists. Findings follow
// the grey level; the module keeps GATE's five (Cardiomegaly, Mass,
// Nodule, Pneumothorax, Edema) and drops the images with none of them.
func chestXrayRepo(t *testing.T, n int) map[string][]byte {
	return chestXrayRepoOf(t, n, []string{"Cardiomegaly|Nodule|Effusion", "Mass|Pneumothorax", "No Finding", "Edema|Cardiomegaly"})
}

// chestXrayRepoOf is that layout with example i's findings findings[i%4].
func chestXrayRepoOf(t *testing.T, n int, findings []string) map[string][]byte {
	levels := []byte{220, 40, 130, 180}
	images := map[string][]byte{}
	var csv, trainList, testList strings.Builder
	csv.WriteString("Image Index,Finding Labels,Follow-up #,Patient ID,Patient Age,Patient Gender,View Position\n")
	for i := range n {
		name := fmt.Sprintf("%08d_000.png", i+1)
		images["images/"+name] = annotatedfixture.GreyImage(levels[i%4], true)
		fmt.Fprintf(&csv, "%s,%s,0,%d,58,M,PA\n", name, findings[i%4], i+1)
		if i%5 == 4 {
			fmt.Fprintln(&testList, name)
		} else {
			fmt.Fprintln(&trainList, name)
		}
	}
	zipped, err := annotatedfixture.Zip(images)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"data/images/images_001.zip":     zipped,
		"data/Data_Entry_2017_v2020.csv": []byte(csv.String()),
		"data/train_val_list.txt":        []byte(trainList.String()),
		"data/test_list.txt":             []byte(testList.String()),
	}
}

// allTiersHub serves, in their real layouts, fixtures of every benchmark
// of the small, base and big tiers: the small tier's (newTierHub) and the
// others' (Hub Parquet, GulpIO, HDF5 tar shards, Places365's tars, the
// NIH zips, Flickr30k's zip and CSV, Kinetics' parts).
func allTiersHub(t *testing.T) (*tierHub, *httptest.Server) {
	h, srv := newTierHub(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	cls := func(seed uint64, test string) map[string][]byte {
		return map[string][]byte{
			"data/train-00000-of-00001.parquet":        parquetShard(t, 400, seed),
			"data/" + test + "-00000-of-00001.parquet": parquetShard(t, 45, seed+1),
		}
	}
	seg := func(seed uint64) map[string][]byte {
		return map[string][]byte{
			"data/train-00000-of-00001.parquet": segShardAs(t, 60, seed, "mask"),
			"data/test-00000-of-00001.parquet":  segShardAs(t, 30, seed+1, "mask"),
		}
	}
	add := map[string]map[string][]byte{
		"GATE-engine/fungi":                cls(40, "test"),
		"GATE-engine/omniglot":             cls(50, "test"),
		"GATE-engine/aircraft_bbcrop":      cls(60, "test"),
		"ethz/food101":                     cls(70, "validation"),
		"GATE-engine/COCOStuff10K":         seg(80),
		"GATE-engine/COCOStuff164K":        seg(90),
		"kiyoonkim/hmdb51-gulprgb":         gulpRepo(t, 40, "train1.csv", "test1.csv"),
		"kiyoonkim/ucf-101-gulprgb":        gulpRepo(t, 40, "trainlist01.txt", "testlist01.txt"),
		"alkzar90/NIH-Chest-X-ray-dataset": chestXrayRepo(t, 60),
		"sayakpaul/nyu_depth_v2": {
			"data/train-000000.tar": nyuShard(t, "train", 50, 1),
			"data/val-000000.tar":   nyuShard(t, "val", 10, 2),
			"data/val-000001.tar":   nyuShardNamed(t, 6),
		},
		"facebook/winoground": {"data/test-00000-of-00001.parquet": winogroundShard(t, 60)},
		"jmhessel/newyorker_caption_contest": {
			"explanation/train-00000-of-00001.parquet":      captionContestShard(t, 48, 1),
			"explanation/validation-00000-of-00001.parquet": captionContestShard(t, 16, 2),
			"explanation/test-00000-of-00001.parquet":       captionContestShard(t, 16, 3),
		},
	}
	for repo, files := range add {
		h.repos[repo] = files
	}
	flickr, _ := annotatedHub(t)
	for repo, files := range flickr.repos {
		h.repos[repo] = files
	}
	parts, lists := kineticsFixture(t)
	for u, b := range parts {
		h.urls[u] = b
	}
	h.repos["kiyoonkim/kinetics-400-splits"] = lists
	places := places365Mirror(t, 10, "")
	for _, f := range []string{"filelist_places365-standard.tar", "train_256_places365standard.tar", "val_256.tar"} {
		u := "data.csail.mit.edu/places/places365/" + f
		b, err := os.ReadFile(filepath.Join(places, filepath.FromSlash(u)))
		if err != nil {
			t.Fatal(err)
		}
		h.urls[u] = b
	}
	return h, srv
}

// TestBaseAndBigTiersMeasureEveryBenchmark applies the stdlib base (15
// benchmarks) and big (21) tiers at the "test" scale to fixtures of all
// their benchmarks through a mirror: each measures every benchmark of its
// tier (not_run is empty), reports a placement among the paper's
// encoders; big trains GATE's adapters (the tiers' default) on torch.
func TestBaseAndBigTiersMeasureEveryBenchmark(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 23 benchmarks")
	}
	videofixture.Need(t)
	hub, srv := allTiersHub(t)
	hub.token = "hf_tier"
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + t.TempDir(), "HF_TOKEN=hf_tier", "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	cache := filepath.Join(t.TempDir(), "c")
	// base with gatepipe's compact heads (the Go runtime), big with
	// GATE's adapters and text tower on CPU torch: every task family.
	torchtest.Need(t, "torch")
	for _, c := range []struct {
		tier     string
		count    int
		some     []string
		adapters string
	}{
		{"base", 15, []string{`"nyu"`, `"winoground"`, `"nycc"`, `"hmdb51"`, `"coco-10k"`, `"food101"`}, `adapters = "compact"`},
		{"big", 21, []string{`"kinetics"`, `"places365"`, `"chexpert"`, `"ucf"`, `"coco-164k"`, `"flickr30k"`}, fmt.Sprintf("python  = %q", torchtest.Python())},
	} {
		dir := t.TempDir()
		main := strings.Replace(tierPipeline, "stdlib/tiers/small", "stdlib/tiers/"+c.tier, 1)
		writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(main, `adapters = "compact"`, c.adapters, 1))
		r := gpEnv(t, cache, env, "apply", dir)
		if r.code != 0 {
			filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.Contains(p, "runs") {
					if b, _ := os.ReadFile(p); strings.Contains(string(b), "error") {
						t.Log(p, string(b))
					}
				}
				return nil
			})
			t.Fatalf("%s tier: apply: %d\n%s\n%s", c.tier, r.code, r.stdout, r.stderr)
		}
		for _, want := range append([]string{"not_run = []", " of 22"}, c.some...) {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s tier: apply output lacks %q:\n%s", c.tier, want, r.stdout)
			}
		}
		measured := ""
		for _, line := range strings.Split(r.stdout, "\n") {
			if m, ok := strings.CutPrefix(strings.TrimSpace(line), "measured = "); ok {
				measured = m
			}
		}
		if got := strings.Count(measured, `","`) + 1; got != c.count {
			t.Errorf("%s tier measured %d benchmarks, want %d: %s", c.tier, got, c.count, measured)
		}
		// D3: under table3 (big's default) nycc is GATE's NYCC loader's
		// Flickr30k; with the compact heads, NYCC's own release.
		lock := readFile(filepath.Join(dir, "gatepipe.lock.hcl"))
		if nycc := strings.Contains(lock, "jmhessel/newyorker_caption_contest"); nycc != (c.tier == "base") {
			t.Errorf("%s tier: the lock file names NYCC's own repository: %v, want %v", c.tier, nycc, c.tier == "base")
		}
	}
}
