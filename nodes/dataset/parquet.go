package dataset

// Format parquet: Hugging Face Parquet shards (labels, questions, masks,
// arrays, or image-caption pairs in captions.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gatepipe/gatepipe/formats/hfparquet"
	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// parseParquet reads Hugging Face Parquet shards row group by row group.
func (n *Node) parseParquet(paths []string, classes, vocab []string) (*examples, error) {
	o := hfparquet.Options{Classes: classes, Channels: 3, MaxPixels: n.media.maxPixels}
	if n.cfg.QuestionColumn != nil {
		o.TextColumn = *n.cfg.QuestionColumn
	}
	if n.cfg.ImageColumn != nil {
		o.ImageColumn = *n.cfg.ImageColumn
	}
	if n.cfg.LabelColumn != nil {
		o.LabelColumn = *n.cfg.LabelColumn
	}
	if len(n.cfg.ImageSize) == 2 {
		o.Height, o.Width = n.cfg.ImageSize[0], n.cfg.ImageSize[1]
	}
	if n.cfg.Channels != nil {
		o.Channels = *n.cfg.Channels
	}
	if len(n.pairs) > 0 {
		return n.parseParquetCaptions(paths, vocab, o)
	}
	// Encoded images are decoded only when a split takes them, a batch
	// at a time (so a capped run decodes only the images it keeps, and
	// no run holds them all): the labels first, the images later.
	// Masks stored as images are likewise read a batch at a time; the
	// first pass only counts them and finds their classes.
	lazy := true
	o.LabelsOnly, o.MaskSummary = true, true
	d, err := hfparquet.Read(context.Background(), paths, o)
	if errors.Is(err, hfparquet.ErrNotEncoded) {
		lazy, o.LabelsOnly, o.MaskSummary = false, false, false
		d, err = hfparquet.Read(context.Background(), paths, o)
	}
	if err != nil {
		return nil, err
	}
	ex := &examples{shape: d.Shape, y: d.Y, yShape: d.YShape, yf: d.YF, targets: d.Targets, classes: d.Classes, task: d.Task}
	if d.Text != nil {
		// Visual question answering: the answer classes with the
		// question as word tokens (the relational head).
		if d.Task != hfparquet.Classification {
			return nil, fmt.Errorf("question_column needs answers that are classes, not %s targets", d.Task)
		}
		ex.task = "relational"
		n.tokenize(ex, d.Text, vocab)
	}
	if len(d.Shape) == 2 && slices.Equal(d.Shape, d.YShape) {
		// A grey slice with a mask of its size (ACDC): one channel.
		ex.shape = []int{1, d.Shape[0], d.Shape[1]}
	}
	lazyMasks := lazy && d.Task == hfparquet.Segmentation && d.Y == nil
	if lazy {
		o.LabelsOnly, o.MaskSummary = false, false
		ex.dtype, ex.lazy = safetensors.U8, &parquetPixels{paths: paths, o: o}
	} else if d.U8 != nil {
		ex.dtype, ex.u8 = safetensors.U8, d.U8
	} else {
		ex.dtype, ex.f32 = safetensors.F32, d.F32
	}
	if lazyMasks {
		ex.lazyY, ex.count = &parquetMasks{paths: paths, o: o}, d.Rows
		if ex.classes == nil {
			ex.classes = numericClasses(d.MaskMax + 1)
		}
	}
	if ex.classes == nil && (d.Task == hfparquet.Classification || d.Task == hfparquet.Segmentation) {
		// Unnamed classes (or mask values): numbered up to the largest seen.
		ex.classes = numericClasses(int(slices.Max(d.Y)) + 1)
	}
	return ex, nil
}

// parquetMasks reads chosen rows' masks of Parquet shards (a second pass,
// a batch at a time).
type parquetMasks struct {
	paths []string
	o     hfparquet.Options
}

func (p *parquetMasks) labels(idx []int) ([]int64, error) {
	if len(idx) == 0 {
		return []int64{}, nil
	}
	o := p.o
	o.Rows, o.Masks = idx, true
	d, err := hfparquet.Read(context.Background(), p.paths, o)
	if err != nil {
		return nil, err
	}
	return d.Y, nil
}
