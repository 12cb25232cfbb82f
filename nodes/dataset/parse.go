package dataset

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/formats/cifar"
	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/hfparquet"
	"github.com/gatepipe/gatepipe/formats/idx"
	"github.com/gatepipe/gatepipe/formats/imagefolder"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/formats/tabular"
	"golang.org/x/image/draw"
	"image"
)

// examples is parsed data before splitting.
type examples struct {
	dtype    safetensors.DType // U8 or F32
	shape    []int             // one example
	u8       []byte
	f32      []float32
	y        []int64   // classification (one per example) or segmentation
	yShape   []int     // shape of one example's labels (segmentation: [H, W]; nil: one label)
	yf       []float32 // regression or multi-label targets
	targets  int       // yf values per example (0 means 1, a [N] tensor)
	classes  []string
	features []string
	// q holds qLen question tokens per example (relational); vocab names them.
	q     []int64
	qLen  int
	vocab []string
	// task is the task the data itself shows (parquet label columns); ""
	// when the block's task applies.
	task string
	// group, above 1, makes consecutive runs of group examples one item
	// of the source: splits and caps keep them together.
	group int
	// lazy, when set, holds the images instead of u8: they are decoded
	// when a split takes them.
	lazy pixelSource
	// lazyY, when set, holds the labels instead of y (count examples):
	// they are read when a split takes them.
	lazyY labelSource
	count int
}

// labelSource reads the labels of the examples at idx (ascending), each
// labelsPerExample long.
type labelSource interface {
	labels(idx []int) ([]int64, error)
}

// pixelSource decodes the images of the examples at idx (ascending), as
// [len(idx), C, H, W] bytes.
type pixelSource interface {
	decode(idx []int) ([]byte, error)
}

// pixelSourceInto is a pixelSource that can decode into a caller's
// buffer, so that a split's writer reuses a few chunk buffers instead of
// allocating (and faulting in) one per chunk.
type pixelSourceInto interface {
	decodeInto(dst []byte, idx []int) ([]byte, error)
}

// pickedPixels are the examples idx of another lazy source (the kept
// classes' examples), decoded when a split takes them.
type pickedPixels struct {
	src pixelSource
	idx []int
}

func (p *pickedPixels) decode(idx []int) ([]byte, error) { return p.decodeInto(nil, idx) }

func (p *pickedPixels) decodeInto(dst []byte, idx []int) ([]byte, error) {
	from := make([]int, len(idx))
	for k, i := range idx {
		from[k] = p.idx[i]
	}
	return decodeInto(p.src, dst, from)
}

func (p *pickedPixels) order(idx []int) []int {
	o, ok := p.src.(writeOrderer)
	if !ok {
		return nil
	}
	from := make([]int, len(idx))
	for k, i := range idx {
		from[k] = p.idx[i]
	}
	return o.order(from)
}

// decodeInto decodes the examples idx of src into dst's storage when src
// can, else into a new slice.
func decodeInto(src pixelSource, dst []byte, idx []int) ([]byte, error) {
	if s, ok := src.(pixelSourceInto); ok {
		return s.decodeInto(dst, idx)
	}
	return src.decode(idx)
}

func (e *examples) exampleSize() int {
	n := 1
	for _, d := range e.shape {
		n *= d
	}
	return n
}

func (e *examples) len() int {
	if e.lazyY != nil {
		return e.count
	}
	if e.yf != nil {
		return len(e.yf) / max(e.targets, 1)
	}
	return len(e.y) / e.labelsPerExample()
}

func (e *examples) labelsPerExample() int {
	n := 1
	for _, d := range e.yShape {
		n *= d
	}
	return n
}

