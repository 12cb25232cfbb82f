package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// places365Mirror writes torchvision's three Places365 (small) files in
// their real layout under a mirror directory (HOST/PATH): the file lists
// tar (categories, train list with /a/airfield/00000001.jpg paths, val
// list with bare file names), data_256/ and val_256/ JPEG tars. Each of
// three classes has perClass training images of its own colour, and the
// val tar two per class. trainList replaces the train list's text when
// not empty.
func places365Mirror(t *testing.T, perClass int, trainList string) string {
	t.Helper()
	mirror := t.TempDir()
	dir := filepath.Join(mirror, "data.csail.mit.edu", "places", "places365")
	classes := []string{"/a/airfield", "/b/bamboo_forest", "/c/canyon"}
	colours := []color.RGBA{{200, 40, 40, 255}, {40, 200, 40, 255}, {40, 40, 200, 255}}
	jpg := func(c color.RGBA, i int) []byte {
		img := image.NewRGBA(image.Rect(0, 0, 32, 32))
		for y := 0; y < 32; y++ {
			for x := 0; x < 32; x++ {
				img.Set(x, y, color.RGBA{c.R + uint8((x+i)%16), c.G, c.B + uint8(y%16), 255})
			}
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, nil); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	var cats, train, val strings.Builder
	trainFiles, valFiles := map[string][]byte{}, map[string][]byte{}
	n := 0
	for k, c := range classes {
		fmt.Fprintf(&cats, "%s %d\n", c, k)
		for i := 1; i <= perClass; i++ {
			p := fmt.Sprintf("%s/%08d.jpg", c, i) // file names repeat across classes, as in Places365
			fmt.Fprintf(&train, "%s %d\n", p, k)
			trainFiles["data_256"+p] = jpg(colours[k], i)
		}
		for i := 0; i < 2; i++ {
			n++
			name := fmt.Sprintf("Places365_val_%08d.jpg", n)
			fmt.Fprintf(&val, "%s %d\n", name, k)
			valFiles["val_256/"+name] = jpg(colours[k], 100+i)
		}
	}
	if trainList != "" {
		train.Reset()
		train.WriteString(trainList)
	}
	writeTar(t, filepath.Join(dir, "filelist_places365-standard.tar"), map[string][]byte{
		"categories_places365.txt": []byte(cats.String()), "places365_train_standard.txt": []byte(train.String()), "places365_val.txt": []byte(val.String()),
	})
	writeTar(t, filepath.Join(dir, "train_256_places365standard.tar"), trainFiles)
	writeTar(t, filepath.Join(dir, "val_256.tar"), valFiles)
	return mirror
}

// writeTar writes files (name → content) as a tar archive at path.
func writeTar(t *testing.T, path string, files map[string][]byte) {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlaces365ReadsTorchvisionsLayout applies the stdlib Places365 module
// against its three files in torchvision's layout, served as a mirror:
// the official validation images are the test split, validation is drawn
// from train, and a class trains to be told apart. A damaged train list is
// an error naming the file and line.
func TestPlaces365ReadsTorchvisionsLayout(t *testing.T) {
	mirror := places365Mirror(t, 10, "")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), trainPipeline{name: "places", source: "places365", args: "  image_size = [16, 16]\n",
		id: "places365", category: "Img Class", encoder: "  arch   = \"mlp\"\n  hidden = [16]\n", batch: 8, iters: 30, every: 10, extra: `
output "splits" { value = module.places.dataset.splits }
output "acc1"   { value = train.t.acc1 }
`}.String())
	cache := filepath.Join(t.TempDir(), "c")
	r := gpEnv(t, cache, []string{"GATEPIPE_MIRROR=" + mirror, "HOME=" + t.TempDir()}, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`"test":6`, `"train":27`, `"val":3`} {
		if !strings.Contains(strings.ReplaceAll(r.stdout, " ", ""), want) {
			t.Errorf("splits lack %s:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "acc1 = 100") {
		t.Errorf("three colours were not told apart:\n%s", r.stdout)
	}

	bad := places365Mirror(t, 2, "/a/airfield/00000001.jpg 0\n/a/airfield/00000002.jpg 0 extra\n")
	dir2 := t.TempDir()
	writeFile(t, filepath.Join(dir2, "main.hcl"), "module \"places\" {\n  source     = \"stdlib/datasets/places365\"\n  image_size = [16, 16]\n}\n")
	r = gpEnv(t, filepath.Join(t.TempDir(), "c"), []string{"GATEPIPE_MIRROR=" + bad, "HOME=" + t.TempDir()}, "apply", dir2)
	if r.code == 0 || !strings.Contains(r.stderr, "places365_train_standard.txt:2: want IMAGE LABEL, got 3 fields") {
		t.Errorf("a damaged train list: exit %d\n%s", r.code, r.stderr)
	}
}
