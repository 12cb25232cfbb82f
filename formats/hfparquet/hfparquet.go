// Package hfparquet reads datasets stored the way the Hugging Face Hub
// stores them: Parquet shards (data/<split>-NNNNN-of-NNNNN.parquet) whose
// image columns are struct{bytes, path} holding encoded JPEG/PNG, whose
// ClassLabel columns hold integers named in the file's "huggingface"
// metadata, and whose array columns are nested float lists (ACDC). It
// streams one row group at a time, so memory is bounded by a row group
// and the decoded, resized examples, whatever the file size.
package hfparquet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // register decoders
	_ "image/png"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/gatepipe/gatepipe/formats/imagefolder"
	"golang.org/x/image/draw"
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
}

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
	// Text holds TextColumn's value per example.
	Text []string
	// next is the first of Options.Rows not read yet.
	next int
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
	imgCol, err := pickColumn(sc, o.ImageColumn, []string{"image", "img", "pixel_values"}, isEncodedImage, "image_column")
	if err != nil {
		return err
	}
	labCol, err := pickColumn(sc, o.LabelColumn, []string{"label", "labels", "fine_label", "annotation", "mask"}, nil, "label_column")
	if err != nil {
		return err
	}
	if d.Classes == nil && o.Classes == nil {
		d.Classes = classNames(pf, labCol)
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
	case o.LabelsOnly:
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
	leaves := leafColumns(pf, cols...)
	for rg := 0; rg < pf.NumRowGroups(); rg++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n := int(pf.MetaData().RowGroup(rg).NumRows()); o.Rows != nil && (d.next == len(o.Rows) || o.Rows[d.next] >= d.Rows+n) {
			d.Rows += n // none of its rows is wanted
			continue
		}
		if err := readRowGroup(ctx, fr, rg, leaves, imgCol, labCol, o, d, names); err != nil {
			return fmt.Errorf("row group %d: %w", rg, err)
		}
	}
	return nil
}

// batchRows is how many rows are decoded from Parquet at a time.
const batchRows = 1