// keepClasses returns the examples of the named classes only, relabelled
// 0.. in the order names lists them.
func (e *examples) keepClasses(names []string) (*examples, error) {
	if e.yf != nil && e.targets > 0 && len(e.classes) == e.targets {
		return e.keepLabels(names)
	}
	if e.y == nil || e.labelsPerExample() != 1 {
		return nil, fmt.Errorf("only classification and multi-label data have classes to keep")
	}
	relabel := map[int64]int64{}
	for k, name := range names {
		old := slices.Index(e.classes, name)
		if old < 0 {
			return nil, fmt.Errorf("no class %q; the classes are %s", name, strings.Join(e.classes, ", "))
		}
		relabel[int64(old)] = int64(k)
	}
	var idx []int
	for i, y := range e.y {
		if _, ok := relabel[y]; ok {
			idx = append(idx, i)
		}
	}
	if e.lazy != nil {
		// Nothing is decoded: the kept examples are picked from the source.
		out := *e
		out.lazy = &pickedPixels{src: e.lazy, idx: idx}
		out.classes = slices.Clone(names)
		out.y = make([]int64, len(idx))
		for k, i := range idx {
			out.y[k] = relabel[e.y[i]]
		}
		if e.q != nil {
			out.q = gather(e.q, idx, e.qLen)
		}
		return &out, nil
	}
	s, err := e.subset(idx)
	if err != nil {
		return nil, err
	}
	out := *e
	out.lazy = nil
	out.classes = slices.Clone(names)
	out.y = make([]int64, len(idx))
	for k, y := range s.Y.Int64s() {
		out.y[k] = relabel[y]
	}
	if e.dtype == safetensors.U8 {
		out.u8 = s.X.Data
	} else {
		out.f32 = s.X.Float32s()
	}
	if e.q != nil {
		out.q = s.Q.Int64s()
	}
	return &out, nil
}

// subset gathers the examples at idx (indices into e) into a split.
// keepLabels is keepClasses for multi-label data: the named labels' columns
// in the listed order, and only the examples with at least one of them
// (GATE's "chexpert" keeps five NIH findings so:
// gate/data/medical/classification/chexpert.py).
func (e *examples) keepLabels(names []string) (*examples, error) {
	cols := make([]int, len(names))
	for k, name := range names {
		if cols[k] = slices.Index(e.classes, name); cols[k] < 0 {
			return nil, fmt.Errorf("no label %q; the labels are %s", name, strings.Join(e.classes, ", "))
		}
	}
	w := e.targets
	var idx []int
	var yf []float32
	for i := range len(e.yf) / w {
		row := e.yf[i*w : (i+1)*w]
		kept := make([]float32, len(cols))
		anyLabel := false
		for k, c := range cols {
			kept[k] = row[c]
			anyLabel = anyLabel || row[c] > 0
		}
		if anyLabel {
			idx = append(idx, i)
			yf = append(yf, kept...)
		}
	}
	out := *e
	out.classes, out.targets, out.yf = slices.Clone(names), len(names), yf
	if e.q != nil {
		out.q = gather(e.q, idx, e.qLen)
	}
	if e.lazy != nil {
		out.lazy = &pickedPixels{src: e.lazy, idx: idx}
		return &out, nil
	}
	s, err := e.subset(idx)
	if err != nil {
		return nil, err
	}
	out.lazy = nil
	if e.dtype == safetensors.U8 {
		out.u8 = s.X.Data
	} else {
		out.f32 = s.X.Float32s()
	}
	return &out, nil
}

