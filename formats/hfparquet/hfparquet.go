// Package hfparquet reads datasets stored the way the Hugging Face Hub
// stores them: Parquet shards (data/<split>-NNNNN-of-NNNNN.parquet) whose
// image columns are struct{bytes, path} holding encoded JPEG/PNG, whose
// ClassLabel columns hold integers named in the file's "huggingface"
// metadata, and whose array columns are nested float lists (ACDC). It
// streams one row group at a time, so memory is bounded by a row group
// and the decoded, resized examples, whatever the file size.
package hfparquet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	_ "image/jpeg" // register decoders
	_ "image/png"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/gatepipe/gatepipe/formats/imagedec"
)

// Options say which columns to read and how to shape the examples.
type Options struct {
	// ImageColumn and LabelColumn name the input and target columns; ""
	// picks "image"/"img" (or the first encoded-image column) and
	// "label"/"labels"/"fine_label".
	ImageColumn, LabelColumn string
	// Height, Width and Channels (1 or 3) shape encoded images; they are
	// resized (bilinear; masks nearest-neighbour). Required for encoded
	// images, ignored for float arrays.
	Height, Width, Channels int
	// Classes fixes the class order of string labels (the training
	// split's, when reading test shards); nil collects them.
	Classes []string
	// TextColumn, when set, names a string column read beside each
	// example into Data.Text (a VQA question).
	TextColumn string
	// LabelsOnly reads the targets (and text) without the inputs: the
	// first pass of reading a subset. Data.Shape is the images' shape;
	// an input column of float arrays is ErrNotEncoded.
	LabelsOnly bool
	// Rows, when set, reads only the inputs of these rows (ascending
	// indices over all the files, as a LabelsOnly pass counted them),
	// skipping row groups that hold none: Data.U8 holds them in order.
	Rows []int
	// Pairs, when set, reads image-text pairs instead of labelled
	// images: each row gives one example per pair, in order, with the
	// pair's image as input and its text in Data.Text (a caption). The
	// label columns are not read. With more than one pair a row's
	// examples are a group (Winoground's two images and two captions);
	// LabelsOnly and Rows then count examples too.
	Pairs []Pair
	// MaskSummary, with LabelsOnly, decodes masks stored as images only
	// to count them and find their largest value (Data.MaskMax), without
	// keeping them: a dataset's masks are read later, a batch of Rows at a
	// time (Masks).
	MaskSummary bool
	// Masks, with Rows, reads those rows' masks into Data.Y (and their
	// shape into YShape) instead of their images.
	Masks bool
	// MaxPixels bounds the pixels an encoded image or mask may declare
	// (0: imagedec.DefaultMaxPixels); a larger one is refused before it
	// is decoded.
	MaxPixels int64
}

// Pair names an image column and the text column that describes it.
type Pair struct{ Image, Text string }

// ErrNotEncoded is LabelsOnly on an input column that holds arrays, not
// encoded images (its shape is only known by reading it).
var ErrNotEncoded = errors.New("the input column holds arrays, not encoded images")

// Target kinds.
const (
	Classification = "classification"
	MultiLabel     = "multilabel"
	Segmentation   = "segmentation"
	Regression     = "regression"
)

// Data is what the shards held.
type Data struct {
	// Shape is one example's shape: [C, H, W] for images, the nested
	// list's shape for float arrays.
	Shape   []int
	U8      []byte    // encoded images, decoded
	F32     []float32 // float arrays
	Task    string
	Y       []int64   // class per example, or a mask per example
	YShape  []int     // [H, W] for masks
	YF      []float32 // multi-label (0/1 per class) or regression targets
	Targets int       // YF values per example
	Classes []string
	Rows    int
	// MaskMax is the largest mask value a MaskSummary pass saw.
	MaskMax int
	// maskScratch holds one mask's values while MaskMax is found.
	maskScratch []int64
	// Text holds TextColumn's value per example.
	Text []string
	// next is the first of Options.Rows not read yet.
	next int
	// dec decodes and scales the encoded inputs.
	dec *imagedec.Decoder
}

