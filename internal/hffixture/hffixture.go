// Package hffixture writes small Parquet shards in the layouts the
// Hugging Face Hub uses (image struct{bytes, path} columns, ClassLabel
// names in the "huggingface" metadata, nested float lists), for tests and
// benchmarks that cannot download the real ones.
package hffixture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var imageType = arrow.StructOf(
	arrow.Field{Name: "bytes", Type: arrow.BinaryTypes.Binary, Nullable: true},
	arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true},
)

// appendImage appends one Hub image {bytes, path} to an imageType
// column (path "" is written as null).
func appendImage(col array.Builder, data []byte, path string) {
	sb := col.(*array.StructBuilder)
	sb.Append(true)
	if data == nil { // an image the datasets library did not embed
		sb.FieldBuilder(0).(*array.BinaryBuilder).AppendNull()
	} else {
		sb.FieldBuilder(0).(*array.BinaryBuilder).Append(data)
	}
	if path == "" {
		sb.FieldBuilder(1).(*array.StringBuilder).AppendNull()
	} else {
		sb.FieldBuilder(1).(*array.StringBuilder).Append(path)
	}
}

// hfMeta is the "huggingface" metadata the datasets library writes.
func hfMeta(features map[string]any) string {
	b, _ := json.Marshal(map[string]any{"info": map[string]any{"features": features}})
	return string(b)
}

// PNG encodes an image.
func PNG(img image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // an in-memory image always encodes
	}
	return buf.Bytes()
}

// ClassImage draws a seeded, class-dependent picture: a w×h RGB image
// whose colour and bar position follow the class, with noise, so that a
// model can learn the classes.
func ClassImage(class, w, h int, rng *rand.Rand) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	base := color.RGBA{uint8(40 * (class % 6)), uint8(255 - 30*(class%8)), uint8(60 * (class % 4)), 255}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := base
			if (x+class*3)%w < w/3 {
				c = color.RGBA{255 - c.R, 255 - c.G, 255 - c.B, 255}
			}
			n := uint8(rng.IntN(24))
			img.Set(x, y, color.RGBA{c.R/2 + n, c.G/2 + n, c.B/2 + n, 255})
		}
	}
	return img
}

// ImageClassification writes a shard with an image column holding
// encoded images and an int64 ClassLabel "label" column, rowGroup rows
// per row group (the Hub uses 100 for image datasets).
func ImageClassification(w io.Writer, images [][]byte, labels []int64, classes []string, rowGroup int) error {
	md := arrow.NewMetadata([]string{"huggingface"}, []string{hfMeta(map[string]any{
		"image": map[string]any{"_type": "Image"},
		"label": map[string]any{"_type": "ClassLabel", "names": classes},
	})})
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "image", Type: imageType, Nullable: true},
		{Name: "label", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, &md)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, img := range images {
		appendImage(b.Field(0), img, fmt.Sprintf("%06d.png", i))
		b.Field(1).(*array.Int64Builder).Append(labels[i])
	}
	return write(w, b.NewRecordBatch(), rowGroup)
}

// Arrays writes an ACDC-style shard: "image" a list<list<float32>> per
// row and "label" a list<list<int64>> mask of the same shape.
func Arrays(w io.Writer, images [][][]float32, masks [][][]int64, rowGroup int) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "image", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Float32)), Nullable: true},
		{Name: "label", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int64)), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	xb := b.Field(0).(*array.ListBuilder)
	yb := b.Field(1).(*array.ListBuilder)
	for i := range images {
		xb.Append(true)
		inner := xb.ValueBuilder().(*array.ListBuilder)
		for _, row := range images[i] {
			inner.Append(true)
			inner.ValueBuilder().(*array.Float32Builder).AppendValues(row, nil)
		}
		yb.Append(true)
		yinner := yb.ValueBuilder().(*array.ListBuilder)
		for _, row := range masks[i] {
			yinner.Append(true)
			yinner.ValueBuilder().(*array.Int64Builder).AppendValues(row, nil)
		}
	}
	return write(w, b.NewRecordBatch(), rowGroup)
}

// Segmentation writes an ADE20K-style shard: "image" and "annotation"
// both encoded images, the annotation a grey PNG of class indices.
func Segmentation(w io.Writer, images, masks [][]byte, rowGroup int) error {
	return SegmentationAs(w, images, masks, "annotation", rowGroup)
}

// SegmentationAs writes a segmentation shard whose mask column has the
// given name (COCO-Stuff's "mask").
func SegmentationAs(w io.Writer, images, masks [][]byte, maskColumn string, rowGroup int) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "image", Type: imageType, Nullable: true},
		{Name: maskColumn, Type: imageType, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range images {
		for k, data := range [][]byte{images[i], masks[i]} {
			appendImage(b.Field(k), data, "")
		}
	}
	return write(w, b.NewRecordBatch(), rowGroup)
}

