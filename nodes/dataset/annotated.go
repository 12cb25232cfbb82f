package dataset

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/gatepipe/gatepipe/formats/imagecsv"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/formats/tabular"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// Formats whose examples are images named by an annotation table:
// image_csv (a label per image: Kaggle's medical sets, ChestX-ray14) and
// captions_csv (captions per image: Flickr30k).
const (
	defaultTextTokens = 32
	defaultVocabulary = 10000
)

func annotated(format string) bool {
	return format == "image_csv" || format == "captions_csv" || format == "image_list" || format == "vqa_json" || format == "camera_traps" || format == "gulp" || format == "voc_mat" || format == "hdf5" || format == "video_list"
}

// decodeAnnotated checks the attributes of an image_csv or captions_csv
// dataset.
func (n *Node) decodeAnnotated(decl nodes.Decl) hcl.Diagnostics {
	cfg := n.cfg
	var diags hcl.Diagnostics
	if cfg.Format == "image_list" || cfg.Format == "vqa_json" {
		return n.decodeImageList(decl)
	}
	if cfg.Format == "camera_traps" {
		return n.decodeCameraTraps(decl)
	}
	if cfg.Format == "gulp" {
		return n.decodeGulp(decl)
	}
	if cfg.Format == "voc_mat" {
		return n.decodeVOCMat(decl)
	}
	if cfg.Format == "hdf5" {
		return n.decodeHDF5(decl)
	}
	if cfg.Format == "video_list" {
		return n.decodeVideoList(decl)
	}
	if len(cfg.Annotations) == 0 {
		diags = append(diags, decl.Errorf("format", "Missing annotations", "Format %q needs annotations = [\"labels.csv\"]: the CSV file(s) inside the fetched sources that name each image.", cfg.Format))
	}
	if cfg.ImageColumn == nil {
		diags = append(diags, decl.Errorf("format", "Missing image column", "Format %q needs image_column, the annotation column naming each image (a path, file name or file name without extension).", cfg.Format))
	}
	if cfg.Format == "image_csv" {
		if cfg.LabelColumn == nil {
			diags = append(diags, decl.Errorf("format", "Missing label column", "Format \"image_csv\" needs label_column, the annotation column holding each image's label(s)."))
		}
		for _, a := range []struct {
			name string
			set  bool
		}{{"caption_column", cfg.CaptionColumn != nil}, {"max_tokens", cfg.MaxTokens != nil}, {"max_vocabulary", cfg.MaxVocabulary != nil}} {
			if a.set {
				diags = append(diags, decl.Errorf(a.name, "Invalid "+a.name, "%s belongs to captions_csv datasets; this one is image_csv.", a.name))
			}
		}
		if cfg.LabelSeparator != nil && (cfg.Task == nil || *cfg.Task != "multilabel") {
			diags = append(diags, decl.Errorf("label_separator", "Invalid label_separator", "label_separator splits several labels per image, which needs task = \"multilabel\"."))
		}
	} else {
		if cfg.Task == nil {
			n.task = "retrieval"
		}
		if cfg.CaptionColumn == nil {
			diags = append(diags, decl.Errorf("format", "Missing caption column", "Format \"captions_csv\" needs caption_column, the annotation column holding each image's captions (a JSON list or one caption)."))
		}
		if cfg.LabelColumn != nil || cfg.LabelSeparator != nil || len(cfg.KeepClasses) > 0 {
			diags = append(diags, decl.Errorf("label_column", "Labels in a captions dataset", "A captions_csv dataset pairs images with captions; it has no labels or classes."))
		}
		for _, a := range []struct {
			name string
			v    *int
		}{{"max_tokens", cfg.MaxTokens}, {"max_vocabulary", cfg.MaxVocabulary}} {
			if a.v != nil && *a.v < 1 {
				diags = append(diags, decl.Errorf(a.name, "Invalid "+a.name, "%s must be at least 1.", a.name))
			}
		}
	}
	if cfg.SplitColumn != nil && (len(cfg.Train)+len(cfg.Val)+len(cfg.Test) > 0) {
		diags = append(diags, decl.Errorf("split_column", "Conflicting splits", "Use either split_column or train/val/test image lists, not both."))
	}
	return diags
}

