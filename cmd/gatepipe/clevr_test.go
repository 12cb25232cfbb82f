package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

const clevrURL = "www.kaggle.com/api/v1/datasets/download/timoboz/clevr-dataset"

// clevrZip is the Kaggle CLEVR zip in the official layout (CLEVR_v1.0/
// images/{train,val}/CLEVR_<split>_<n>.png, questions/CLEVR_<split>_
// questions.json, with CLEVR's extra fields): each scene one coloured
// square, asked "What color is the large square?" (answer its colour) or
// "Is there a square?" (yes). questions replaces the train file's text
// when not empty.
func clevrZip(t *testing.T, perSplit map[string]int, questions string) []byte {
	t.Helper()
	colours := map[string]color.RGBA{"red": {220, 30, 30, 255}, "green": {30, 200, 30, 255}, "blue": {30, 30, 220, 255}}
	names := []string{"blue", "green", "red"}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	add := func(name string, data []byte) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	for _, split := range []string{"train", "val"} {
		type q struct {
			Image    string `json:"image_filename"`
			Index    int    `json:"image_index"`
			Question string `json:"question"`
			Answer   string `json:"answer"`
			Family   int    `json:"question_family_index"`
			Program  []any  `json:"program"`
		}
		var qs []q
		for i := range perSplit[split] {
			c := names[i%3]
			img := image.NewRGBA(image.Rect(0, 0, 24, 16))
			for y := range 16 {
				for x := range 24 {
					img.Set(x, y, color.RGBA{128, 128, 128, 255})
					if x >= 6 && x < 18 && y >= 3 && y < 13 {
						img.Set(x, y, colours[c])
					}
				}
			}
			var p bytes.Buffer
			png.Encode(&p, img)
			file := fmt.Sprintf("CLEVR_%s_%06d.png", split, i)
			add("CLEVR_v1.0/images/"+split+"/"+file, p.Bytes())
			qs = append(qs, q{file, i, "What color is the large square?", c, 90, []any{map[string]any{"function": "scene"}}},
				q{file, i, "Is there a square?", "yes", 38, nil})
		}
		data, _ := json.Marshal(map[string]any{"info": map[string]string{"split": split, "version": "1.0"}, "questions": qs})
		if split == "train" && questions != "" {
			data = []byte(questions)
		}
		add(fmt.Sprintf("CLEVR_v1.0/questions/CLEVR_%s_questions.json", split), data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// kaggleMirror serves urls and Hub repos as a mirror whose Kaggle paths
// require the test's Kaggle key, and returns it with the environment of
// an apply against it (the key allowed to reach the mirror).
func kaggleMirror(t *testing.T, urls map[string][]byte, repos map[string]map[string][]byte) (*tierHub, []string) {
	t.Helper()
	h := &tierHub{urls: urls, repos: repos, kaggle: "ada:kaggle-key-123"}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + t.TempDir(), "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
}

// TestCLEVRModuleThroughMirror applies the stdlib CLEVR module to the
// Kaggle zip in its real layout through a mirror, with Kaggle
// credentials: every question with its image is a relational example (the
// val questions the test split), and the relational head learns to answer.
// Its per-question-type accuracies (Colour, Yes/No) are reported as the
// paper's matrix names them. A damaged question file is an error naming
// it and the offset.
func TestCLEVRModuleThroughMirror(t *testing.T) {
	h, env := kaggleMirror(t, map[string][]byte{clevrURL: clevrZip(t, map[string]int{"train": 30, "val": 9}, "")}, nil)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), trainPipeline{name: "clevr", source: "clevr", args: "  image_size = [8, 12]\n",
		id: "clevr", category: "Img Relational", encoder: "  arch     = \"convnet\"\n  channels = [8]\n  hidden   = []\n",
		adapter: "  task   = \"relational\"\n  layers = 1\n  dim    = 16\n  heads  = 2\n", batch: 16, iters: 200, every: 50, extra: `
output "splits"  { value = module.clevr.dataset.splits }
output "task"    { value = module.clevr.dataset.task }
output "classes" { value = module.clevr.dataset.classes }
output "acc1"    { value = train.t.test["Acc@1"] }
output "types"   { value = [train.t.test["Colour Acc@1"], train.t.test["Yes/No Acc@1"]] }
`}.String())
	r := gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`splits = {"test":18,"train":54,"val":6}`, `task = "relational"`, `classes = ["blue","green","red","yes"]`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %s:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "acc1 = 100") || !strings.Contains(r.stdout, "types = [100,100]") {
		t.Errorf("the relational head did not learn to answer colour and yes questions:\n%s", r.stdout)
	}

	h.urls[clevrURL] = clevrZip(t, map[string]int{"train": 3, "val": 3}, `{"info": {}, "questions": [{"image_filename": "CLEVR_train_000000.png", "question": "q?"`)
	dir2 := t.TempDir() // a fresh lock: the damaged zip is another file
	writeFile(t, filepath.Join(dir2, "main.hcl"), "module \"clevr\" {\n  source     = \"stdlib/datasets/clevr\"\n  image_size = [8, 12]\n}\n")
	r = gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "apply", dir2)
	if r.code == 0 || !strings.Contains(r.stderr, "CLEVR_train_questions.json: offset ") {
		t.Errorf("a damaged question file: exit %d\n%s", r.code, r.stderr)
	}
}
