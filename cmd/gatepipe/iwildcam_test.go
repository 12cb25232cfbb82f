package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/smokehub"
)

const (
	iwildcamURL   = smokehub.IWildCamURL
	iwildcamSplit = smokehub.IWildCamSplit
)

// iwildcamFixture is smokehub.IWildCam: the competition zip and the
// splits repository's files of seqs sequences.
func iwildcamFixture(t *testing.T, seqs int) (zipped []byte, splits map[string][]byte) {
	t.Helper()
	zipped, splits, err := smokehub.IWildCam(seqs)
	if err != nil {
		t.Fatal(err)
	}
	return zipped, splits
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
