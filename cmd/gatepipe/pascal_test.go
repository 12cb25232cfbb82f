package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/matv5"
)

// pascalMirror writes a mirror directory holding VOC2010's trainval tar
// (VOCdevkit/VOC2010/JPEGImages/<id>.jpg) and PASCAL-Context's
// trainval.tar.gz (trainval/<id>.mat, LabelMap uint16, compressed as
// MATLAB 7 saves) in their real layouts: n images, each a bright square
// labelled 1 + i%3 on background 0, a few raw labels beyond the 60
// classes (background then), one image without a map and one map without
// an image. damage replaces the first map's bytes when not nil.
func pascalMirror(t *testing.T, n int, damage func([]byte) []byte) string {
	t.Helper()
	mirror := t.TempDir()
	images, maps := map[string][]byte{}, map[string][]byte{}
	for i := range n + 1 {
		id := fmt.Sprintf("2008_%06d", i)
		img := image.NewRGBA(image.Rect(0, 0, 24, 20))
		labels := make([]uint16, 20*24)
		for y := range 20 {
			for x := range 24 {
				img.Set(x, y, color.RGBA{20, 20, 20, 255})
				switch {
				case x >= 6 && x < 18 && y >= 5 && y < 15:
					img.Set(x, y, color.RGBA{uint8(80 * (1 + i%3)), 200, 60, 255})
					labels[y*24+x] = uint16(1 + i%3)
				case y == 0:
					labels[y*24+x] = 400 // a raw label beyond the 60 classes: background
				}
			}
		}
		var b bytes.Buffer
		jpeg.Encode(&b, img, nil)
		if i < n {
			images["VOCdevkit/VOC2010/JPEGImages/"+id+".jpg"] = b.Bytes()
		}
		if i > 0 { // 2008_000000 has no map, 2008_<n> no image
			m := matv5.EncodeUint16("LabelMap", 20, 24, labels, true)
			if damage != nil && i == 1 {
				m = damage(m)
			}
			maps["trainval/"+id+".mat"] = m
		}
	}
	writeTar(t, filepath.Join(mirror, "host.robots.ox.ac.uk", "pascal", "VOC", "voc2010", "VOCtrainval_03-May-2010.tar"), images)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	tw := tar.NewWriter(zw)
	for name, data := range maps {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	tw.Close()
	zw.Close()
	p := filepath.Join(mirror, "cs.stanford.edu", "~roozbeh", "pascal-context", "trainval.tar.gz")
	os.MkdirAll(filepath.Dir(p), 0o777)
	if err := os.WriteFile(p, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return mirror
}

// TestPascalContextReadsMATLabelMaps applies stdlib/datasets/pascal to
// the two archives through a mirror: the ids with both an image and a map
// are the examples, split 80/10/10, masks resized by nearest neighbour
// with labels beyond the 60 classes as background, and the segmentation
// head trains. A damaged MAT-file is an error naming it.
func TestPascalContextReadsMATLabelMaps(t *testing.T) {
	mirror := pascalMirror(t, 41, nil)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), trainPipeline{name: "pascal", source: "pascal", args: "  image_size = [10, 12]\n",
		id: "pascal", category: "Img Seg", encoder: "  arch     = \"convnet\"\n  channels = [8]\n  hidden   = []\n",
		adapter: "  task = \"segmentation\"\n", batch: 8, iters: 20, every: 10, extra: `
output "pascal" { value = [module.pascal.dataset.splits, module.pascal.dataset.shape, module.pascal.dataset.task, length(module.pascal.dataset.classes)] }
output "miou"   { value = train.t.test["mIoU"] }
`}.String())
	env := []string{"GATEPIPE_MIRROR=" + mirror, "HOME=" + t.TempDir()}
	r := gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`pascal = [{"test":4,"train":32,"val":4},[3,10,12],"segmentation",60]`, `miou = `} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %s:\n%s", want, r.stdout)
		}
	}

	bad := pascalMirror(t, 5, func(b []byte) []byte { return b[:len(b)-7] })
	d := t.TempDir()
	writeFile(t, filepath.Join(d, "main.hcl"), "module \"pascal\" {\n  source     = \"stdlib/datasets/pascal\"\n  image_size = [10, 12]\n}\n")
	r = gpEnv(t, filepath.Join(t.TempDir(), "c"), []string{"GATEPIPE_MIRROR=" + bad, "HOME=" + t.TempDir()}, "apply", d)
	if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "2008_000001.mat at byte 128") || strings.Contains(out, "panic") {
		t.Fatalf("a damaged MAT-file: exit %d\n%s", r.code, out)
	}
}