// Read reads the files in order, row group by row group.
func Read(ctx context.Context, files []string, o Options) (*Data, error) {
	d := &Data{}
	if o.Rows != nil && !slices.IsSorted(o.Rows) {
		return nil, fmt.Errorf("rows to read are not in ascending order")
	}
	var names []string // string labels, mapped once all are read
	for _, f := range files {
		if err := readFile(ctx, f, o, d, &names); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	if d.Rows == 0 {
		return nil, fmt.Errorf("no rows in %s", strings.Join(files, ", "))
	}
	if o.Rows != nil {
		if d.next != len(o.Rows) {
			return nil, fmt.Errorf("row %d is past the %d rows of %s", o.Rows[d.next], d.Rows, strings.Join(files, ", "))
		}
		return d, nil
	}
	if names != nil {
		classes := o.Classes
		if classes == nil {
			classes = slices.Clone(names)
			sort.Strings(classes)
			classes = slices.Compact(classes)
		}
		index := map[string]int64{}
		for i, c := range classes {
			index[c] = int64(i)
		}
		d.Y = make([]int64, len(names))
		for i, n := range names {
			k, ok := index[n]
			if !ok {
				return nil, fmt.Errorf("label %q is not one of the training classes (%d of them)", n, len(classes))
			}
			d.Y[i] = k
		}
		d.Classes = classes
	}
	return d, nil
}

func readFile(ctx context.Context, path string, o Options, d *Data, names *[]string) (err error) {
	// The Parquet library can panic on a damaged file; that is bad input,
	// not a bug here.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("damaged Parquet file: %v", r)
		}
	}()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return err
	}
	defer pf.Close()
	if err := checkCodecs(pf); err != nil {
		return err
	}
	// Small batches: a batch's image bytes sit in one Arrow buffer that
	// grows by copying, so a whole row group in one batch allocated ~17x
	// the file's size and let the heap's peak grow with the file.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	sc, err := fr.Schema()
	if err != nil {
		return err
	}
	if len(o.Pairs) > 0 {
		return readPairs(ctx, pf, fr, sc, o, d)
	}
	imgCol, err := pickColumn(sc, o.ImageColumn, []string{"image", "img", "pixel_values"}, isEncodedImage, "image_column")
	if err != nil {
		return err
	}
	labCol, err := pickColumn(sc, o.LabelColumn, []string{"label", "labels", "fine_label", "annotation", "mask"}, nil, "label_column")
	if err != nil {
		return err
	}
	if d.Classes == nil && o.Classes == nil {
		if d.Classes, err = classNames(pf, labCol); err != nil {
			return err
		}
	}
	if o.LabelsOnly {
		field, _ := sc.FieldsByName(imgCol)
		if len(field) == 0 || !isEncodedImage(field[0].Type) {
			return ErrNotEncoded
		}
		if o.Height <= 0 || o.Width <= 0 {
			return fmt.Errorf("encoded images need image_size = [H, W]")
		}
		d.Shape = []int{cmp.Or(o.Channels, 3), o.Height, o.Width}
	}
	cols := []string{imgCol, labCol}
	switch {
	case o.LabelsOnly, o.Rows != nil && o.Masks:
		cols = []string{labCol}
	case o.Rows != nil:
		cols = []string{imgCol}
	}
	if o.TextColumn != "" && o.Rows == nil {
		if len(sc.FieldIndices(o.TextColumn)) == 0 {
			return fmt.Errorf("no column %q (text_column)", o.TextColumn)
		}
		cols = append(cols, o.TextColumn)
	}
	return readRowGroups(ctx, pf, fr, leafColumns(pf, cols...), 1, o, d, func(tbl arrow.Table) error {
		return readTable(tbl, imgCol, labCol, o, d, names)
	})
}

