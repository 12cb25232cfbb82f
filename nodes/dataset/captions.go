package dataset

// Parquet image-caption pairs: NYCC's explanation config (one image, one
// caption per row) and Winoground (two images, two captions per row, a
// group scored on its own).

import (
	"context"
	"fmt"

	"github.com/gatepipe/gatepipe/formats/hfparquet"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// decodeParquetCaptions checks caption_column (with image_column),
// image_columns / caption_columns and metric_names, and sets n.pairs.
func (n *Node) decodeParquetCaptions(decl nodes.Decl) hcl.Diagnostics {
	cfg := n.cfg
	var diags hcl.Diagnostics
	for name, to := range cfg.MetricNames {
		if name == "" || to == "" {
			diags = append(diags, decl.Errorf("metric_names", "Invalid metric_names", "metric_names maps a metric's name to the name the benchmark's results use; neither may be empty."))
		}
	}
	lists := len(cfg.ImageColumns) > 0 || len(cfg.CaptionColumns) > 0
	if cfg.Format != "parquet" {
		if lists {
			diags = append(diags, decl.Errorf("image_columns", "Invalid image_columns", "image_columns and caption_columns name Parquet columns of image-caption pairs; this dataset's format is %q.", cfg.Format))
		}
		return diags
	}
	if cfg.CaptionColumn == nil && !lists {
		return diags
	}
	switch {
	case cfg.CaptionColumn != nil && lists:
		diags = append(diags, decl.Errorf("caption_column", "Conflicting caption columns", "Use caption_column (with image_column) for one pair per row, or image_columns and caption_columns for several, not both."))
	case lists && len(cfg.ImageColumns) != len(cfg.CaptionColumns):
		diags = append(diags, decl.Errorf("image_columns", "Unpaired columns", "image_columns (%d) and caption_columns (%d) pair up in order and must be as long.", len(cfg.ImageColumns), len(cfg.CaptionColumns)))
	case lists && cfg.ImageColumn != nil:
		diags = append(diags, decl.Errorf("image_column", "Conflicting image columns", "Use image_column or image_columns, not both."))
	case cfg.CaptionColumn != nil:
		image := "image"
		if cfg.ImageColumn != nil {
			image = *cfg.ImageColumn
		}
		n.pairs = []hfparquet.Pair{{Image: image, Text: *cfg.CaptionColumn}}
	default:
		for i := range cfg.ImageColumns {
			n.pairs = append(n.pairs, hfparquet.Pair{Image: cfg.ImageColumns[i], Text: cfg.CaptionColumns[i]})
		}
	}
	if len(n.pairs) == 0 {
		return diags
	}
	if cfg.LabelColumn != nil || cfg.QuestionColumn != nil {
		diags = append(diags, decl.Errorf("caption_column", "Captions with labels", "An image-caption dataset pairs images with captions (image-text retrieval); it has no label_column or question_column."))
	}
	if cfg.Task != nil && *cfg.Task != "retrieval" {
		diags = append(diags, decl.Errorf("task", "Invalid task", "Image-caption pairs are a retrieval task, not %s.", *cfg.Task))
	}
	if len(cfg.ImageSize) != 2 {
		diags = append(diags, decl.Errorf("caption_column", "Missing image_size", "Image-caption pairs hold encoded images; set image_size = [H, W]."))
	}
	n.task = "retrieval"
	return diags
}

// parseParquetCaptions reads image-caption pairs: the captions become
// word tokens (over the training split's vocabulary, or a new one when
// vocab is nil), the labels number the examples. The captions are read
// first; the images when a split's batch takes them (Options.Rows counts
// examples, a row's pairs being its examples).
func (n *Node) parseParquetCaptions(paths []string, vocab []string, o hfparquet.Options) (*examples, error) {
	o.Pairs = n.pairs
	o.LabelsOnly = true
	d, err := hfparquet.Read(context.Background(), paths, o)
	if err != nil {
		return nil, err
	}
	if len(d.Text) != d.Rows {
		return nil, fmt.Errorf("%d captions for %d examples (internal error)", len(d.Text), d.Rows)
	}
	ex := &examples{shape: d.Shape, task: "retrieval", group: len(n.pairs)}
	n.tokenize(ex, d.Text, vocab)
	ex.y = make([]int64, d.Rows)
	for i := range ex.y {
		ex.y[i] = int64(i)
	}
	o.LabelsOnly = false
	ex.dtype, ex.lazy = safetensors.U8, &parquetPixels{paths: paths, o: o}
	return ex, nil
}
