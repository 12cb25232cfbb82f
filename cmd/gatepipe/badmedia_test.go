package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/internal/imagebomb"
)

// smallPNG is a w x h PNG of one colour.
func smallPNG(t *testing.T, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		img.Set(i%w, i/w, c)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// badMediaFolder is an image folder of 12 good images in two classes
// (three of the cats in a sub-directory) plus, when bombs is set, a 10 KB
// PNG declaring 100,000 x 100,000 pixels and a real 14,000 x 14,000 PNG.
func badMediaFolder(t *testing.T, bombs bool) map[string][]byte {
	files := map[string][]byte{}
	for i := range 6 {
		name := fmt.Sprintf("imgs/cat/%d.png", i)
		if i >= 3 {
			name = fmt.Sprintf("imgs/cat/sub/%d.png", i)
		}
		files[name] = smallPNG(t, 6, 6, color.RGBA{200, uint8(10 * i), 0, 255})
		files[fmt.Sprintf("imgs/dog/%d.png", i)] = smallPNG(t, 6, 6, color.RGBA{0, uint8(10 * i), 200, 255})
	}
	if bombs {
		files["imgs/cat/bomb.png"] = imagebomb.DeclaredPNG(100_000, 100_000)
		files["imgs/dog/big.png"] = imagebomb.PNG(14_000, 14_000)
	}
	return files
}

const badMediaPipeline = `
dataset "d" {
  source { url = "imgs.tar" }
  format        = "image_folder"
  train         = ["imgs"]
  image_size    = [8, 8]
  test_fraction = 0.25
  %s
}
output "splits" { value = dataset.d.splits }
`

// limitedApply runs the binary's apply under a 3 GiB address-space limit
// (ulimit -v) and returns its result and peak RSS in MB.
func limitedApply(t *testing.T, cache, dir string) (result, float64) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `ulimit -v 3145728 && exec "$0" apply -log-level warn "$1"`, binPath, dir)
	cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := runExitCode(t, cmd.Run())
	return result{out.String(), errb.String(), code}, float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
}

// TestDecompressionBombsNeverKillTheRun: an image folder with a PNG
// declaring 100,000 x 100,000 pixels and a real 14,000 x 14,000 one, as a
// web crawl turns up. By default the apply fails naming the file, with a
// clear error and no Go crash, in little memory, leaving no temporary
// directory; with on_bad_example = "skip" it stores the other images and
// says, in its log and in meta.json, which two it skipped. The cat images
// in imgs/cat/sub are read as cats, as torchvision's ImageFolder does.
func TestDecompressionBombsNeverKillTheRun(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	writeTar(t, filepath.Join(dir, "imgs.tar"), badMediaFolder(t, true))
	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(badMediaPipeline, ""))
	r, rss := limitedApply(t, cache, dir)
	if r.code == 0 || !strings.Contains(r.stderr, "max_image_pixels") ||
		!(strings.Contains(r.stderr, "bomb.png") || strings.Contains(r.stderr, "big.png")) {
		t.Fatalf("default: code %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "fatal error") || strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
		t.Fatalf("the process crashed:\n%s", r.stderr)
	}
	if rss > 200 {
		t.Fatalf("peak RSS %.0f MB, want < 200", rss)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "tmp", "*")); len(left) > 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
	t.Logf("refused: peak RSS %.0f MB", rss)

	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(badMediaPipeline, `on_bad_example = "skip"`))
	r, rss = limitedApply(t, cache, dir)
	if r.code != 0 || rss > 200 {
		t.Fatalf("skip: code %d, peak RSS %.0f MB\n%s", r.code, rss, r.stderr)
	}
	if !strings.Contains(r.stderr, "2 examples skipped") || !strings.Contains(r.stderr, "bomb.png") || !strings.Contains(r.stderr, "big.png") {
		t.Fatalf("the skipped files are not reported:\n%s", r.stderr)
	}
	var meta struct {
		Splits  map[string]int `json:"splits"`
		Skipped []struct {
			Split, Error string
			Index        int
		} `json:"skipped"`
	}
	found := false
	filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == "meta.json" && !found {
			data, _ := os.ReadFile(p)
			found = json.Unmarshal(data, &meta) == nil && meta.Splits != nil
		}
		return nil
	})
	if !found || len(meta.Skipped) != 2 || meta.Splits["train"]+meta.Splits["val"]+meta.Splits["test"] != 12 {
		t.Fatalf("meta.json: splits %v, skipped %+v", meta.Splits, meta.Skipped)
	}
	// The block's splits output (apply prints the outputs) counts what
	// the store holds, not what the split planned.
	splits := regexp.MustCompile(`"(test|train|val)":(\d+)`).FindAllStringSubmatch(r.stdout, -1)
	total := 0
	for _, m := range splits {
		n, _ := strconv.Atoi(m[2])
		total += n
	}
	if len(splits) == 0 || total != 12 {
		t.Fatalf("splits output: %v (want 12 examples in all)\n%s", splits, r.stdout)
	}
	t.Logf("skipped: peak RSS %.0f MB; %+v", rss, meta.Skipped)
}