// readRowGroups hands read each row group's leaves batch by batch,
// skipping a row group none of whose examples Options.Rows wants (each
// row holds perRow examples; d.Rows counts them).
func readRowGroups(ctx context.Context, pf *file.Reader, fr *pqarrow.FileReader, leaves []int, perRow int, o Options, d *Data, read func(arrow.Table) error) error {
	for rg := 0; rg < pf.NumRowGroups(); rg++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n := perRow * int(pf.MetaData().RowGroup(rg).NumRows()); o.Rows != nil && (d.next == len(o.Rows) || o.Rows[d.next] >= d.Rows+n) {
			d.Rows += n // none of its examples is wanted
			continue
		}
		if err := readRowGroup(ctx, fr, rg, leaves, read); err != nil {
			return fmt.Errorf("row group %d: %w", rg, err)
		}
	}
	return nil
}

// batchRows is how many rows are decoded from Parquet at a time.
const batchRows = 1

// readRowGroup reads one row group's leaves batch by batch, handing each
// batch to read.
func readRowGroup(ctx context.Context, fr *pqarrow.FileReader, rg int, leaves []int, read func(arrow.Table) error) error {
	rr, err := fr.GetRecordReader(ctx, leaves, []int{rg})
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
		err := read(tbl)
		tbl.Release()
		if err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// pickColumn returns the named column, or the first of the defaults
// present, or the first column pred accepts.
func pickColumn(sc *arrow.Schema, name string, defaults []string, pred func(arrow.DataType) bool, attr string) (string, error) {
	var have []string
	for _, f := range sc.Fields() {
		have = append(have, f.Name)
	}
	if name != "" {
		if len(sc.FieldIndices(name)) == 0 {
			return "", fmt.Errorf("%s = %q: no such column; the columns are %s", attr, name, strings.Join(have, ", "))
		}
		return name, nil
	}
	for _, n := range defaults {
		if len(sc.FieldIndices(n)) > 0 {
			return n, nil
		}
	}
	if pred != nil {
		for _, f := range sc.Fields() {
			if pred(f.Type) {
				return f.Name, nil
			}
		}
	}
	return "", fmt.Errorf("cannot tell which column to read; set %s to one of %s", attr, strings.Join(have, ", "))
}

// isEncodedImage: the Hub's Image feature, struct{bytes, path}.
func isEncodedImage(t arrow.DataType) bool {
	st, ok := t.(*arrow.StructType)
	if !ok {
		return false
	}
	_, ok = st.FieldByName("bytes")
	return ok
}

// leafColumns lists the Parquet leaf columns of the two columns, leaving
// out an image's path (only its bytes are needed).
func leafColumns(pf *file.Reader, cols ...string) []int {
	schema := pf.MetaData().Schema
	var out []int
	for i := 0; i < schema.NumColumns(); i++ {
		p := schema.Column(i).ColumnPath()
		if len(p) == 0 || !slices.Contains(cols, p[0]) {
			continue
		}
		if len(p) == 2 && p[1] == "path" {
			continue
		}
		out = append(out, i)
	}
	return out
}

// checkCodecs refuses, before reading, a column chunk compressed with a
// codec the Parquet library cannot decode: the deprecated LZ4 codec
// (Hadoop's framing, which old Spark and Hadoop writers use), whose
// decoding error names no codec to rewrite the file with.
func checkCodecs(pf *file.Reader) error {
	md := pf.MetaData()
	for g := 0; g < md.NumRowGroups(); g++ {
		rg := md.RowGroup(g)
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return err
			}
			if cc.Compression() == compress.Codecs.Lz4 {
				return fmt.Errorf("row group %d, column %q: compressed with the deprecated Hadoop-framed LZ4 codec, which this reader cannot decode; rewrite the file with LZ4_RAW, zstd or snappy (pyarrow: pq.write_table(pq.read_table(f), out, compression=\"zstd\"))", g, cc.PathInSchema().String())
			}
		}
	}
	return nil
}

