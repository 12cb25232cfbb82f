package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/h5fixture"
)

// nyuShard is a sayakpaul/nyu_depth_v2 tar shard: n fast-depth HDF5
// frames under dir/<scene>/, 16x16, a near wall (1.2 m) on the left
// and a far one (4.6 m) on the right, split where the image darkens.
func nyuShard(t *testing.T, dir string, n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 11))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range n {
		edge := 4 + rng.IntN(8)
		rgb := make([]byte, 3*16*16)
		depth := make([]float32, 16*16)
		for y := range 16 {
			for x := range 16 {
				v, d := byte(200+rng.IntN(40)), float32(1.2)
				if x >= edge {
					v, d = byte(30+rng.IntN(40)), 4.6
				}
				for c := range 3 {
					rgb[c*256+y*16+x] = v
				}
				depth[y*16+x] = d
			}
		}
		data, err := h5fixture.Write([]h5fixture.Dataset{{Name: "rgb", Shape: []int{3, 16, 16}, U8: rgb}, {Name: "depth", Shape: []int{16, 16}, F32: depth}})
		if err != nil {
			t.Fatal(err)
		}
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%s/scene_%d/%05d.h5", dir, i%4, i), Mode: 0o644, Size: int64(len(data))})
		tw.Write(data)
	}
	tw.Close()
	return buf.Bytes()
}

// TestNYUTrainsThroughMirror applies the tier engine to NYU Depth v2
// fixtures in the Hub's layout (tar shards of HDF5 frames): at a capped
// scale only the first train shard is asked for, the depth-as-labels
// segmentation trains, and its metrics carry GATE's segmentation names.
func TestNYUTrainsThroughMirror(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a benchmark")
	}
	h := &tierHub{repos: map[string]map[string][]byte{"sayakpaul/nyu_depth_v2": {
		"data/train-000000.tar": nyuShard(t, "train", 70, 1),
		"data/val-000000.tar":   nyuShard(t, "val", 12, 2),
		"data/val-000001.tar":   nyuShardNamed(t, 8),
	}}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	writeTierEngine(t, dir, `["nyu"]`)
	cache := filepath.Join(t.TempDir(), "c")
	r := gpEnv(t, cache, []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + t.TempDir()}, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "not_run = []") {
		t.Errorf("nyu was not run:\n%s", r.stdout)
	}
	found := false
	for _, m := range readMetricsFiles(t, cache) {
		if m.Benchmark != "nyu" {
			continue
		}
		found = true
		for _, name := range []string{"mIoU", "Mean Acc@", "Overall Acc@", "Dice Score", "CE Loss"} {
			if _, ok := m.Metrics[name]; !ok {
				t.Errorf("nyu metrics lack %q: %v", name, m.Metrics)
			}
		}
	}
	if !found {
		t.Fatal("no metrics.json for nyu")
	}
}

// nyuShardNamed is a second validation shard whose frames have names of
// their own (the real shards split one directory between them).
func nyuShardNamed(t *testing.T, n int) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	src := nyuShard(t, "val", n, 4)
	tr := tar.NewReader(bytes.NewReader(src))
	for {
		hd, err := tr.Next()
		if err != nil {
			break
		}
		var data bytes.Buffer
		data.ReadFrom(tr)
		hd.Name = strings.Replace(hd.Name, "/0", "/1", 1)
		tw.WriteHeader(hd)
		tw.Write(data.Bytes())
	}
	tw.Close()
	return buf.Bytes()
}
