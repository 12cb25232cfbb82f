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

	"github.com/gatepipe/gatepipe/formats/archive"
	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/internal/videofixture"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
)

// kineticsPart writes a CVDF-style part: a tar.gz of MP4 clips named
// like Kinetics' (YOUTUBEID_START_END.mp4) under dir.
func kineticsPart(t *testing.T, dir, name string, clips map[string][][]byte) {
	t.Helper()
	tmp := t.TempDir()
	var files []tarGzFile
	for clip, frames := range clips {
		p := filepath.Join(tmp, filepath.Base(clip))
		if err := videofixture.MP4(p, frames, 16, 16); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		files = append(files, tarGzFile{clip, data})
	}
	writeTarGz(t, filepath.Join(dir, name), files)
}

// tarGzFile is a file of a fixture tar.gz: its name and bytes.
type tarGzFile struct {
	name string
	data []byte
}

// writeTarGz writes files, in the order given, as a tar.gz at path.
func writeTarGz(t *testing.T, path string, files []tarGzFile) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))})
		tw.Write(f.data)
	}
	tw.Close()
	gz.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
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

// onePartVideoList writes a part (part_0.tar.gz) holding one video of
// frames frames and a list naming frames 0..end of it, and decodes a
// video_list dataset of them at 8 x 8.
func onePartVideoList(t *testing.T, dir string, frames, end int) *Node {
	t.Helper()
	videofixture.Need(t)
	kineticsPart(t, dir, "part_0.tar.gz", map[string][][]byte{"a_000000_000010.mp4": videofixture.Grey(frames, 16, 16, 10)})
	os.WriteFile(filepath.Join(dir, "train.csv"), []byte(fmt.Sprintf("0\nx/a_000000_000010.mp4 1 0 0 %d 340 256\n", end)), 0o644)
	n, diags := decode(t, dir, "source { url = \"part_0.tar.gz\" }\nsource { url = \"train.csv\" }\nformat = \"video_list\"\ntrain = [\"train.csv\"]\nimage_size = [8, 8]\n")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return n
}

// TestKineticsBadVideoIsAnError: a truncated MP4 that a split keeps is an
// error naming the file.
func TestKineticsBadVideoIsAnError(t *testing.T) {
	n := onePartVideoList(t, t.TempDir(), 20, 40)
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

// TestKineticsStreamedEqualsExtracted: clips read from compressed parts
// in place (each part decompressed once, its videos copied out one at a
// time, rows written in the parts' order) give the store that extracting
// the parts gives, row for row in the lists' order; two clips of one
// video share its copy.
func TestKineticsStreamedEqualsExtracted(t *testing.T) {
	videofixture.Need(t)
	list := "0\n"
	parts := [2]map[string][][]byte{{}, {}}
	for k := range 8 {
		name := fmt.Sprintf("v%08d_%06d_%06d.mp4", k, k, k+10)
		frames := videofixture.Grey(12, 16, 16, 7)
		for _, f := range frames {
			for p := range f {
				f[p] += byte(20 * k)
			}
		}
		parts[k%2][name] = frames
		list += fmt.Sprintf("c%d/%s %d %d 0 11 340 256\n", k%3, name, k, k%3)
		if k == 5 {
			// A second span of the same video.
			list += fmt.Sprintf("c0/%s 5 0 4 11 340 256\n", name)
		}
	}
	stores := map[string]string{}
	for _, layout := range []string{"streamed", "extracted"} {
		dir := t.TempDir()
		for i, p := range parts {
			named := p
			if layout == "extracted" {
				// Both parts under one top-level directory cannot be read
				// in place: they are extracted.
				named = map[string][][]byte{}
				for name, frames := range p {
					named["videos/"+name] = frames
				}
			}
			kineticsPart(t, dir, fmt.Sprintf("part_%d.tar.gz", i), named)
		}
		os.WriteFile(filepath.Join(dir, "train.csv"), []byte(list), 0o644)
		n, diags := decode(t, dir, `
source { url = "part_0.tar.gz" }
source { url = "part_1.tar.gz" }
source { url = "train.csv" }
format        = "video_list"
train         = ["train.csv"]
test_fraction = 0.3
frames        = 3
image_size    = [8, 8]
`)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		_, out := run(t, n)
		stores[layout] = out
	}
	for _, split := range []string{"train", "test"} {
		a, err := examplestore.ReadSplit(stores["streamed"], split)
		if err != nil {
			t.Fatal(err)
		}
		b, err := examplestore.ReadSplit(stores["extracted"], split)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a.Index) != fmt.Sprint(b.Index) || !bytes.Equal(a.Y.Data, b.Y.Data) {
			t.Errorf("%s: streamed rows %v, extracted %v", split, a.Index, b.Index)
		}
		if !bytes.Equal(a.X.Data, b.X.Data) {
			t.Errorf("%s: the streamed clips' frames differ from the extracted ones'", split)
		}
		if len(a.Index) == 0 {
			t.Errorf("%s: empty", split)
		}
	}
}