// classNames reads a label column's class names from the "huggingface"
// metadata the datasets library writes: a ClassLabel, or a list of them
// for multi-label columns (Sequence(ClassLabel) in datasets 2 and 3,
// List(ClassLabel) in 4, or the one-element JSON array [ClassLabel]).
// Only the label column's feature is decoded, so that other features of
// any shape (a JSON array such as [Value("string")]) cannot hide it. No
// metadata, or no ClassLabel for the column, is nil; metadata that is not
// JSON is an error.
func classNames(pf *file.Reader, col string) ([]string, error) {
	v := pf.MetaData().KeyValueMetadata().FindValue("huggingface")
	if v == nil {
		return nil, nil
	}
	return namesInMetadata(*v, col)
}

// namesInMetadata is classNames on the metadata's JSON text.
func namesInMetadata(v, col string) ([]string, error) {
	var meta struct {
		Info struct {
			Features map[string]json.RawMessage `json:"features"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(v), &meta); err != nil {
		return nil, fmt.Errorf("its \"huggingface\" metadata is not the JSON the datasets library writes: %w", err)
	}
	raw, ok := meta.Info.Features[col]
	if !ok {
		return nil, nil
	}
	return classLabelNames(raw, 0), nil
}

// classLabelNames finds the names of a ClassLabel feature, directly or as
// the element of a list feature (depth bounds nesting).
func classLabelNames(raw json.RawMessage, depth int) []string {
	if depth > 3 {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		if len(list) == 1 {
			return classLabelNames(list[0], depth+1)
		}
		return nil
	}
	var f struct {
		Type    string          `json:"_type"`
		Names   []string        `json:"names"`
		Feature json.RawMessage `json:"feature"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil
	}
	switch f.Type {
	case "ClassLabel":
		return f.Names
	case "Sequence", "List", "LargeList":
		if len(f.Feature) > 0 {
			return classLabelNames(f.Feature, depth+1)
		}
	}
	return nil
}

func column(tbl arrow.Table, name string) ([]arrow.Array, error) {
	idx := tbl.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil, fmt.Errorf("column %q missing", name)
	}
	return tbl.Column(idx[0]).Data().Chunks(), nil
}

func readTable(tbl arrow.Table, imgCol, labCol string, o Options, d *Data, names *[]string) error {
	var xs, ys, texts []arrow.Array
	var err error
	masks := o.Rows != nil && o.Masks
	if !o.LabelsOnly && !masks {
		if xs, err = column(tbl, imgCol); err != nil {
			return err
		}
	}
	if o.Rows == nil || masks {
		if ys, err = column(tbl, labCol); err != nil {
			return err
		}
	}
	if o.Rows == nil {
		if o.TextColumn != "" {
			if texts, err = column(tbl, o.TextColumn); err != nil {
				return err
			}
		}
	}
	for row := range int(tbl.NumRows()) {
		if o.Rows != nil {
			if d.next == len(o.Rows) || o.Rows[d.next] != d.Rows {
				d.Rows++
				continue
			}
			d.next++
		}
		if xs != nil {
			xa, i := at(xs, row)
			if err := appendInput(d, xa, i, o); err != nil {
				return fmt.Errorf("row %d, column %q: %w", d.Rows, imgCol, err)
			}
		}
		if texts != nil {
			ta, j := at(texts, row)
			s, ok := text(ta, j)
			if !ok {
				return fmt.Errorf("row %d, column %q: not a string", d.Rows, o.TextColumn)
			}
			d.Text = append(d.Text, s)
		}
		if ys != nil {
			ya, j := at(ys, row)
			if err := appendTarget(d, ya, j, o, names); err != nil {
				return fmt.Errorf("row %d, column %q: %w", d.Rows, labCol, err)
			}
		}
		d.Rows++
	}
	return nil
}
