package hfparquet

// Reading one cell of a row: the input (an encoded image or a nested
// float list), the target (class, multi-label list, mask or value) and
// text.

import (
	"fmt"
	"image"
	"image/color"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/gatepipe/gatepipe/formats/imagedec"
)

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
	if err := nullImageBytes(a, i); err != nil {
		return err
	}
	if b, ok := encodedBytes(a, i); ok {
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
		if d.dec == nil {
			d.dec = imagedec.New()
			d.dec.MaxPixels = o.MaxPixels
		}
		if d.U8 == nil && len(o.Rows) > 0 {
			// A batch of known rows: its pixels are allocated once.
			d.U8 = make([]byte, 0, len(o.Rows)*ch*o.Height*o.Width)
		}
		var err error
		if d.U8, err = d.dec.AppendCHW(d.U8, b, ch, o.Height, o.Width); err != nil {
			return fmt.Errorf("cannot decode image: %w", err)
		}
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
	if b, ok := encodedBytes(a, i); ok { // a segmentation mask stored as an image
		return appendMaskImage(d, b, o)
	}
	switch v := a.(type) {
	case *array.String:
		*names = append(*names, v.Value(i))
		return d.setTask(Classification)
	case *array.LargeString:
		*names = append(*names, v.Value(i))
		return d.setTask(Classification)
	case array.ListLike:
		return appendListTarget(d, a, i)
	}
	if k, ok := integer(a, i); ok {
		if k < 0 {
			return fmt.Errorf("negative class %d", k)
		}
		d.Y = append(d.Y, k)
		return d.setTask(Classification)
	}
	if x, ok := float(a, i); ok {
		d.YF = append(d.YF, float32(x))
		return d.setTask(Regression)
	}
	return fmt.Errorf("unsupported label type %s", a.DataType())
}

// setTask sets the data's task from its first label; a later label of
// another kind is an error.
func (d *Data) setTask(t string) error {
	if d.Task == "" {
		d.Task = t
	} else if d.Task != t {
		return fmt.Errorf("labels change kind from %s to %s", d.Task, t)
	}
	return nil
}

// appendMaskImage appends a segmentation mask stored as an encoded
// image, sampled to o's size where it has one; under MaskSummary it only
// counts the mask and its largest value.
func appendMaskImage(d *Data, encoded []byte, o Options) error {
	img, err := imagedec.DecodeLimited(encoded, o.MaxPixels)
	if err != nil {
		return fmt.Errorf("cannot decode mask: %w", err)
	}
	h, w := o.Height, o.Width
	if h <= 0 {
		h, w = img.Bounds().Dy(), img.Bounds().Dx()
	}
	if err := d.setTask(Segmentation); err != nil {
		return err
	}
	d.YShape = []int{h, w}
	if o.LabelsOnly && o.MaskSummary {
		d.maskScratch = appendMaskValues(d.maskScratch[:0], img, h, w) // one mask's buffer, reused
		for _, v := range d.maskScratch {
			d.MaskMax = max(d.MaskMax, int(v))
		}
		return nil
	}
	d.Y = appendMaskValues(d.Y, img, h, w)
	return nil
}

// appendMaskValues appends the classes of img's pixels sampled at h x w
// (nearest neighbour, from the top-left of each cell) to y.
func appendMaskValues(y []int64, img image.Image, h, w int) []int64 {
	b := img.Bounds()
	y = slices.Grow(y, h*w)
	for r := 0; r < h; r++ {
		sy := b.Min.Y + r*b.Dy()/h
		switch m := img.(type) {
		case *image.Gray:
			row := m.Pix[(sy-b.Min.Y)*m.Stride:]
			for c := 0; c < w; c++ {
				y = append(y, int64(row[c*b.Dx()/w]))
			}
		case *image.Paletted:
			row := m.Pix[(sy-b.Min.Y)*m.Stride:]
			for c := 0; c < w; c++ {
				y = append(y, int64(row[c*b.Dx()/w]))
			}
		default:
			for c := 0; c < w; c++ {
				y = append(y, int64(maskValue(img.At(b.Min.X+c*b.Dx()/w, sy))))
			}
		}
	}
	return y
}

// appendListTarget appends a list label: a mask as nested lists, or a
// multi-label example's class indices (as a row of 0/1 targets).
func appendListTarget(d *Data, a arrow.Array, i int) error {
	vals, shape, err := floats(a, i)
	if err != nil {
		return err
	}
	if len(shape) >= 2 { // a mask as nested lists
		if err := d.setTask(Segmentation); err != nil {
			return err
		}
		d.YShape = shape
		for _, x := range vals {
			d.Y = append(d.Y, int64(x))
		}
		return nil
	}
	if err := d.setTask(MultiLabel); err != nil {
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

// nullImageBytes explains an image struct whose bytes are null: the
// datasets library stores only the path of an image it did not embed (a
// dataset built from local files and saved without embedding them), and
// that path is on the machine that built it.
func nullImageBytes(a arrow.Array, i int) error {
	v, ok := a.(*array.Struct)
	if !ok {
		return nil
	}
	st := v.DataType().(*arrow.StructType)
	k, ok := st.FieldIdx("bytes")
	if !ok || !v.Field(k).IsNull(i) {
		return nil
	}
	where := ""
	if p, ok := st.FieldIdx("path"); ok {
		if s, ok := text(v.Field(p), i); ok {
			where = fmt.Sprintf(" (only its path, %q)", s)
		}
	}
	return fmt.Errorf("the image's bytes are null%s: the file references an image it does not hold; save the dataset with its images embedded (datasets' embed_external_files, as push_to_hub does)", where)
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