// lazyImages are examples whose pixels are decoded only when a split takes
// them, so that max_train and friends bound the work and the memory.
type lazyImages struct {
	ctx context.Context
	// fsys holds paths (names in it); nil: paths are on disk.
	fsys     fs.FS
	paths    []string
	channels int
	h, w     int
	// maxPixels bounds what an image may declare (max_image_pixels).
	maxPixels int64
}

func (l *lazyImages) decode(idx []int) ([]byte, error) { return l.decodeInto(nil, idx) }

// decodeInto is decode into dst's storage when it is large enough.
func (l *lazyImages) decodeInto(dst []byte, idx []int) ([]byte, error) {
	paths := make([]string, len(idx))
	for k, i := range idx {
		paths[k] = l.paths[i]
	}
	// The split writer reports progress, batch by batch.
	return imagecsv.DecodeInto(l.ctx, dst, l.fsys, paths, l.channels, l.h, l.w, l.maxPixels, nil)
}

// annotatedRows is the annotation table with its rows assigned to splits.
type annotatedRows struct {
	table    *imagecsv.Table
	image    int // column indices
	value    int
	question int // vqa_json: the question column
	// splits holds row indices per split ("train", "val", "test").
	splits map[string][]int
	index  *imagecsv.Index
	// fsys, when set, holds the index's images (archives read in place).
	fsys fs.FS
}

// parseAnnotated reads an image_csv or captions_csv dataset: the rows of
// the annotation table go to the splits that split_column or the train,
// val and test image lists name (all to train when neither is set), and
// every split uses the training rows' classes or vocabulary.
func (n *Node) parseAnnotated(ctx context.Context, env *nodes.Env, tree *rawTree) (train, val, test *examples, err error) {
	rawDir := tree.dir
	switch n.cfg.Format {
	case "camera_traps":
		return n.parseCameraTraps(ctx, env, tree)
	case "gulp":
		return n.parseGulp(ctx, env, rawDir)
	case "voc_mat":
		train, err := n.parseVOCMat(ctx, env, rawDir)
		return train, nil, nil, err
	case "hdf5":
		return n.parseHDF5(ctx, env, rawDir)
	case "video_list":
		return n.parseVideoList(ctx, env, tree)
	}
	rows, err := n.readAnnotations(tree)
	if err != nil {
		return nil, nil, nil, err
	}
	var vocab, classes []string
	build := func(split string) (*examples, error) {
		idx := rows.splits[split]
		if len(idx) == 0 {
			return nil, nil
		}
		channels := 3
		if n.cfg.Channels != nil {
			channels = *n.cfg.Channels
		}
		h, w := n.cfg.ImageSize[0], n.cfg.ImageSize[1]
		lazy := &lazyImages{ctx: ctx, fsys: rows.fsys, channels: channels, h: h, w: w, maxPixels: n.media.maxPixels}
		ex := &examples{dtype: safetensors.U8, shape: []int{channels, h, w}, lazy: lazy}
		values := make([]string, len(idx))
		for k, r := range idx {
			row := rows.table.Rows[r]
			p, err := rows.index.Find(row[rows.image])
			if err != nil {
				return nil, fmt.Errorf("%s row %d: %w", rows.table.Name, r+2, err)
			}
			lazy.paths = append(lazy.paths, p)
			values[k] = row[rows.value]
		}
		switch n.cfg.Format {
		case "captions_csv":
			return ex, n.captionTokens(ex, values, &vocab, rows.table.Name, idx)
		case "vqa_json":
			// Visual question answering: the answers are the classes,
			// the questions word tokens (the relational head).
			questions := make([]string, len(idx))
			for k, r := range idx {
				questions[k] = rows.table.Rows[r][rows.question]
			}
			if err := n.labels(ex, values, &classes, rows.table.Name, idx); err != nil {
				return nil, err
			}
			ex.task = "relational"
			n.tokenize(ex, questions, vocab)
			vocab = ex.vocab
			return ex, nil
		}
		return ex, n.labels(ex, values, &classes, rows.table.Name, idx)
	}
	if train, err = build("train"); err != nil {
		return nil, nil, nil, fmt.Errorf("train data: %w", err)
	}
	if train == nil {
		return nil, nil, nil, fmt.Errorf("no annotation row is in the training split")
	}
	if val, err = build("val"); err != nil {
		return nil, nil, nil, fmt.Errorf("validation data: %w", err)
	}
	if test, err = build("test"); err != nil {
		return nil, nil, nil, fmt.Errorf("test data: %w", err)
	}
	return train, val, test, nil
}

