package main

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"math/rand/v2"
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
	"time"

	"github.com/gatepipe/gatepipe/internal/hffixture"
)

// noisePNG is a w x h PNG of random pixels (it does not compress, so the
// fixtures' sizes are the data's).
func noisePNG(t *testing.T, rng *rand.Rand, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// diskTier serves a test-scale tier's sources, none pinned, over HTTP: a
// Parquet shard of labelled images, an ADE20K-layout Parquet shard of
// images and masks, an image_folder zip and an image_folder tarball (both
// read in place) and an image_list (a list and a gzipped tarball of
// images, extracted while its dataset runs). It returns the server and the
// pipeline.
func diskTier(t *testing.T) (*httptest.Server, string) {
	srv, _, pipeline := diskTierFiles(t)
	return srv, pipeline
}

// diskTierFiles is diskTier that also returns the files it serves, by
// name.
func diskTierFiles(t *testing.T) (srv *httptest.Server, diskFiles map[string][]byte, pipeline string) {
	rng := rand.New(rand.NewPCG(11, 12))
	files := map[string][]byte{}
	var imgs [][]byte
	var labels []int64
	for i := range 300 {
		imgs, labels = append(imgs, noisePNG(t, rng, 48, 48)), append(labels, int64(i%3))
	}
	var buf bytes.Buffer
	if err := hffixture.ImageClassification(&buf, imgs, labels, []string{"a", "b", "c"}, 100); err != nil {
		t.Fatal(err)
	}
	files["cls.parquet"] = bytes.Clone(buf.Bytes())
	var masks [][]byte
	for range 200 {
		m := image.NewGray(image.Rect(0, 0, 48, 48))
		for i := range m.Pix {
			m.Pix[i] = uint8(i / 48 % 20)
		}
		masks = append(masks, hffixture.PNG(m))
	}
	buf.Reset()
	if err := hffixture.Segmentation(&buf, imgs[:200], masks, 100); err != nil {
		t.Fatal(err)
	}
	files["seg.parquet"] = bytes.Clone(buf.Bytes())
	buf.Reset()
	zw := zip.NewWriter(&buf)
	for i := range 240 {
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("zimgs/c%d/%03d.png", i%3, i), Method: zip.Store})
		w.Write(noisePNG(t, rng, 48, 48))
	}
	zw.Close()
	files["folder.zip"] = bytes.Clone(buf.Bytes())
	tarFiles, listFiles := map[string][]byte{}, map[string][]byte{}
	var list strings.Builder
	for i := range 240 {
		tarFiles[fmt.Sprintf("timgs/c%d/%03d.png", i%3, i)] = noisePNG(t, rng, 48, 48)
		name := fmt.Sprintf("limgs/%03d.png", i)
		listFiles[name] = noisePNG(t, rng, 48, 48)
		fmt.Fprintf(&list, "%s %d\n", strings.TrimPrefix(name, "limgs/"), i%3)
	}
	dir := t.TempDir()
	writeTar(t, filepath.Join(dir, "folder.tar"), tarFiles)
	writeTar(t, filepath.Join(dir, "list.tar"), listFiles)
	for _, n := range []string{"folder.tar", "list.tar"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		files[n] = b
	}
	var gz bytes.Buffer
	zw2 := gzip.NewWriter(&gz)
	zw2.Write(files["list.tar"])
	zw2.Close()
	files["list.tgz"] = gz.Bytes()
	delete(files, "list.tar")
	files["train.txt"] = []byte(list.String())
	diskFiles = files
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if r.Method != http.MethodHead {
			w.Write(b)
		}
	}))
	t.Cleanup(srv.Close)
	u := srv.URL
	return srv, diskFiles, fmt.Sprintf(`
dataset "cls" {
  source { url = "%[1]s/cls.parquet" }
  format        = "parquet"
  train         = ["cls.parquet"]
  examples      = { train = 300 }
  image_size    = [48, 48]
  val_fraction  = 0.1
  test_fraction = 0.1
}
dataset "seg" {
  source { url = "%[1]s/seg.parquet" }
  format        = "parquet"
  train         = ["seg.parquet"]
  label_column  = "annotation"
  examples      = { train = 200 }
  image_size    = [48, 48]
  val_fraction  = 0.1
  test_fraction = 0.1
}
dataset "zipped" {
  source { url = "%[1]s/folder.zip" }
  format        = "image_folder"
  train         = ["zimgs"]
  examples      = { train = 240 }
  image_size    = [48, 48]
  val_fraction  = 0.1
  test_fraction = 0.1
}
dataset "tarred" {
  source { url = "%[1]s/folder.tar" }
  format        = "image_folder"
  train         = ["timgs"]
  examples      = { train = 240 }
  image_size    = [48, 48]
  val_fraction  = 0.1
  test_fraction = 0.1
}
dataset "listed" {
  source { url = "%[1]s/train.txt" }
  source { url = "%[1]s/list.tgz" }
  format        = "image_list"
  train         = ["train.txt"]
  images        = ["limgs"]
  examples      = { train = 240 }
  image_size    = [48, 48]
  val_fraction  = 0.1
  test_fraction = 0.1
}
`, u)
}

