package imagefolder

import (
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func writePNG(t *testing.T, p string, c color.Color, w, h int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, c)
		}
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	f, _ := os.Create(p)
	png.Encode(f, img)
	f.Close()
}

func TestRead(t *testing.T) {
	root := t.TempDir()
	writePNG(t, filepath.Join(root, "red", "a.png"), color.RGBA{255, 0, 0, 255}, 8, 6)
	writePNG(t, filepath.Join(root, "blue", "b.png"), color.RGBA{0, 0, 255, 255}, 3, 3)
	os.WriteFile(filepath.Join(root, "blue", "notes.txt"), []byte("ignored"), 0o644)
	imgs, err := Read(root, nil, 3, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(imgs.Classes, ",") != "blue,red" || len(imgs.Labels) != 2 || len(imgs.Pixels) != 2*3*16 {
		t.Fatalf("classes %v labels %v pixels %d", imgs.Classes, imgs.Labels, len(imgs.Pixels))
	}
	// blue image first (class 0): channel 2 is 255, channel 0 is 0.
	if imgs.Pixels[0] != 0 || imgs.Pixels[2*16] != 255 || imgs.Labels[1] != 1 {
		t.Fatalf("pixels %v", imgs.Pixels[:48])
	}
	gray, err := Read(root, []string{"red"}, 1, 2, 2)
	if err != nil || len(gray.Pixels) != 4 || gray.Pixels[0] == 0 {
		t.Fatalf("grey: %v %v", gray, err)
	}
	os.WriteFile(filepath.Join(root, "red", "broken.png"), []byte("\x89PNG garbage"), 0o644)
	if _, err := Read(root, nil, 3, 4, 4); err == nil || !strings.Contains(err.Error(), "broken.png") {
		t.Fatalf("broken image: %v", err)
	}
}

// FuzzRead feeds arbitrary bytes as an image file: decoding may fail with
// an error naming the file, but must not panic.
func FuzzRead(f *testing.F) {
	dir := f.TempDir()
	writePNG(&testing.T{}, filepath.Join(dir, "seed.png"), color.RGBA{1, 2, 3, 255}, 3, 2)
	seed, _ := os.ReadFile(filepath.Join(dir, "seed.png"))
	f.Add(seed, ".png")
	f.Add([]byte("\xff\xd8\xff\xe0garbage"), ".jpg")
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, ext string) {
		if ext != ".png" && ext != ".jpg" {
			ext = ".png"
		}
		os.MkdirAll(filepath.Join(root, "c"), 0o755)
		p := filepath.Join(root, "c", "x"+ext)
		os.WriteFile(p, data, 0o644)
		defer os.Remove(p)
		imgs, err := Read(root, nil, 3, 4, 4)
		if err == nil && len(imgs.Pixels) != 3*4*4*len(imgs.Labels) {
			t.Fatalf("%d pixel bytes for %d images", len(imgs.Pixels), len(imgs.Labels))
		}
	})
}

// TestListNestedAsTorchvision: images in sub-directories of a class
// belong to it, in the order torchvision's ImageFolder lists them
// (sorted(os.walk(class_dir)), each directory's files sorted): a
// directory's own files first, then "sub" before "sub-x" before
// "sub/deep", whatever the depth.
func TestListNestedAsTorchvision(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{
		"cat/z.png", "cat/a.jpg", "cat/sub/n.png", "cat/sub/deep/m.png", "cat/sub-x/b.png",
		"cat/sub/notes.txt", "dog/d.png", "dog/.hidden/e.png",
	} {
		writePNG(t, filepath.Join(root, filepath.FromSlash(p)), color.RGBA{1, 2, 3, 255}, 2, 2)
	}
	l, err := List(os.DirFS(root), ".", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cat/a.jpg", "cat/z.png", "cat/sub/n.png", "cat/sub-x/b.png", "cat/sub/deep/m.png", "dog/d.png", "dog/.hidden/e.png"}
	if strings.Join(l.Files, " ") != strings.Join(want, " ") {
		t.Fatalf("files\n%v\nwant\n%v", l.Files, want)
	}
	if got := l.Labels; len(got) != 7 || got[4] != 0 || got[5] != 1 {
		t.Fatalf("labels %v", got)
	}
}

// TestListRefusesEmptyClassFolders: a class folder without a PNG or JPEG
// image (empty, holding other files or only empty sub-directories) is an
// error naming the folder and the class, as torchvision's ImageFolder
// refuses it, not a class without examples; in a directory and in an
// io/fs tree as archives are read.
func TestListRefusesEmptyClassFolders(t *testing.T) {
	png := &fstest.MapFile{Data: []byte("not decoded by List")}
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	tests := map[string]struct {
		files   fstest.MapFS
		classes []string
		want    string
	}{
		"empty class": {
			files: fstest.MapFS{"train/cat/a.png": png, "train/dog": dir},
			want:  `image_folder "train": class folder "dog" has no PNG or JPEG images (torchvision's ImageFolder refuses this too); remove the folder or add images`,
		},
		"only other files": {
			files: fstest.MapFS{"train/cat/a.jpg": png, "train/dog/notes.txt": png},
			want:  `class folder "dog" has no PNG or JPEG images`,
		},
		"only an empty sub-directory": {
			files: fstest.MapFS{"train/cat/a.png": png, "train/dog/sub": dir},
			want:  `class folder "dog" has no`,
		},
		"two empty classes": {
			files: fstest.MapFS{"train/ant": dir, "train/cat/a.png": png, "train/dog": dir},
			want:  `class folders "ant", "dog" have no PNG or JPEG images`,
		},
		"empty class of the training classes": {
			files:   fstest.MapFS{"train/cat/a.png": png, "train/dog": dir},
			classes: []string{"cat", "dog"},
			want:    `image_folder "train": class folder "dog" has no`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := List(tc.files, "train", tc.classes)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("on disk", func(t *testing.T) {
		root := t.TempDir()
		writePNG(t, filepath.Join(root, "cat", "a.png"), color.RGBA{1, 2, 3, 255}, 2, 2)
		os.MkdirAll(filepath.Join(root, "dog"), 0o755)
		if _, err := Read(root, nil, 3, 2, 2); err == nil || !strings.Contains(err.Error(), `class folder "dog" has no`) {
			t.Fatalf("err = %v", err)
		}
	})
}
