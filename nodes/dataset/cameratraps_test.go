package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
)

// writeCameraTraps lays out a camera_traps source in iWildCam's layout
// under dir/both: metadata/metadata/{annotations.json, counts.csv} and
// train/train/*.png, sequences of 1 to 3 frames; and the split lists
// dir/train.txt, dir/test.txt beside it.
func writeCameraTraps(t *testing.T, dir string, seqs int) {
	t.Helper()
	root := filepath.Join(dir, "both")
	for _, d := range []string{"metadata/metadata", "train/train"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	type frame struct {
		File  string `json:"file_name"`
		Seq   string `json:"seq_id"`
		Frame int    `json:"seq_frame_num"`
	}
	var frames []frame
	counts := "seq_id,count\n"
	var train, test bytes.Buffer
	for s := range seqs {
		seq := fmt.Sprintf("seq-%02d", s)
		for f := range 1 + s%3 {
			img := image.NewRGBA(image.Rect(0, 0, 12, 8))
			for i := range img.Pix {
				img.Pix[i] = uint8(s*29 + f*53 + i*7)
			}
			img.Set(0, 0, color.RGBA{255, 0, 0, 255})
			var b bytes.Buffer
			png.Encode(&b, img)
			name := fmt.Sprintf("%s-f%d.png", seq, f)
			os.WriteFile(filepath.Join(root, "train/train", name), b.Bytes(), 0o644)
			frames = append(frames, frame{name, seq, f})
		}
		counts += fmt.Sprintf("%s,%d\n", seq, s%4)
		if s%4 == 3 {
			fmt.Fprintln(&test, seq)
		} else {
			fmt.Fprintln(&train, seq)
		}
	}
	ann, _ := json.Marshal(map[string]any{"images": frames})
	os.WriteFile(filepath.Join(root, "metadata/metadata/annotations.json"), ann, 0o644)
	os.WriteFile(filepath.Join(root, "metadata/metadata/counts.csv"), []byte(counts), 0o644)
	os.WriteFile(filepath.Join(dir, "train.txt"), train.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "test.txt"), test.Bytes(), 0o644)
}

// TestCameraTrapsZipInPlaceEqualsExtracted: iWildCam's competition zip is
// read in place (its annotations copied out, its frames decoded in the
// archive) and stores the same bytes as the same files extracted from a
// .tar.gz; plan would count nothing unpacked for the zip.
func TestCameraTrapsZipInPlaceEqualsExtracted(t *testing.T) {
	dir := t.TempDir()
	writeCameraTraps(t, dir, 12)
	zipTree(t, dir, "both") // as Kaggle serves it
	tarTree(t, dir, "both")
	data, err := os.ReadFile(filepath.Join(dir, "both.tar"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "both.tgz"), gz(data), 0o644)
	stores := map[string][]byte{}
	for _, ext := range []string{"zip", "tgz"} {
		n, diags := decode(t, dir, `
source { url = "both.`+ext+`" }
source { url = "train.txt" }
source { url = "test.txt" }
format      = "camera_traps"
annotations = ["both/metadata/metadata/annotations.json", "both/metadata/metadata/counts.csv"]
images      = ["both/train/train"]
train       = ["train.txt"]
test        = ["test.txt"]
frames      = 2
image_size  = [6, 8]
`)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if ext == "zip" {
			tree := &rawTree{dir: filepath.Join(t.TempDir(), "raw")}
			got := []fetched{{s: &source{extract: true}, name: "both.zip", path: filepath.Join(dir, "both.zip")}}
			if err := n.layOut(&nodes.Env{Log: zerolog.Nop()}, tree, got); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(tree.dir, "both")); err == nil || len(tree.archives) != 1 {
				t.Errorf("the zip was extracted (%d archives read in place)", len(tree.archives))
			}
			tree.close()
			n.sources[0].scheme, n.sources[0].extract = "https", true
			if n.Extracts(n.sources[0].ref, "both.zip") {
				t.Error("plan counts a camera_traps zip as unpacked")
			}
			n.sources[0].scheme = "file"
		}
		_, out := run(t, n)
		for _, split := range []string{"train", "test"} {
			b, err := os.ReadFile(filepath.Join(out, split+".safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			stores[ext] = append(stores[ext], b...)
		}
	}
	if len(stores["zip"]) == 0 || !bytes.Equal(stores["zip"], stores["tgz"]) {
		t.Fatal("the zip read in place stores other bytes than the same files extracted")
	}
}