// readAnnotations reads the tables, indexes the images and assigns rows
// to splits.
func (n *Node) readAnnotations(tree *rawTree) (*annotatedRows, error) {
	if err := tree.materialize(slices.Concat(n.cfg.Annotations, n.cfg.Train, n.cfg.Val, n.cfg.Test)); err != nil {
		return nil, err
	}
	rawDir := tree.dir
	switch n.cfg.Format {
	case "image_list":
		return n.readImageLists(tree)
	case "vqa_json":
		return n.readQuestions(tree)
	}
	paths, err := resolveFiles(rawDir, n.cfg.Annotations)
	if err != nil {
		return nil, fmt.Errorf("annotations: %w", err)
	}
	var t *imagecsv.Table
	for _, p := range paths {
		next, err := imagecsv.ReadTable(p)
		if err != nil {
			return nil, err
		}
		if t == nil {
			t = next
			continue
		}
		if !slices.Equal(t.Header, next.Header) {
			return nil, fmt.Errorf("%s has columns %q, %s has %q", next.Name, next.Header, t.Name, t.Header)
		}
		t.Rows = append(t.Rows, next.Rows...)
	}
	rows := &annotatedRows{table: t, splits: map[string][]int{}}
	if rows.image, err = t.Column(*n.cfg.ImageColumn); err != nil {
		return nil, err
	}
	valueColumn := n.cfg.LabelColumn
	if n.cfg.Format == "captions_csv" {
		valueColumn = n.cfg.CaptionColumn
	}
	if rows.value, err = t.Column(*valueColumn); err != nil {
		return nil, err
	}
	if rows.index, rows.fsys, err = n.imageIndexIn(tree); err != nil {
		return nil, err
	}
	return rows, n.assignSplits(rawDir, rows)
}

// imageIndexIn indexes the images of tree under the images directories:
// on disk, or, where tarballs are read in place, in the tree, whose names
// the index then holds (fsys).
func (n *Node) imageIndexIn(tree *rawTree) (*imagecsv.Index, fs.FS, error) {
	if len(tree.archives) == 0 {
		ix, err := n.imageIndex(tree.dir)
		return ix, nil, err
	}
	dirs := []string{"."}
	if len(n.cfg.Images) > 0 {
		var err error
		if dirs, err = resolveNames(tree, n.cfg.Images); err != nil {
			return nil, nil, fmt.Errorf("images: %w", err)
		}
		for _, d := range dirs {
			if info, err := fs.Stat(tree, d); err != nil || !info.IsDir() {
				return nil, nil, fmt.Errorf("images: %s is not a directory", d)
			}
		}
	}
	ix, err := imagecsv.NewIndexFS(tree, dirs)
	return ix, tree, err
}

// imageIndex indexes the image files under the images directories
// (default: every extracted source).
func (n *Node) imageIndex(rawDir string) (*imagecsv.Index, error) {
	dirs := []string{rawDir}
	if len(n.cfg.Images) > 0 {
		var err error
		if dirs, err = resolveFiles(rawDir, n.cfg.Images); err != nil {
			return nil, fmt.Errorf("images: %w", err)
		}
		for _, d := range dirs {
			if !isDir(d) {
				return nil, fmt.Errorf("images: %s is not a directory", d)
			}
		}
	}
	return imagecsv.NewIndex(dirs)
}

// splitNames maps split_column values to splits.
var splitNames = map[string]string{"train": "train", "val": "val", "valid": "val", "validation": "val", "dev": "val", "test": "test"}

