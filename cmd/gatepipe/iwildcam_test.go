package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"path/filepath"
	"strings"
	"testing"
)

const (
	iwildcamURL   = "www.kaggle.com/api/v1/competitions/data/download-all/iwildcam2022-fgvc9"
	iwildcamSplit = "kiyoonkim/iwildcam-2022-splits"
)

// iwildcamFixture builds the Kaggle competition zip in its real layout
// (metadata/metadata/*.json and *.csv, train/train/*.jpg) and the splits
// repository's files: seqs sequences of 1 to 4 frames (more frames than a
// clip holds in some), each frame showing count bright squares.
func iwildcamFixture(t *testing.T, seqs int) (zipped []byte, splits map[string][]byte) {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	add := func(name string, data []byte) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	type im struct {
		ID       string `json:"id"`
		File     string `json:"file_name"`
		Seq      string `json:"seq_id"`
		Frame    int    `json:"seq_frame_num"`
		Frames   int    `json:"seq_num_frames"`
		Location int    `json:"location"`
		Width    int    `json:"width"`
		Height   int    `json:"height"`
	}
	var images []im
	counts := "seq_id,count\n"
	lists := map[string][]string{}
	for s := range seqs {
		seq := fmt.Sprintf("seq-%04d", s)
		count := s % 4
		frames := 1 + s%4
		for f := range frames {
			id := fmt.Sprintf("%s-f%d", seq, f)
			img := image.NewRGBA(image.Rect(0, 0, 32, 24))
			for y := range 24 {
				for x := range 32 {
					img.Set(x, y, color.RGBA{40, 60, 40, 255})
				}
			}
			for a := range count {
				for y := 4; y < 10; y++ {
					for x := 2 + 8*a; x < 8+8*a; x++ {
						img.Set(x, y, color.RGBA{240, 240, 200, 255})
					}
				}
			}
			var p bytes.Buffer
			jpeg.Encode(&p, img, nil)
			add("train/train/"+id+".jpg", p.Bytes())
			// Frames listed out of order: seq_frame_num orders them.
			images = append([]im{{id, id + ".jpg", seq, f, frames, s % 3, 32, 24}}, images...)
		}
		counts += fmt.Sprintf("%s,%d\n", seq, count)
		split := []string{"train", "train", "train", "train", "train", "train", "val", "test", "test", "test"}[s%10]
		lists[split] = append(lists[split], seq)
	}
	ann, _ := json.Marshal(map[string]any{"info": map[string]any{"version": "1.0"}, "images": images,
		"annotations": []map[string]any{{"id": "a", "image_id": images[0].ID, "category_id": 372}}, "categories": []map[string]any{{"id": 0, "name": "empty"}}})
	add("metadata/metadata/iwildcam2022_train_annotations.json", ann)
	add("metadata/metadata/train_sequence_counts.csv", []byte(counts))
	add("metadata/metadata/gps_locations.json", []byte("{}"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	splits = map[string][]byte{}
	for k, v := range lists {
		splits[k+".txt"] = []byte(strings.Join(v, "\n") + "\n")
	}
	return b.Bytes(), splits
}

var iwildcamPipeline = trainPipeline{name: "iwildcam", source: "iwildcam", args: "  image_size = [8, 12]\n  frames     = 3\n",
	id: "iwildcam", category: "Video Reg", encoder: "  arch     = \"convnet\"\n  channels = [4]\n  hidden   = [8]\n",
	adapter: "  task   = \"video_regression\"\n  layers = 1\n  dim    = 8\n  heads  = 2\n", batch: 8, iters: 6, every: 3, extra: `
output "splits" { value = module.iwildcam.dataset.splits }
output "task"   { value = module.iwildcam.dataset.task }
output "shape"  { value = module.iwildcam.dataset.shape }
output "mae"    { value = train.t.test["MAE Score"] }
`}.String()

// TestIWildCamModuleThroughMirror applies stdlib/datasets/iwildcam to the
// competition zip and splits repository in their real layouts through a
// mirror that requires Kaggle credentials: every listed sequence becomes
// a clip of its first frames (zero frames after its last), its count the
// target, and a train block fits the video head to it (MAE Score). A split
// list naming a sequence the annotations lack is an error naming both.
func TestIWildCamModuleThroughMirror(t *testing.T) {
	zipped, splits := iwildcamFixture(t, 40)
	_, env := kaggleMirror(t, map[string][]byte{iwildcamURL: zipped}, map[string]map[string][]byte{iwildcamSplit: splits})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), iwildcamPipeline)
	r := gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`splits = {"test":12,"train":24,"val":4}`, `task = "video_regression"`, `shape = [3,3,8,12]`, `mae = `} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %s:\n%s", want, r.stdout)
		}
	}

	splits["val.txt"] = append(splits["val.txt"], []byte("seq-9999\n")...)
	dir2 := t.TempDir() // a fresh lock: the splits changed
	writeFile(t, filepath.Join(dir2, "main.hcl"), "module \"iwildcam\" {\n  source     = \"stdlib/datasets/iwildcam\"\n  image_size = [8, 12]\n}\n")
	r = gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "apply", dir2)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, `val.txt: sequence "seq-9999" has no images in the annotations`) || strings.Contains(out, "panic") {
		t.Fatalf("a sequence without images: exit %d\n%s", r.code, out)
	}
}
