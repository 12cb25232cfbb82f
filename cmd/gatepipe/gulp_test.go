package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// gulpRepo builds kiyoonkim's *-gulprgb layout: GulpIO chunks
// (gulp_rgb/data_N.gulp of JPEG frames padded to four bytes, meta_N.gmeta
// with [offset, padding, length] per frame) over two chunks, and split
// lists (splits_gulp_rgb/<train>, <test>: "0", then "key id label start
// end" lines). A clip's class is its frames' colour; clips have 5 to 14
// frames and list a range of them.
func gulpRepo(t *testing.T, clips int, train, test string) map[string][]byte {
	t.Helper()
	colours := []color.RGBA{{220, 40, 40, 255}, {40, 200, 40, 255}, {40, 40, 220, 255}}
	files := map[string][]byte{}
	lists := map[string]*strings.Builder{train: {}, test: {}}
	for _, l := range lists {
		l.WriteString("0\n")
	}
	for chunk := range 2 {
		var data bytes.Buffer
		meta := map[string]any{}
		for c := chunk; c < clips; c += 2 {
			label := c % len(colours)
			n := 5 + c%10
			var info [][3]int
			for f := range n {
				img := image.NewRGBA(image.Rect(0, 0, 20, 16))
				for y := range 16 {
					for x := range 20 {
						img.Set(x, y, color.RGBA{30, 30, 30, 255})
						if x >= 2+f%6 && x < 12+f%6 && y >= 4 && y < 12 {
							img.Set(x, y, colours[label])
						}
					}
				}
				var j bytes.Buffer
				jpeg.Encode(&j, img, nil)
				pad := (4 - j.Len()%4) % 4
				info = append(info, [3]int{data.Len(), pad, j.Len() + pad})
				data.Write(j.Bytes())
				data.Write(make([]byte, pad))
			}
			key := fmt.Sprintf("class%d/clip_%03d", label, c)
			meta[key] = map[string]any{"frame_info": info, "meta_data": []any{map[string]any{"label": label}}}
			list := train
			if c%4 == 3 {
				list = test
			}
			fmt.Fprintf(lists[list], "%s %d %d %d %d\n", key, c, label, 1, n-1)
		}
		files[fmt.Sprintf("gulp_rgb/data_%d.gulp", chunk)] = data.Bytes()
		m, _ := json.Marshal(meta)
		files[fmt.Sprintf("gulp_rgb/meta_%d.gmeta", chunk)] = m
	}
	for name, l := range lists {
		files["splits_gulp_rgb/"+name] = []byte(l.String())
	}
	return files
}

// TestHMDB51AndUCFReadGulpChunks applies stdlib/datasets/hmdb51 and ucf
// to GulpIO repositories in kiyoonkim's layout through a mirror: every
// listed clip becomes 8 frames sampled as GATE samples them, its label the
// class, and the video head trains on them. A list naming a clip no chunk
// holds, and a chunk whose frame offsets run past its data file, are
// errors naming the file.
func TestHMDB51AndUCFReadGulpChunks(t *testing.T) {
	hub := &tierHub{repos: map[string]map[string][]byte{
		"kiyoonkim/hmdb51-gulprgb":  gulpRepo(t, 40, "train1.csv", "test1.csv"),
		"kiyoonkim/ucf-101-gulprgb": gulpRepo(t, 24, "trainlist01.txt", "testlist01.txt"),
	}}
	srv := httptest.NewServer(hub)
	t.Cleanup(srv.Close)
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "HOME=" + t.TempDir()}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), trainPipeline{name: "hmdb51", source: "hmdb51", args: "  image_size = [8, 8]\n",
		id: "hmdb51", category: "Video Class", encoder: "  arch     = \"convnet\"\n  channels = [4]\n  hidden   = [8]\n",
		adapter: "  task   = \"video\"\n  layers = 1\n  dim    = 8\n  heads  = 2\n", batch: 8, iters: 30, every: 10, extra: `
module "ucf" {
  source     = "stdlib/datasets/ucf"
  image_size = [8, 8]
  frames     = 4
}
output "hmdb"      { value = [module.hmdb51.dataset.splits, module.hmdb51.dataset.shape, module.hmdb51.dataset.task, module.hmdb51.dataset.classes] }
output "ucf_shape" { value = module.ucf.dataset.shape }
output "acc1"      { value = train.t.test["Acc@1"] }
`}.String())
	r := gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`hmdb = [{"test":10,"train":27,"val":3},[8,3,8,8],"video",["0","1","2"]]`, `ucf_shape = [4,3,8,8]`, `acc1 = `} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %s:\n%s", want, r.stdout)
		}
	}

	for _, tc := range []struct {
		name, file string
		change     func([]byte) []byte
		want       string
	}{
		{"unknown clip", "splits_gulp_rgb/test1.csv", func(b []byte) []byte { return append(b, "class0/nowhere 99 0 0 3\n"...) }, `clip "class0/nowhere" is in no gulp chunk`},
		{"offsets past the data", "gulp_rgb/data_1.gulp", func(b []byte) []byte { return b[:len(b)/2] }, "does not fit a data file of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := gulpRepo(t, 40, "train1.csv", "test1.csv")
			repo[tc.file] = tc.change(repo[tc.file])
			hub.mu.Lock()
			hub.repos["kiyoonkim/hmdb51-gulprgb"] = repo
			hub.mu.Unlock()
			d := t.TempDir()
			writeFile(t, filepath.Join(d, "main.hcl"), "module \"hmdb51\" {\n  source     = \"stdlib/datasets/hmdb51\"\n  image_size = [8, 8]\n}\n")
			r := gpEnv(t, filepath.Join(t.TempDir(), "c"), env, "apply", d)
			if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, tc.want) || strings.Contains(out, "panic") {
				t.Fatalf("exit %d, want %q:\n%s", r.code, tc.want, out)
			}
		})
	}
}