// The writer's order for clips in compressed parts: the clips on disk
// first as listed, then each part's in its archive order.
func TestVideoClipsOrder(t *testing.T) {
	dir := t.TempDir()
	var trees []*archive.Tree
	for i := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("p%d.tar.gz", i))
		writeTarGz(t, p, []tarGzFile{{"c.mp4", []byte("x")}, {"a.mp4", []byte("x")}, {"b.mp4", []byte("x")}})
		tr, err := archive.OpenTarGzFS(p, filepath.Base(p), archive.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		trees = append(trees, tr)
	}
	clip := func(in *archive.Tree, name string) videoClip {
		if in == nil {
			return videoClip{name: name, path: name}
		}
		pos, err := in.Position(name)
		if err != nil {
			t.Fatal(err)
		}
		return videoClip{name: name, in: in, pos: pos}
	}
	v := &videoClips{clips: []videoClip{
		clip(trees[1], "a.mp4"), // 0
		clip(nil, "disk1.mp4"),  // 1
		clip(trees[0], "b.mp4"), // 2
		clip(trees[1], "c.mp4"), // 3
		clip(trees[0], "c.mp4"), // 4
		clip(nil, "disk0.mp4"),  // 5
		clip(trees[0], "a.mp4"), // 6
	}}
	// Split positions k of the examples idx; trees[1] is met first.
	got := v.order([]int{0, 1, 2, 3, 4, 5, 6})
	if want := []int{1, 5, 3, 0, 4, 6, 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if got := (&videoClips{clips: []videoClip{clip(nil, "x.mp4")}}).order([]int{0}); got != nil {
		t.Errorf("clips on disk only: order %v, want the list's (nil)", got)
	}
}

// A video_list dataset's compressed parts are listed in place: nothing is
// extracted into the node's directory, and their videos are found there.
func TestVideoListStreamsCompressedParts(t *testing.T) {
	dir := t.TempDir()
	n := onePartVideoList(t, dir, 4, 3)
	tree := &rawTree{dir: t.TempDir()}
	defer tree.close()
	got := []fetched{{s: n.sources[0], name: "part_0.tar.gz", path: filepath.Join(dir, "part_0.tar.gz")}}
	if err := n.layOut(&nodes.Env{Log: zerolog.Nop()}, tree, got); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tree.dir); len(entries) != 0 {
		t.Errorf("%d entries written to the raw directory, want none", len(entries))
	}
	if in := tree.layer("a_000000_000010.mp4"); in == nil || !in.Streamed() {
		t.Errorf("the video is not read from its compressed part in place")
	}
	// The remote form plans nothing unpacked.
	n.sources[0].scheme, n.sources[0].extract = "https", true
	if n.Extracts(n.sources[0].ref, "part_0.tar.gz") {
		t.Error("plan counts a video_list tar.gz part as unpacked")
	}
}

// A damaged video in a compressed part under on_bad_example = "skip":
// the clips written out of order around it keep their rows, and the
// skipped one is the one named.
func TestKineticsStreamedSkipsABadVideo(t *testing.T) {
	videofixture.Need(t)
	dir := t.TempDir()
	clips := map[string][][]byte{}
	list := "0\n"
	for k := range 5 {
		name := fmt.Sprintf("v%08d_%06d_%06d.mp4", k, k, k+10)
		frames := videofixture.Grey(8, 16, 16, 0)
		for _, f := range frames {
			for p := range f {
				f[p] = byte(40 * k)
			}
		}
		clips[name] = frames
		list += fmt.Sprintf("c%d/%s %d %d 0 7 340 256\n", k%2, name, k, k%2)
	}
	kineticsPart(t, dir, "part_0.tar.gz", clips)
	// Part 1 holds clip 2's video cut short: ffmpeg cannot read it.
	good := filepath.Join(t.TempDir(), "v.mp4")
	if err := videofixture.MP4(good, clips["v00000002_000002_000012.mp4"], 16, 16); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	writeTarGz(t, filepath.Join(dir, "part_1.tar.gz"), []tarGzFile{{"replacement/v00000002_000002_000012.mp4", data[:len(data)/3]}})
	os.WriteFile(filepath.Join(dir, "train.csv"), []byte(list), 0o644)
	n, diags := decode(t, dir, `
source { url = "part_0.tar.gz" }
source { url = "part_1.tar.gz" }
source { url = "train.csv" }
format         = "video_list"
train          = ["train.csv"]
images         = ["replacement", "."]
frames         = 2
image_size     = [8, 8]
on_bad_example = "skip"
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, out := run(t, n)
	meta, err := examplestore.ReadMeta(out)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Splits["train"] != 4 || len(meta.Skipped) != 1 || meta.Skipped[0].Index != 2 {
		t.Fatalf("splits %v, skipped %+v: want 4 kept and example 2 skipped", meta.Splits, meta.Skipped)
	}
	s, err := examplestore.ReadSplit(out, "train")
	if err != nil {
		t.Fatal(err)
	}
	clip := 2 * 3 * 8 * 8
	for k, idx := range s.Index {
		got, want := int(s.X.Data[k*clip+5]), 40*int(idx)
		if got < want-6 || got > want+6 {
			t.Errorf("row %d (example %d): level %d, want about %d", k, idx, got, want)
		}
	}
}