func (e *examples) subset(idx []int) (*examplestore.Split, error) {
	size := e.exampleSize()
	s := &examplestore.Split{Index: make([]int64, len(idx))}
	shape := append([]int{len(idx)}, e.shape...)
	if e.lazy != nil {
		data, err := e.lazy.decode(idx)
		if err != nil {
			return nil, err
		}
		s.X = safetensors.Tensor{DType: safetensors.U8, Shape: shape, Data: data}
	} else if e.dtype == safetensors.U8 {
		data := make([]byte, 0, len(idx)*size)
		for _, i := range idx {
			data = append(data, e.u8[i*size:(i+1)*size]...)
		}
		s.X = safetensors.Tensor{DType: safetensors.U8, Shape: shape, Data: data}
	} else {
		data := make([]float32, 0, len(idx)*size)
		for _, i := range idx {
			data = append(data, e.f32[i*size:(i+1)*size]...)
		}
		s.X = safetensors.F32Tensor("x", shape, data)
	}
	if e.yf != nil {
		w := max(e.targets, 1)
		ys := make([]float32, 0, len(idx)*w)
		for _, i := range idx {
			ys = append(ys, e.yf[i*w:(i+1)*w]...)
		}
		shape := []int{len(idx)}
		if e.targets > 0 {
			shape = append(shape, w)
		}
		s.Y = safetensors.F32Tensor("y", shape, ys)
	} else if e.lazyY != nil {
		ys, err := e.lazyY.labels(idx)
		if err != nil {
			return nil, err
		}
		s.Y = safetensors.I64Tensor("y", append([]int{len(idx)}, e.yShape...), ys)
	} else {
		w := e.labelsPerExample()
		ys := make([]int64, 0, len(idx)*w)
		for _, i := range idx {
			ys = append(ys, e.y[i*w:(i+1)*w]...)
		}
		s.Y = safetensors.I64Tensor("y", append([]int{len(idx)}, e.yShape...), ys)
	}
	for k, i := range idx {
		s.Index[k] = int64(i)
	}
	if e.q != nil {
		qs := make([]int64, 0, len(idx)*e.qLen)
		for _, i := range idx {
			qs = append(qs, e.q[i*e.qLen:(i+1)*e.qLen]...)
		}
		s.Q = safetensors.I64Tensor("q", []int{len(idx), e.qLen}, qs)
	}
	return s, nil
}

// parse reads the files named by patterns in the format of the block.
// train, when set, is the training data whose classes (and question
// vocabulary) later splits use.
func (n *Node) parse(ctx context.Context, tree *rawTree, patterns []string, train *examples) (*examples, error) {
	var classes, vocab []string
	if train != nil {
		classes, vocab = train.classes, train.vocab
	}
	rawDir := tree.dir
	var paths []string
	var err error
	if n.cfg.Format == "image_folder" {
		paths, err = resolveNames(tree, patterns)
	} else {
		paths, err = resolveFiles(rawDir, patterns)
	}
	if err != nil {
		return nil, err
	}
	var ex *examples
	switch n.cfg.Format {
	case "idx":
		ex, err = parseIDX(paths)
	case "cifar10", "cifar100":
		ex, err = n.parseCIFAR(rawDir, paths)
	case "csv", "tsv":
		ex, err = n.parseTable(paths, classes)
	case "image_folder":
		ex, err = n.parseImageFolder(ctx, tree, paths, classes)
	case "parquet":
		ex, err = n.parseParquet(paths, classes, vocab)
	default:
		err = fmt.Errorf("format %q cannot be parsed", n.cfg.Format)
	}
	if err != nil {
		return nil, err
	}
	if len(n.cfg.ImageSize) == 2 && n.cfg.Format != "image_folder" && n.cfg.Format != "parquet" && ex.dtype == safetensors.U8 && len(ex.shape) == 3 {
		ex = resize(ex, n.cfg.ImageSize[0], n.cfg.ImageSize[1])
	}
	if classes != nil && n.task == "classification" && len(ex.classes) > len(classes) {
		return nil, fmt.Errorf("has %d classes, training data has %d", len(ex.classes), len(classes))
	}
	return ex, nil
}

// parquetPixels decodes chosen rows of Parquet shards (a second pass).
type parquetPixels struct {
	paths []string
	o     hfparquet.Options
}

func (p *parquetPixels) decode(idx []int) ([]byte, error) {
	o := p.o
	o.Rows = idx
	if len(idx) == 0 {
		return []byte{}, nil
	}
	d, err := hfparquet.Read(context.Background(), p.paths, o)
	if err != nil {
		return nil, err
	}
	return d.U8, nil
}