// StringLabels writes a shard whose labels are class-name strings.
func StringLabels(w io.Writer, images [][]byte, labels []string, rowGroup int) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "img", Type: imageType, Nullable: true},
		{Name: "species", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range images {
		appendImage(b.Field(0), images[i], "")
		b.Field(1).(*array.StringBuilder).Append(labels[i])
	}
	return write(w, b.NewRecordBatch(), rowGroup)
}

// VQA writes a shard in the layout of dali-does/clevr-math's Parquet:
// "template", "id" and "question" strings, the "image" and an int64
// "label" (the numeric answer).
func VQA(w io.Writer, images [][]byte, questions []string, answers []int64, rowGroup int) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "template", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "question", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "image", Type: imageType, Nullable: true},
		{Name: "label", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range images {
		b.Field(0).(*array.StringBuilder).Append("subtraction")
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("CLEVR_train_%06d.png", i))
		b.Field(2).(*array.StringBuilder).Append(questions[i])
		appendImage(b.Field(3), images[i], "")
		b.Field(4).(*array.Int64Builder).Append(answers[i])
	}
	return write(w, b.NewRecordBatch(), rowGroup)
}

func write(w io.Writer, rec arrow.RecordBatch, rowGroup int) error {
	defer rec.Release()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(int64(rowGroup)))
	fw, err := pqarrow.NewFileWriter(rec.Schema(), w, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return err
	}
	for off := int64(0); off < rec.NumRows(); off += int64(rowGroup) {
		part := rec.NewSlice(off, min(off+int64(rowGroup), rec.NumRows()))
		err := fw.Write(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}

// Winoground writes a shard in the layout of facebook/winoground's
// Parquet: "id", "image_0", "image_1", "caption_0", "caption_1", "tag",
// "secondary_tag", "num_main_preds" and "collapsed_tag", one row per item.
func Winoground(w io.Writer, images [][2][]byte, captions [][2]string, rowGroup int) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "image_0", Type: imageType, Nullable: true},
		{Name: "image_1", Type: imageType, Nullable: true},
		{Name: "caption_0", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "caption_1", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "secondary_tag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "num_main_preds", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "collapsed_tag", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range images {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		for k := range 2 {
			appendImage(b.Field(1+k), images[i][k], fmt.Sprintf("ex_%d_img_%d.png", i, k))
			b.Field(3 + k).(*array.StringBuilder).Append(captions[i][k])
		}
		b.Field(5).(*array.StringBuilder).Append("Object")
		b.Field(6).(*array.StringBuilder).Append("")
		b.Field(7).(*array.Int64Builder).Append(1)
		b.Field(8).(*array.StringBuilder).Append("Object")
	}
	return write(w, b.NewRecordBatch(), rowGroup)
}

// CaptionContest writes a shard in the layout of the "explanation" config
// of jmhessel/newyorker_caption_contest: the cartoon "image", its contest
// number and descriptions, "caption_choices" (the caption, a string in
// this config), the explanation "label" and an "instance_id".
func CaptionContest(w io.Writer, images [][]byte, contests []int32, captions []string, rowGroup int) error {
	str := arrow.BinaryTypes.String
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "image", Type: imageType, Nullable: true},
		{Name: "contest_number", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "image_location", Type: str, Nullable: true},
		{Name: "image_description", Type: str, Nullable: true},
		{Name: "image_uncanny_description", Type: str, Nullable: true},
		{Name: "entities", Type: arrow.ListOf(str), Nullable: true},
		{Name: "questions", Type: arrow.ListOf(str), Nullable: true},
		{Name: "caption_choices", Type: str, Nullable: true},
		{Name: "from_description", Type: str, Nullable: true},
		{Name: "label", Type: str, Nullable: true},
		{Name: "n_tokens_label", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "instance_id", Type: str, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range images {
		appendImage(b.Field(0), images[i], "")
		b.Field(1).(*array.Int32Builder).Append(contests[i])
		b.Field(2).(*array.StringBuilder).Append("an office")
		b.Field(3).(*array.StringBuilder).Append("Two people talk at a desk.")
		b.Field(4).(*array.StringBuilder).Append("One of them is a bear.")
		for _, f := range []int{5, 6} {
			lb := b.Field(f).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).Append("https://en.wikipedia.org/wiki/Bear")
		}
		b.Field(7).(*array.StringBuilder).Append(captions[i])
		b.Field(8).(*array.StringBuilder).Append("scene: an office")
		b.Field(9).(*array.StringBuilder).Append("The joke is that the bear is the boss.")
		b.Field(10).(*array.Int32Builder).Append(9)
		b.Field(11).(*array.StringBuilder).Append(fmt.Sprintf("%032x", i))
	}
	return write(w, b.NewRecordBatch(), rowGroup)
}