// treeBytes is the size of the files under dir (links not followed).
func treeBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// peakBytes polls the bytes of the files under dir every interval until
// the returned function is called, which returns the most it saw.
func peakBytes(dir string, every time.Duration) func() int64 {
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if n := treeBytes(dir); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		wg.Wait()
		return peak.Load()
	}
}

var plannedPeak = regexp.MustCompile(`peak +about ([0-9.]+) (B|KiB|MiB|GiB)`)

// TestPlanPredictsThePeakDisk plans a test-scale tier whose sources are
// not pinned (plan asks their server for their sizes: HTTP HEAD) and then
// applies it while polling the cache's bytes: the planned peak (downloads,
// archives unpacked, stores) is within 15% of the measured peak, and
// plan names each unpinned source's listed size.
func TestPlanPredictsThePeakDisk(t *testing.T) {
	srv, files, pipeline := diskTierFiles(t)
	for _, sources := range []string{"served", "local"} {
		t.Run(sources, func(t *testing.T) {
			dir := t.TempDir()
			want := []string{"1 file(s), ", "as its server lists them", "unpacked   "}
			if sources == "local" {
				// The same files on disk: copied into the blob store, not
				// downloaded; plan counts them all the same.
				for name, b := range files {
					if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				pipeline := strings.ReplaceAll(pipeline, srv.URL+"/", "")
				writeFile(t, filepath.Join(dir, "main.hcl"), pipeline)
				want = []string{"local      ", "local source files copied into the cache", "unpacked   "}
			} else {
				writeFile(t, filepath.Join(dir, "main.hcl"), pipeline)
			}
			planPeakMatches(t, dir, want)
		})
	}
}

// planPeakMatches plans the pipeline in dir (its output saying each of
// want), applies it while polling the cache's bytes, and checks the
// planned peak against the measured one (within 15%).
func planPeakMatches(t *testing.T, dir string, want []string) {
	cache := filepath.Join(t.TempDir(), "c")
	r := gp(t, cache, "plan", dir)
	if r.code != 0 {
		t.Fatalf("plan: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range want {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan does not say %q:\n%s", want, r.stdout)
		}
	}
	m := plannedPeak.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("plan names no peak:\n%s", r.stdout)
	}
	planned, _ := strconv.ParseFloat(m[1], 64)
	planned *= map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m[2]]

	peak := peakBytes(cache, 10*time.Millisecond)
	r = gp(t, cache, "apply", dir)
	measuredBytes := peak()
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	measured := float64(measuredBytes)
	t.Logf("planned peak %.2f MiB, measured %.2f MiB (%.3fx)", planned/(1<<20), measured/(1<<20), planned/measured)
	if ratio := planned / measured; ratio < 0.85 || ratio > 1.15 {
		t.Errorf("planned peak %.0f B is %.2fx the measured %.0f B", planned, ratio, measured)
	}
}