func parseIDX(paths []string) (*examples, error) {
	if len(paths) != 2 {
		return nil, fmt.Errorf("idx needs exactly two files, images then labels; got %d", len(paths))
	}
	read := func(p string) (*idx.Array, error) {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return idx.Read(f, filepath.Base(p))
	}
	images, err := read(paths[0])
	if err != nil {
		return nil, err
	}
	labels, err := read(paths[1])
	if err != nil {
		return nil, err
	}
	if len(labels.Dims) != 1 {
		return nil, fmt.Errorf("%s: labels must be one-dimensional, got dims %v", filepath.Base(paths[1]), labels.Dims)
	}
	if images.Len() != labels.Len() {
		return nil, fmt.Errorf("%s has %d images but %s has %d labels", filepath.Base(paths[0]), images.Len(), filepath.Base(paths[1]), labels.Len())
	}
	ex := &examples{dtype: safetensors.U8}
	switch len(images.Dims) {
	case 3:
		ex.shape = []int{1, images.Dims[1], images.Dims[2]}
	case 2:
		ex.shape = []int{images.Dims[1]}
	default:
		ex.shape = append([]int{}, images.Dims[1:]...)
	}
	if images.Type == 0x08 {
		ex.u8 = images.Bytes
	} else {
		ex.dtype = safetensors.F32
		ex.f32 = make([]float32, images.Len()*images.ItemSize())
		for i := range ex.f32 {
			ex.f32[i] = float32(images.Float64(i))
		}
	}
	maxLabel := int64(0)
	ex.y = make([]int64, labels.Len())
	for i := range ex.y {
		v := labels.Float64(i)
		if v < 0 || v != float64(int64(v)) {
			return nil, fmt.Errorf("%s: label %d is %g, not a class index", filepath.Base(paths[1]), i, v)
		}
		ex.y[i] = int64(v)
		maxLabel = max(maxLabel, ex.y[i])
	}
	ex.classes = numericClasses(int(maxLabel) + 1)
	return ex, nil
}

func numericClasses(n int) []string {
	c := make([]string, n)
	for i := range c {
		c[i] = strconv.Itoa(i)
	}
	return c
}

func (n *Node) parseCIFAR(rawDir string, paths []string) (*examples, error) {
	variant := cifar.CIFAR10
	if n.cfg.Format == "cifar100" {
		variant = cifar.CIFAR100
	}
	coarse := n.cfg.CifarLabel != nil && *n.cfg.CifarLabel == "coarse"
	ex := &examples{dtype: safetensors.U8, shape: []int{3, 32, 32}}
	pickled := false
	for _, p := range paths {
		b, isPickle, err := readCIFARBatch(p, variant)
		if err != nil {
			return nil, err
		}
		pickled = pickled || isPickle
		ex.u8 = append(ex.u8, b.Images...)
		if coarse {
			ex.y = append(ex.y, b.Coarse...)
		} else {
			ex.y = append(ex.y, b.Labels...)
		}
	}
	count := 10
	metaName, metaKey, pickleMeta := "batches.meta.txt", "label_names", "batches.meta"
	switch {
	case variant == cifar.CIFAR100 && coarse:
		count, metaName, metaKey, pickleMeta = 20, "coarse_label_names.txt", "coarse_label_names", "meta"
	case variant == cifar.CIFAR100:
		count, metaName, metaKey, pickleMeta = 100, "fine_label_names.txt", "fine_label_names", "meta"
	}
	ex.classes = numericClasses(count)
	// Class names ship beside the batches; use them when present.
	dir := filepath.Dir(paths[0])
	names := findLabelNames(dir, metaName, count)
	if pickled {
		names = findPickledNames(filepath.Join(dir, pickleMeta), metaKey, count)
	}
	if names != nil {
		ex.classes = names
	}
	return ex, nil
}

// readCIFARBatch reads one batch file of either version: the Python one
// (a pickle, as torchvision downloads it) or the binary one.
func readCIFARBatch(p string, variant cifar.Variant) (*cifar.Batch, bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, false, err
	}
	if cifar.IsPickle(head[:n]) {
		b, err := cifar.ReadPickle(f, variant, filepath.Base(p))
		return b, true, err
	}
	b, err := cifar.Read(f, variant, filepath.Base(p))
	return b, false, err
}

// findPickledNames reads the class names of the Python version's meta
// file; nil when it is missing or does not list count names.
func findPickledNames(p, key string, count int) []string {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, err := cifar.ReadPickleNames(f, key, filepath.Base(p))
	if err != nil || len(names) != count {
		return nil
	}
	return names
}