// TestLongNamesAreReadAlikeInPlaceAndExtracted: a tar member with a
// 300-byte name component was stored from d.tar (read in place) but
// failed from the same bytes gzipped (extracted). Now both refuse it,
// with the same message naming the entry.
func TestLongNamesAreReadAlikeInPlaceAndExtracted(t *testing.T) {
	files := badMediaFolder(t, false)
	long := "imgs/cat/" + strings.Repeat("n", 300) + ".png"
	files[long] = files["imgs/cat/0.png"]
	dir := t.TempDir()
	writeTar(t, filepath.Join(dir, "plain", "imgs.tar"), files)
	raw, _ := os.ReadFile(filepath.Join(dir, "plain", "imgs.tar"))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	writeFile(t, filepath.Join(dir, "gz", "imgs.tar.gz"), gz.String())
	var errs []string
	for _, c := range []struct{ sub, src string }{{"plain", "imgs.tar"}, {"gz", "imgs.tar.gz"}} {
		writeFile(t, filepath.Join(dir, c.sub, "main.hcl"), strings.Replace(fmt.Sprintf(badMediaPipeline, ""), `"imgs.tar"`, fmt.Sprintf("%q", c.src), 1))
		r := gp(t, t.TempDir(), "apply", filepath.Join(dir, c.sub))
		if r.code == 0 || !strings.Contains(r.stderr, "name component of 304 bytes") {
			t.Fatalf("%s: code %d\n%s", c.src, r.code, r.stderr)
		}
		errs = append(errs, r.stderr[strings.Index(r.stderr, "entry "):])
	}
	if strings.ReplaceAll(errs[0], "imgs.tar:", "") != strings.ReplaceAll(strings.ReplaceAll(errs[1], "imgs.tar.gz:", ""), "imgs.tar.gz", "imgs.tar") {
		t.Logf("messages differ beyond the archive's name:\n%s\n%s", errs[0], errs[1])
	}
}

// TestEditedLocalSourceWithDeclaredChecksum: a local source whose sha256
// the pipeline declares, edited after a first apply, fails with the same
// checksum mismatch on a warm cache (blob and store cached) as on a fresh
// one; it used to be answered from the stale cache without a word.
func TestEditedLocalSourceWithDeclaredChecksum(t *testing.T) {
	dir, warm := t.TempDir(), t.TempDir()
	writeTar(t, filepath.Join(dir, "imgs.tar"), badMediaFolder(t, false))
	data, _ := os.ReadFile(filepath.Join(dir, "imgs.tar"))
	sum := sha256Hex(data)
	pipeline := strings.Replace(fmt.Sprintf(badMediaPipeline, ""), `source { url = "imgs.tar" }`,
		fmt.Sprintf(`source {
    url    = "imgs.tar"
    sha256 = %q
  }`, sum), 1)
	writeFile(t, filepath.Join(dir, "main.hcl"), pipeline)
	if r := gp(t, warm, "apply", dir); r.code != 0 {
		t.Fatalf("first apply: %d\n%s", r.code, r.stderr)
	}
	// The same size, another byte: only the content tells.
	data[len(data)-700] ^= 1
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(dir, "imgs.tar"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, cache := range []string{warm, t.TempDir()} {
		for _, cmd := range []string{"apply", "plan"} {
			r := gp(t, cache, cmd, dir)
			if r.code == 0 || !strings.Contains(r.stderr, "checksum mismatch") || !strings.Contains(r.stderr, sha256Hex(data)) {
				t.Fatalf("%s on cache %s: code %d\n%s", cmd, cache, r.code, r.stderr)
			}
			msgs = append(msgs, r.stderr[strings.Index(r.stderr, "checksum mismatch"):])
		}
	}
	if msgs[0] != msgs[2] {
		t.Fatalf("warm and fresh caches disagree:\n%s\n%s", msgs[0], msgs[2])
	}
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// TestBadMediaSettingsAreCheckedWithTheirLines: on_bad_example,
// max_image_pixels and ffmpeg_timeout with values they cannot take are
// configuration errors at their file:line, before anything runs.
func TestBadMediaSettingsAreCheckedWithTheirLines(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "imgs.tar"), "")
	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(badMediaPipeline, `on_bad_example   = "ignore"
  max_image_pixels = 0
  ffmpeg_timeout   = "soon"`))
	r := gp(t, t.TempDir(), "validate", dir)
	msg := strings.Join(strings.Fields(r.stderr), " ")
	for _, want := range []string{"main.hcl:8", `not "ignore"`, "main.hcl:9", "max_image_pixels must be at least 1", "main.hcl:10", `not "soon"`} {
		if r.code != 2 || !strings.Contains(msg, want) {
			t.Fatalf("validate: code %d, want %q in\n%s", r.code, want, r.stderr)
		}
	}
}
