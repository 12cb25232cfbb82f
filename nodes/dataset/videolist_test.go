package dataset

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/internal/videofixture"
)

// kineticsPart writes a CVDF-style part: a tar.gz of MP4 clips named
// like Kinetics' (YOUTUBEID_START_END.mp4) under dir.
func kineticsPart(t *testing.T, dir, name string, clips map[string][][]byte) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	tmp := t.TempDir()
	for clip, frames := range clips {
		p := filepath.Join(tmp, filepath.Base(clip))
		if err := videofixture.MP4(p, frames, 16, 16); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		tw.WriteHeader(&tar.Header{Name: clip, Mode: 0o644, Size: int64(len(data))})
		tw.Write(data)
	}
	tw.Close()
	gz.Close()
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestKineticsClipsDecodeTheSampledFrames: clips named by a decord split
// list are decoded from the MP4s of the extracted parts at the sparse
// sampler's frames; a listed clip whose video was not fetched is left out
// (GATE's rule); a replacement wins over the clip of the same name.
func TestKineticsClipsDecodeTheSampledFrames(t *testing.T) {
	videofixture.Need(t)
	dir := t.TempDir()
	// Clip k's frame i has grey level 10*i + 100*(k%2).
	grey := func(k int) [][]byte {
		fs := videofixture.Grey(20, 16, 16, 10)
		for _, f := range fs {
			for p := range f {
				f[p] += byte(100 * (k % 2))
			}
		}
		return fs
	}
	part0 := map[string][][]byte{}
	var list strings.Builder
	list.WriteString("0\n")
	for k := range 6 {
		name := fmt.Sprintf("vid%08d_%06d_%06d.mp4", k, k, k+10)
		part0[name] = grey(k)
		fmt.Fprintf(&list, "class_%d/%s %d %d 2 17 340 256\n", k%2, name, k, k%2)
	}
	fmt.Fprintf(&list, "class_0/missing_000000_000010.mp4 99 0 0 19 340 256\n")
	kineticsPart(t, dir, "part_0.tar.gz", part0)
	// The replacement of clip 0 is all white.
	white := videofixture.Grey(20, 16, 16, 0)
	for _, f := range white {
		for p := range f {
			f[p] = 250
		}
	}
	// The replacement tar holds its directory, as the CVDF's does.
	repl := map[string][][]byte{"replacement_for_corrupted_k400/vid00000000_000000_000010.mp4": white}
	kineticsPart(t, dir, "replacement.tgz", repl)
	os.WriteFile(filepath.Join(dir, "train.csv"), []byte(list.String()), 0o644)
	cfg := `
source { url = "part_0.tar.gz" }
source { url = "replacement.tgz" }
source { url = "train.csv" }
format       = "video_list"
train        = ["train.csv"]
test_fraction = 0.34
images       = ["replacement_for_corrupted_k400", "."]
frames       = 4
image_size   = [8, 8]
`
	n, diags := decode(t, dir, cfg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out := run(t, n)
	if v.GetAttr("task").AsString() != "video" {
		t.Fatalf("task %v", v.GetAttr("task"))
	}
	meta, _ := examplestore.ReadMeta(out)
	if meta.Splits["train"]+meta.Splits["test"] != 6 || meta.NumClasses != 2 {
		t.Fatalf("splits %v, %d classes: the clip without a video should be left out", meta.Splits, meta.NumClasses)
	}
	// Frames 2..17 sampled 4 times: segments of 4, their first frames
	// 2, 6, 10, 14.
	want := []int{20, 60, 100, 140}
	clip := 4 * 3 * 8 * 8
	for _, name := range []string{"train", "test"} {
		s, _ := examplestore.ReadSplit(out, name)
		for k, idx := range s.Index {
			for f, level := range want {
				level += 100 * int(idx%2)
				if idx == 0 {
					level = 250
				}
				got := int(s.X.Data[k*clip+f*3*8*8+9])
				if got < level-6 || got > level+6 {
					t.Errorf("%s clip %d (row %d) frame %d: level %d, want about %d", name, k, idx, f, got, level)
				}
			}
		}
	}
}

// TestKineticsBadVideoIsAnError: a truncated MP4 that a split keeps is an
// error naming the file.
func TestKineticsBadVideoIsAnError(t *testing.T) {
	videofixture.Need(t)
	dir := t.TempDir()
	kineticsPart(t, dir, "part_0.tar.gz", map[string][][]byte{"a_000000_000010.mp4": videofixture.Grey(20, 16, 16, 10)})
	os.WriteFile(filepath.Join(dir, "train.csv"), []byte("0\nx/a_000000_000010.mp4 1 0 0 40 340 256\n"), 0o644)
	n, diags := decode(t, dir, "source { url = \"part_0.tar.gz\" }\nsource { url = \"train.csv\" }\nformat = \"video_list\"\ntrain = [\"train.csv\"]\nimage_size = [8, 8]\n")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if _, _, err := runErr(t, n); err == nil || !strings.Contains(err.Error(), "a_000000_000010.mp4: the video ends before frame") {
		t.Fatalf("a clip past its video's end: %v", err)
	}
}

// TestURLsNameTheirFilesApart: a urls source is one source per URL,
// named by the URL's file name, with its directory before it where two
// would share a name.
func TestURLsNameTheirFilesApart(t *testing.T) {
	n, diags := decode(t, t.TempDir(), `
source {
  urls = ["https://h.example/k/train/part_0.tar.gz", "https://h.example/k/val/part_0.tar.gz", "https://h.example/k/r.tgz"]
}
format = "raw"
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var names []string
	for _, s := range n.sources {
		names = append(names, s.name)
	}
	if strings.Join(names, " ") != "train-part_0.tar.gz val-part_0.tar.gz r.tgz" {
		t.Fatalf("names %v", names)
	}
	_, diags = decode(t, t.TempDir(), "source {\n  urls = [\"https://h.example/a\"]\n  sha256 = \""+strings.Repeat("0", 64)+"\"\n}\nformat = \"raw\"\n")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "do not go with it") {
		t.Fatalf("urls with sha256: %v", diags)
	}
}