func (n *Node) assignSplits(rawDir string, rows *annotatedRows) error {
	t := rows.table
	if n.cfg.SplitColumn != nil {
		col, err := t.Column(*n.cfg.SplitColumn)
		if err != nil {
			return err
		}
		for r, row := range t.Rows {
			s, ok := splitNames[strings.ToLower(strings.TrimSpace(row[col]))]
			if !ok {
				return fmt.Errorf("%s row %d: split %q is not one of train, val (valid, validation, dev) or test", t.Name, r+2, row[col])
			}
			rows.splits[s] = append(rows.splits[s], r)
		}
		return nil
	}
	lists := map[string][]string{"train": n.cfg.Train, "val": n.cfg.Val, "test": n.cfg.Test}
	if len(n.cfg.Train)+len(n.cfg.Val)+len(n.cfg.Test) == 0 {
		for r := range t.Rows {
			rows.splits["train"] = append(rows.splits["train"], r)
		}
		return nil
	}
	member := map[string]string{}
	for _, split := range []string{"train", "val", "test"} {
		paths, err := resolveFiles(rawDir, lists[split])
		if err != nil {
			return fmt.Errorf("%s list: %w", split, err)
		}
		for _, p := range paths {
			names, err := imagecsv.ReadList(p)
			if err != nil {
				return err
			}
			for _, name := range names {
				if other, ok := member[name]; ok && other != split {
					return fmt.Errorf("image %q is listed for both %s and %s", name, other, split)
				}
				member[name] = split
			}
		}
	}
	for r, row := range t.Rows {
		if s, ok := member[strings.TrimSpace(row[rows.image])]; ok {
			rows.splits[s] = append(rows.splits[s], r)
		}
	}
	return nil
}

// labels sets the class targets of ex from the label cells: class indices,
// or for task = "multilabel" a 0/1 row per image over every label seen
// (several per cell with label_separator). The training split fixes the
// classes; a later split's unknown label is an error.
func (n *Node) labels(ex *examples, values []string, classes *[]string, table string, rows []int) error {
	multi := n.task == "multilabel"
	cells := make([][]string, len(values))
	var all []string
	for i, v := range values {
		parts := []string{strings.TrimSpace(v)}
		if n.cfg.LabelSeparator != nil {
			parts = nil
			for _, p := range strings.Split(v, *n.cfg.LabelSeparator) {
				if p = strings.TrimSpace(p); p != "" {
					parts = append(parts, p)
				}
			}
		}
		if len(parts) == 0 || parts[0] == "" {
			return fmt.Errorf("%s row %d: no label", table, rows[i]+2)
		}
		cells[i] = parts
		all = append(all, parts...)
	}
	if *classes == nil {
		*classes, _ = tabular.ClassIndex(all)
	}
	index := map[string]int{}
	for i, c := range *classes {
		index[c] = i
	}
	ex.classes = *classes
	if multi {
		ex.targets = len(*classes)
		ex.yf = make([]float32, len(values)*ex.targets)
	} else {
		ex.y = make([]int64, len(values))
	}
	for i, parts := range cells {
		for _, p := range parts {
			c, ok := index[p]
			if !ok {
				return fmt.Errorf("%s row %d: label %q does not occur in the training rows", table, rows[i]+2, p)
			}
			if multi {
				ex.yf[i*ex.targets+c] = 1
			} else {
				ex.y[i] = int64(c)
			}
		}
	}
	return nil
}

// captionTokens sets the caption tokens of ex from each image's first
// caption. The labels number the images (retrieval pairs).
func (n *Node) captionTokens(ex *examples, values []string, vocab *[]string, table string, rows []int) error {
	first := make([]string, len(values))
	for i, v := range values {
		caps, err := imagecsv.Captions(v)
		if err != nil {
			return fmt.Errorf("%s row %d: %w", table, rows[i]+2, err)
		}
		first[i] = caps[0]
	}
	n.tokenize(ex, first, *vocab)
	*vocab = ex.vocab
	ex.y = make([]int64, len(first))
	for i := range ex.y {
		ex.y[i] = int64(i)
	}
	return nil
}

// tokenize sets ex's text tokens (a caption or a question per example):
// max_tokens word tokens over vocab, the training split's words, or when
// vocab is nil over the max_vocabulary most frequent words of texts.
func (n *Node) tokenize(ex *examples, texts []string, vocab []string) {
	length, limit := defaultTextTokens, defaultVocabulary
	if n.cfg.MaxTokens != nil {
		length = *n.cfg.MaxTokens
	}
	if n.cfg.MaxVocabulary != nil {
		limit = *n.cfg.MaxVocabulary
	}
	words := make([][]string, len(texts))
	for i, t := range texts {
		words[i] = imagecsv.Words(t)
	}
	var v *imagecsv.Vocabulary
	if vocab != nil {
		v = imagecsv.NewVocabulary(vocab)
	} else {
		v = imagecsv.BuildVocabulary(words, limit)
	}
	ex.vocab, ex.qLen = v.Words, length
	ex.q = make([]int64, 0, len(words)*length)
	for _, w := range words {
		ex.q = v.Encode(ex.q, w, length)
	}
}

// isDir reports whether p is a directory (images patterns name them).
func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}