func findLabelNames(dir, name string, count int) []string {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil
	}
	var names []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	if len(names) != count {
		return nil
	}
	return names
}

func (n *Node) parseTable(paths []string, classes []string) (*examples, error) {
	delim := ','
	if n.cfg.Format == "tsv" {
		delim = '\t'
	}
	var all *tabular.Table
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		t, err := tabular.Read(f, delim, *n.cfg.LabelColumn, filepath.Base(p))
		f.Close()
		if err != nil {
			return nil, err
		}
		if n.task == "regression" {
			// Every target checked here, where its file and line are known.
			for i := range t.Rows() {
				if _, err := t.Target(i, filepath.Base(p)); err != nil {
					return nil, err
				}
			}
		}
		if all == nil {
			all = t
			continue
		}
		if strings.Join(t.Features, ",") != strings.Join(all.Features, ",") {
			return nil, fmt.Errorf("%s has columns %v, earlier files have %v", filepath.Base(p), t.Features, all.Features)
		}
		all.X = append(all.X, t.X...)
		all.Labels = append(all.Labels, t.Labels...)
		all.Lines = append(all.Lines, t.Lines...)
	}
	ex := &examples{dtype: safetensors.F32, shape: []int{len(all.Features)}, f32: all.X, features: all.Features}
	if n.task == "regression" {
		ex.yf = make([]float32, len(all.Labels))
		for i, l := range all.Labels {
			v, err := strconv.ParseFloat(l, 32)
			if err != nil {
				return nil, fmt.Errorf("row %d: regression target %q is not a number (internal error: checked when read)", i+1, l)
			}
			ex.yf[i] = float32(v)
		}
		return ex, nil
	}
	if classes == nil {
		ex.classes, ex.y = tabular.ClassIndex(all.Labels)
		return ex, nil
	}
	index := map[string]int64{}
	for i, c := range classes {
		index[c] = int64(i)
	}
	ex.classes = classes
	ex.y = make([]int64, len(all.Labels))
	for i, l := range all.Labels {
		c, ok := index[l]
		if !ok {
			return nil, fmt.Errorf("row %d: label %q does not occur in the training data", i+1, l)
		}
		ex.y[i] = c
	}
	return ex, nil
}

// parseImageFolder lists the image folders at names in tree.
func (n *Node) parseImageFolder(ctx context.Context, tree *rawTree, names []string, classes []string) (*examples, error) {
	channels := 3
	if n.cfg.Channels != nil {
		channels = *n.cfg.Channels
	}
	h, w := n.cfg.ImageSize[0], n.cfg.ImageSize[1]
	// The folders are listed now; the images are decoded when a split
	// takes them, a batch at a time.
	lazy := &lazyImages{ctx: ctx, fsys: tree, channels: channels, h: h, w: w, maxPixels: n.media.maxPixels}
	ex := &examples{dtype: safetensors.U8, shape: []int{channels, h, w}, lazy: lazy}
	for _, p := range names {
		l, err := imagefolder.List(tree, p, classes)
		if err != nil {
			return nil, err
		}
		classes = l.Classes
		for _, f := range l.Files {
			lazy.paths = append(lazy.paths, path.Join(p, f))
		}
		ex.y = append(ex.y, l.Labels...)
	}
	ex.classes = classes
	return ex, nil
}

// resize scales every [C, H, W] uint8 image to h x w with bilinear
// interpolation.
func resize(ex *examples, h, w int) *examples {
	c, sh, sw := ex.shape[0], ex.shape[1], ex.shape[2]
	if sh == h && sw == w {
		return ex
	}
	out := *ex
	out.shape = []int{c, h, w}
	out.u8 = make([]byte, 0, ex.len()*c*h*w)
	src := image.NewGray(image.Rect(0, 0, sw, sh))
	dst := image.NewGray(image.Rect(0, 0, w, h))
	for i := 0; i < ex.len(); i++ {
		for ch := 0; ch < c; ch++ {
			off := (i*c + ch) * sh * sw
			copy(src.Pix, ex.u8[off:off+sh*sw])
			draw.BiLinear.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
			out.u8 = append(out.u8, dst.Pix...)
		}
	}
	return &out
}