// readRowGroup reads one row group batch by batch into d.
func readRowGroup(ctx context.Context, fr *pqarrow.FileReader, rg int, leaves []int, imgCol, labCol string, o Options, d *Data, names *[]string) error {
	rr, err := fr.GetRecordReader(ctx, leaves, []int{rg})
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
		err := readTable(tbl, imgCol, labCol, o, d, names)
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

// classNames reads a ClassLabel's names from the "huggingface" metadata
// the datasets library writes.
func classNames(pf *file.Reader, col string) []string {
	v := pf.MetaData().KeyValueMetadata().FindValue("huggingface")
	if v == nil {
		return nil
	}
	var meta struct {
		Info struct {
			Features map[string]struct {
				Type  string   `json:"_type"`
				Names []string `json:"names"`
			} `json:"features"`
		} `json:"info"`
	}
	if json.Unmarshal([]byte(*v), &meta) != nil {
		return nil
	}
	f, ok := meta.Info.Features[col]
	if !ok || f.Type != "ClassLabel" {
		return nil
	}
	return f.Names
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
	if !o.LabelsOnly {
		if xs, err = column(tbl, imgCol); err != nil {
			return err
		}
	}
	if o.Rows == nil {
		if ys, err = column(tbl, labCol); err != nil {
			return err
		}
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

// text reads a string cell.
func text(a arrow.Array, i int) (string, bool) {
	if a == nil || a.IsNull(i) {
		return "", false
	}
	switch c := a.(type) {
	case *array.String:
		return c.Value(i), true
	case *array.LargeString:
		return c.Value(i), true
	case *array.StringView:
		return c.Value(i), true
	}
	return "", false
}

// at finds row in a chunked column.
func at(chunks []arrow.Array, row int) (arrow.Array, int) {
	for _, c := range chunks {
		if row < c.Len() {
			return c, row
		}
		row -= c.Len()
	}
	return nil, 0
}

func appendInput(d *Data, a arrow.Array, i int, o Options) error {
	if a.IsNull(i) {
		return fmt.Errorf("null")
	}
	if b, ok := encodedBytes(a, i); ok {
		img, _, err := image.Decode(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("cannot decode image: %w", err)
		}
		if o.Height <= 0 || o.Width <= 0 {
			return fmt.Errorf("encoded images need image_size = [H, W]")
		}
		ch := o.Channels
		if ch == 0 {
			ch = 3
		}
		shape := []int{ch, o.Height, o.Width}
		if d.Shape == nil {
			d.Shape = shape
		}
		d.U8 = imagefolder.AppendCHW(d.U8, resize(img, o.Width, o.Height, draw.BiLinear), ch)
		return nil
	}
	vals, shape, err := floats(a, i)
	if err != nil {
		return err
	}
	if d.Shape == nil {
		d.Shape = shape
	} else if !slices.Equal(d.Shape, shape) {
		return fmt.Errorf("array of shape %v, but earlier rows have %v", shape, d.Shape)
	}
	d.F32 = append(d.F32, vals...)
	return nil
}

func appendTarget(d *Data, a arrow.Array, i int, o Options, names *[]string) error {
	if a == nil || a.IsNull(i) {
		return fmt.Errorf("null label")
	}
	setTask := func(t string) error {
		if d.Task == "" {
			d.Task = t
		} else if d.Task != t {
			return fmt.Errorf("labels change kind from %s to %s", d.Task, t)
		}
		return nil
	}
	if b, ok := encodedBytes(a, i); ok { // a segmentation mask stored as an image
		img, _, err := image.Decode(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("cannot decode mask: %w", err)
		}
		h, w := o.Height, o.Width
		if h <= 0 {
			h, w = img.Bounds().Dy(), img.Bounds().Dx()
		}
		if err := setTask(Segmentation); err != nil {
			return err
		}
		d.YShape = []int{h, w}
		b := img.Bounds()
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				sx, sy := b.Min.X+x*b.Dx()/w, b.Min.Y+y*b.Dy()/h
				d.Y = append(d.Y, int64(maskValue(img.At(sx, sy))))
			}
		}
		return nil
	}
	switch v := a.(type) {
	case *array.String:
		*names = append(*names, v.Value(i))
		return setTask(Classification)
	case *array.LargeString:
		*names = append(*names, v.Value(i))
		return setTask(Classification)
	case array.ListLike:
		vals, shape, err := floats(a, i)
		if err != nil {
			return err
		}
		if len(shape) >= 2 { // a mask as nested lists
			if err := setTask(Segmentation); err != nil {
				return err
			}
			d.YShape = shape
			for _, x := range vals {
				d.Y = append(d.Y, int64(x))
			}
			return nil
		}
		if err := setTask(MultiLabel); err != nil {
			return err
		}
		n := len(d.Classes)
		if n == 0 {
			return fmt.Errorf("multi-label lists need class names (a ClassLabel sequence in the file's metadata, or class_names)")
		}
		row := make([]float32, n)
		for _, x := range vals {
			if int(x) < 0 || int(x) >= n {
				return fmt.Errorf("label %v outside 0..%d", x, n-1)
			}
			row[int(x)] = 1
		}
		d.YF = append(d.YF, row...)
		d.Targets = n
		return nil
	}
	if k, ok := integer(a, i); ok {
		if k < 0 {
			return fmt.Errorf("negative class %d", k)
		}
		d.Y = append(d.Y, k)
		return setTask(Classification)
	}
	if x, ok := float(a, i); ok {
		d.YF = append(d.YF, float32(x))
		return setTask(Regression)
	}
	return fmt.Errorf("unsupported label type %s", a.DataType())
}

// encodedBytes returns an encoded image: the bytes of a struct{bytes,
// path} or a binary value.
func encodedBytes(a arrow.Array, i int) ([]byte, bool) {
	switch v := a.(type) {
	case *array.Struct:
		st := v.DataType().(*arrow.StructType)
		k, ok := st.FieldIdx("bytes")
		if !ok {
			return nil, false
		}
		return encodedBytes(v.Field(k), i)
	case *array.Binary:
		return v.Value(i), true
	case *array.LargeBinary:
		return v.Value(i), true
	}
	return nil, false
}

// floats flattens a (nested) list of numbers, returning its shape.
func floats(a arrow.Array, i int) ([]float32, []int, error) {
	l, ok := a.(array.ListLike)
	if !ok {
		if x, ok := float(a, i); ok {
			return []float32{float32(x)}, nil, nil
		}
		return nil, nil, fmt.Errorf("unsupported column type %s", a.DataType())
	}
	start, end := l.ValueOffsets(i)
	inner := l.ListValues()
	var out []float32
	var shape []int
	for j := int(start); j < int(end); j++ {
		v, s, err := floats(inner, j)
		if err != nil {
			return nil, nil, err
		}
		if j == int(start) {
			shape = s
		} else if !slices.Equal(s, shape) {
			return nil, nil, fmt.Errorf("ragged nested list: %v then %v", shape, s)
		}
		out = append(out, v...)
	}
	return out, append([]int{int(end - start)}, shape...), nil
}

func integer(a arrow.Array, i int) (int64, bool) {
	switch v := a.(type) {
	case *array.Int64:
		return v.Value(i), true
	case *array.Int32:
		return int64(v.Value(i)), true
	case *array.Int16:
		return int64(v.Value(i)), true
	case *array.Int8:
		return int64(v.Value(i)), true
	case *array.Uint8:
		return int64(v.Value(i)), true
	case *array.Uint16:
		return int64(v.Value(i)), true
	case *array.Uint32:
		return int64(v.Value(i)), true
	case *array.Uint64:
		return int64(v.Value(i)), true
	}
	return 0, false
}

func float(a arrow.Array, i int) (float64, bool) {
	switch v := a.(type) {
	case *array.Float32:
		return float64(v.Value(i)), true
	case *array.Float64:
		return v.Value(i), true
	}
	if k, ok := integer(a, i); ok {
		return float64(k), true
	}
	return 0, false
}

func resize(img image.Image, w, h int, s draw.Scaler) *image.RGBA {
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	s.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	return dst
}

// maskValue is a mask pixel's class: the palette index or grey level.
func maskValue(c color.Color) int {
	switch v := c.(type) {
	case color.Gray:
		return int(v.Y)
	case color.Gray16:
		return int(v.Y)
	}
	r, _, _, _ := c.RGBA()
	return int(r >> 8)
}
