package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/videofixture"
)

const kineticsS3 = "s3.amazonaws.com/kinetics/400/"

// kineticsFixture is one CVDF part per split (tar.gz of H.264 clips: a
// bright clip for class 1, a dark one for class 0) and GATE's decord
// lists naming them, plus listed clips of parts not served.
func kineticsFixture(t *testing.T) (parts map[string][]byte, lists map[string][]byte) {
	parts, lists = map[string][]byte{}, map[string][]byte{}
	tmp := t.TempDir()
	for s, split := range []string{"train", "val", "test"} {
		n := []int{24, 8, 8}[s]
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		var list strings.Builder
		list.WriteString("0\n")
		for i := range n {
			class := i % 2
			frames := videofixture.Grey(12, 16, 16, 4)
			for _, f := range frames {
				for p := range f {
					f[p] += byte(40 + 150*class)
				}
			}
			name := fmt.Sprintf("%s%07d_%06d_%06d.mp4", split[:1], i, 0, 10)
			p := filepath.Join(tmp, name)
			if err := videofixture.MP4(p, frames, 16, 16); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(p)
			tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data))})
			tw.Write(data)
			fmt.Fprintf(&list, "class_%d/%s %d %d 0 11 340 256\n", class, name, i, class)
		}
		// Clips of the parts not downloaded.
		fmt.Fprintf(&list, "class_0/%s9999999_000000_000010.mp4 9999 0 0 11 340 256\n", split[:1])
		tw.Close()
		gz.Close()
		parts[kineticsS3+split+"/part_0.tar.gz"] = buf.Bytes()
		lists["splits_decord_videos/"+split+".csv"] = []byte(list.String())
	}
	return parts, lists
}

// TestKineticsTrainsThroughMirror applies the tier engine to Kinetics
// fixtures in the CVDF's and kiyoonkim's layouts: at a capped scale only
// the first part of each split is downloaded (the mirror serves no
// other), the lists are cut to the clips found, and the video head
// trains on frames ffmpeg decoded.
func TestKineticsTrainsThroughMirror(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a benchmark")
	}
	videofixture.Need(t)
	parts, lists := kineticsFixture(t)
	h := &tierHub{urls: parts, repos: map[string]map[string][]byte{"kiyoonkim/kinetics-400-splits": lists}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	writeTierEngine(t, dir, `["kinetics"]`)
	cache := filepath.Join(t.TempDir(), "c")
	r := gpEnv(t, cache, []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + t.TempDir()}, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "not_run = []") || !strings.Contains(r.stderr, "left out") {
		t.Errorf("kinetics was not run, or the clips without videos were not reported:\n%s\n%s", r.stdout, r.stderr)
	}
	found := false
	for _, m := range readMetricsFiles(t, cache) {
		if m.Benchmark == "kinetics" {
			found = true
			for _, name := range []string{"Acc@1", "Loss"} { // two classes: no Acc@5
				if _, ok := m.Metrics[name]; !ok {
					t.Errorf("kinetics metrics lack %q: %v", name, m.Metrics)
				}
			}
		}
	}
	if !found {
		t.Fatal("no metrics.json for kinetics")
	}
}
