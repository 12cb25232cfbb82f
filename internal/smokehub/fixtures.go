package smokehub

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"strings"

	"github.com/gatepipe/gatepipe/internal/cifarfixture"
	"github.com/gatepipe/gatepipe/internal/hffixture"
)

// ClassShard is a Hub image-classification Parquet shard (image, label;
// three classes, 12x12 PNGs each showing its class's pattern).
func ClassShard(n int, seed uint64) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var imgs [][]byte
	var labels []int64
	for i := range n {
		k := int64(i % 3)
		imgs = append(imgs, hffixture.PNG(hffixture.ClassImage(int(k), 12, 12, rng)))
		labels = append(labels, k)
	}
	var buf bytes.Buffer
	err := hffixture.ImageClassification(&buf, imgs, labels, []string{"akiec", "bcc", "mel"}, 100)
	return buf.Bytes(), err
}

// SegShard is an ADE20K-layout shard (image, annotation): 12x12 images
// whose mask marks a bright square as class 1 (the rest class 0), the
// mask column named maskColumn.
func SegShard(n int, seed uint64, maskColumn string) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, 2))
	var imgs, masks [][]byte
	for range n {
		img := image.NewRGBA(image.Rect(0, 0, 12, 12))
		mask := image.NewGray(image.Rect(0, 0, 12, 12))
		x0, y0 := rng.IntN(6), rng.IntN(6)
		for y := range 12 {
			for x := range 12 {
				v := uint8(rng.IntN(60))
				if x >= x0 && x < x0+6 && y >= y0 && y < y0+6 {
					v, mask.Pix[y*12+x] = 200+uint8(rng.IntN(40)), 1
				}
				img.Set(x, y, color.RGBA{v, v, v, 255})
			}
		}
		imgs, masks = append(imgs, hffixture.PNG(img)), append(masks, hffixture.PNG(mask))
	}
	var buf bytes.Buffer
	err := hffixture.SegmentationAs(&buf, imgs, masks, maskColumn, 100)
	return buf.Bytes(), err
}

// ClevrMathShard is a CLEVR-Math-layout shard (the Hub's Parquet
// conversion): the answer is the number of bright squares the image
// shows, the question names what to count.
func ClevrMathShard(n int, seed uint64) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, 5))
	var imgs [][]byte
	var qs []string
	var ans []int64
	for i := range n {
		count := i % 4
		img := image.NewRGBA(image.Rect(0, 0, 12, 12))
		for k := range count {
			for y := range 3 {
				for x := range 3 {
					img.Set(k*3+x, 4+y, color.RGBA{220, 220, 220, 255})
				}
			}
		}
		img.Set(rng.IntN(12), 11, color.RGBA{uint8(rng.IntN(80)), 0, 0, 255})
		imgs = append(imgs, hffixture.PNG(img))
		qs = append(qs, "Subtract all red spheres. How many cubes are left?")
		ans = append(ans, int64(count))
	}
	var buf bytes.Buffer
	err := hffixture.VQA(&buf, imgs, qs, ans, 100)
	return buf.Bytes(), err
}

// ACDCShard is an ACDC-layout shard: 16x16 float slices with an integer
// mask of 3 classes (a disc in a ring).
func ACDCShard(n int, seed uint64) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, 3))
	var imgs [][][]float32
	var masks [][][]int64
	for range n {
		img, mask := make([][]float32, 16), make([][]int64, 16)
		r := 3 + rng.IntN(4)
		for y := range 16 {
			img[y], mask[y] = make([]float32, 16), make([]int64, 16)
			for x := range 16 {
				d := (x-8)*(x-8) + (y-8)*(y-8)
				switch {
				case d < r*r/2:
					img[y][x], mask[y][x] = 0.9, 2
				case d < r*r:
					img[y][x], mask[y][x] = 0.5, 1
				}
				img[y][x] += float32(rng.Float64() * 0.1)
			}
		}
		imgs, masks = append(imgs, img), append(masks, mask)
	}
	var buf bytes.Buffer
	err := hffixture.Arrays(&buf, imgs, masks, 100)
	return buf.Bytes(), err
}

// CIFAR100Tarball is cifar-100-python.tar.gz as its authors publish it
// and torchvision downloads it: train and test batches and the meta
// file, pickled by Python 2 (four fine classes in use, 120 and 40 images).
func CIFAR100Tarball() []byte {
	rng := rand.New(rand.NewPCG(4, 4))
	batch := func(n int) []byte {
		px := make([]byte, 0, n*3072)
		fine, coarse := make([]int, n), make([]int, n)
		for i := range n {
			fine[i], coarse[i] = i%4, i%4/2
			for c := range 3 * 32 * 32 {
				px = append(px, byte(fine[i]*50+c%7+rng.IntN(20)))
			}
		}
		return cifarfixture.Py2Batch(px, n, map[string][]int{"fine_labels": fine, "coarse_labels": coarse})
	}
	names := make([]string, 100)
	for i := range names {
		names[i] = "class" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return cifarfixture.Tarball100(batch(120), batch(40), names)
}

// IWildCam is the Kaggle competition zip in its real layout
// (metadata/metadata/*.json and *.csv, train/train/*.jpg) and the splits
// repository's files: seqs sequences of 1 to 4 frames, each frame showing
// count bright squares.
func IWildCam(seqs int) (zipped []byte, splits map[string][]byte, err error) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	add := func(name string, data []byte) {
		if w, cerr := zw.Create(name); cerr != nil {
			err = cerr
		} else {
			w.Write(data)
		}
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
		count, frames := s%4, 1+s%4
		for f := range frames {
			id := fmt.Sprintf("%s-f%d", seq, f)
			var p bytes.Buffer
			jpeg.Encode(&p, countImage(count), nil)
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
	if cerr := zw.Close(); cerr != nil && err == nil {
		err = cerr
	}
	splits = map[string][]byte{}
	for k, v := range lists {
		splits[k+".txt"] = []byte(strings.Join(v, "\n") + "\n")
	}
	return b.Bytes(), splits, err
}

// countImage is a 32x24 camera-trap frame showing count bright squares.
func countImage(count int) image.Image {
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
	return img
}
