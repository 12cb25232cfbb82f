// Package annotatedfixture builds test fixtures in the real layouts of
// image sets annotated by a table: the Kaggle HAM10000 zip and the
// nlphuji/flickr30k image zip with its captions CSV. Images are small and
// one grey level each, chosen so that a test can check that images and
// annotations stay paired.
package annotatedfixture

import (
	"archive/zip"
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"sort"
)

// Zip returns a zip archive of files (path → content), in sorted order.
func Zip(files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// GreyImage encodes a 4x4 image of one grey level as PNG or JPEG.
func GreyImage(level byte, asPNG bool) []byte {
	img := image.NewGray(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = level
	}
	var b bytes.Buffer
	if asPNG {
		png.Encode(&b, img) // writing to memory does not fail
	} else {
		jpeg.Encode(&b, img, &jpeg.Options{Quality: 100})
	}
	return b.Bytes()
}

// HAM10000Classes are the seven diagnoses (dx) of HAM10000, sorted.
var HAM10000Classes = []string{"akiec", "bcc", "bkl", "df", "mel", "nv", "vasc"}

// HAM10000Levels is the grey level of each diagnosis's images.
var HAM10000Levels = map[string]byte{"akiec": 20, "bcc": 50, "bkl": 80, "df": 110, "mel": 140, "nv": 170, "vasc": 200}

// HAM10000 is the Kaggle kmader/skin-cancer-mnist-ham10000 archive with n
// images: HAM10000_metadata.csv and the JPEGs split between
// HAM10000_images_part_1 and _part_2, with the archive's lower-case copy
// of part 1. Diagnoses cycle through the seven of HAM10000Classes.
func HAM10000(n int) ([]byte, error) {
	csv := "lesion_id,image_id,dx,dx_type,age,sex,localization\n"
	files := map[string][]byte{}
	for i := range n {
		dx := HAM10000Classes[i%len(HAM10000Classes)]
		id := fmt.Sprintf("ISIC_%07d", i)
		csv += fmt.Sprintf("HAM_%07d,%s,%s,histo,50.0,male,back\n", i, id, dx)
		part := []string{"HAM10000_images_part_1", "HAM10000_images_part_2"}[i%2]
		img := GreyImage(HAM10000Levels[dx], false)
		files[part+"/"+id+".jpg"] = img
		if i%2 == 0 {
			files["ham10000_images_part_1/"+id+".jpg"] = img
		}
	}
	files["HAM10000_metadata.csv"] = []byte(csv)
	return Zip(files)
}

// Caption is one image of a Flickr30k fixture.
type Caption struct {
	Text, Split string
}

// Flickr30k is nlphuji/flickr30k's layout: flickr30k-images.zip and
// flickr_annotations_30k.csv, whose "raw" column holds each image's
// captions as a JSON list (the given one first) and whose "split" column
// assigns it. Image i has grey level 10*i mod 250.
func Flickr30k(captions []Caption) (images, annotations []byte, err error) {
	files := map[string][]byte{}
	csv := "raw,sentids,split,filename,img_id\n"
	for i, c := range captions {
		name := fmt.Sprintf("%d.jpg", 1000092795+i)
		files["flickr30k-images/"+name] = GreyImage(byte(10*i%250), false)
		csv += fmt.Sprintf("\"[\"\"%s\"\", \"\"another caption\"\"]\",\"[%d]\",%s,%s,%d\n", c.Text, 5*i, c.Split, name, i)
	}
	images, err = Zip(files)
	return images, []byte(csv), err
}
