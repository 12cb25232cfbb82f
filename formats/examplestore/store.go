// Package examplestore is the on-disk form of a processed dataset, shared
// by the dataset block (which writes it) and the blocks that train on it.
//
// A store is a directory with meta.json and one safetensors file per split
// (train.safetensors, val.safetensors, test.safetensors). Each split file
// holds "x" (U8 pixels or F32 features, shape [N, ...example shape]), "y"
// (I64 class indices or F32 targets, shape [N] or [N, T]) and "index" (I64
// [N]: each example's position in the source data, so the split itself is
// part of the artifact and can be audited or reproduced).
package examplestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// Meta describes a store.
type Meta struct {
	Version int    `json:"version"`
	Format  string `json:"format"`
	// Task is "classification" or "regression".
	Task       string   `json:"task"`
	Classes    []string `json:"classes,omitempty"`
	NumClasses int      `json:"num_classes"`
	// Shape is the shape of one example, e.g. [1, 28, 28] or [F].
	Shape []int `json:"shape"`
	// Vocab names the token ids of q (relational questions).
	Vocab    []string `json:"vocab,omitempty"`
	Features []string `json:"features,omitempty"`
	DType    string   `json:"dtype"`
	// Normalize: value = (raw*Scale - Mean[c]) / Std[c] per channel (or
	// feature), computed on the training split only.
	Normalize Normalization  `json:"normalize"`
	Splits    map[string]int `json:"splits"`
	SplitSeed int64          `json:"split_seed"`
	Sources   []Source       `json:"sources"`
	// Group, above 1, says that consecutive runs of Group examples are
	// one item of the source, kept in one split and scored together
	// (Winoground's two image-caption pairs).
	Group int `json:"group,omitempty"`
	// MetricNames renames the metrics a benchmark reports to the names
	// GATE's results matrix gives them for this benchmark ("Img2Txt
	// Acc@1" is "Img2Txt" in NYCC's and Winoground's columns).
	MetricNames map[string]string `json:"metric_names,omitempty"`
	// Skipped lists the examples left out because their media could not
	// be decoded (on_bad_example = "skip"); none under the default.
	Skipped []Skipped `json:"skipped,omitempty"`
	// Encoding is how the inputs are kept: "" as raw values in x, or
	// EncodingJPEG (images [C, H, W] of U8 as JPEGs of Quality).
	Encoding string `json:"encoding,omitempty"`
	Quality  int    `json:"quality,omitempty"`
}

// Normalization is the per-channel affine transform applied at load.
type Normalization struct {
	Scale float64   `json:"scale"`
	Mean  []float64 `json:"mean"`
	Std   []float64 `json:"std"`
}

// Source records where the data came from.
type Source struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
}

// Split is one split's examples.
type Split struct {
	X     safetensors.Tensor
	Y     safetensors.Tensor
	Index []int64
	// Q holds token ids [N, L] for tasks with text (questions of the
	// relational task); its Data is nil otherwise. Meta.Vocab names them.
	Q safetensors.Tensor
	// JPEG, in a JPEG store, holds the inputs instead of X (whose Data is
	// nil): each example's encoded image (Decoded makes X).
	JPEG *JPEGInputs
}

// Len returns the number of examples.
func (s *Split) Len() int { return len(s.Index) }

// Write writes meta.json and the split files into dir.
func Write(dir string, meta *Meta, splits map[string]*Split) error {
	meta.Splits = map[string]int{}
	for name, s := range splits {
		meta.Splits[name] = s.Len()
		x, y := s.X, s.Y
		x.Name, y.Name = "x", "y"
		tensors := []safetensors.Tensor{x, y, safetensors.I64Tensor("index", []int{len(s.Index)}, s.Index)}
		if s.Q.Data != nil {
			q := s.Q
			q.Name = "q"
			tensors = append(tensors, q)
		}
		if err := safetensors.WriteFile(filepath.Join(dir, name+".safetensors"), tensors, map[string]string{"split": name}); err != nil {
			return fmt.Errorf("writing split %s: %w", name, err)
		}
	}
	return WriteMeta(dir, meta, meta.Splits)
}

// ReadMeta reads a store's meta.json.
func ReadMeta(dir string) (*Meta, error) {
	data, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "meta.json"), err)
	}
	return &m, nil
}

// ReadSplit reads one split (a JPEG store's inputs encoded: Decoded
// makes them values).
func ReadSplit(dir, name string) (*Split, error) {
	p := filepath.Join(dir, name+".safetensors")
	f, err := safetensors.ReadFile(p)
	if err != nil {
		return nil, err
	}
	s, err := splitOf(f, p)
	if err != nil || s.JPEG == nil {
		return s, err
	}
	if s.JPEG.data, err = os.ReadFile(filepath.Join(dir, name+JPEGSuffix)); err != nil {
		return nil, err
	}
	return s, s.JPEG.check()
}

// MapSplit maps one split's file into memory without reading it: the
// split's tensors are views of the file, paged in as they are read, so a
// split larger than memory is read a batch at a time (Slice). Call
// unmap when the split and every slice of it are no longer used.
func MapSplit(dir, name string) (s *Split, unmap func() error, err error) {
	p := filepath.Join(dir, name+".safetensors")
	f, unmap, err := safetensors.MapFile(p)
	if err != nil {
		return nil, nil, err
	}
	if s, err = splitOf(f, p); err != nil {
		unmap()
		return nil, nil, err
	}
	if s.JPEG != nil {
		data, unmapJPEG, err := mapJPEG(filepath.Join(dir, name+JPEGSuffix))
		if err != nil {
			unmap()
			return nil, nil, err
		}
		s.JPEG.data = data
		unmapSplit := unmap // unmap is the result both replaces
		both := func() error { return errors.Join(unmapJPEG(), unmapSplit()) }
		if err := s.JPEG.check(); err != nil {
			both()
			return nil, nil, err
		}
		return s, both, nil
	}
	return s, unmap, nil
}

// Slice returns the examples [first, first+n) of s, sharing its memory.
func (s *Split) Slice(first, n int) *Split {
	rows := func(t safetensors.Tensor) safetensors.Tensor {
		if t.Data == nil || len(t.Shape) == 0 || t.Shape[0] == 0 {
			return t
		}
		row := len(t.Data) / t.Shape[0]
		out := t
		out.Shape = append([]int{n}, t.Shape[1:]...)
		out.Data = t.Data[first*row : (first+n)*row]
		return out
	}
	out := &Split{X: rows(s.X), Y: rows(s.Y), Index: s.Index[first : first+n], Q: rows(s.Q)}
	if s.JPEG != nil {
		j := *s.JPEG
		j.spans = rows(j.spans)
		out.JPEG = &j
	}
	return out
}

// splitOf checks a parsed split file (at p) and returns its split.
func splitOf(f *safetensors.File, p string) (*Split, error) {
	x, y, idx := f.Tensors["x"], f.Tensors["y"], f.Tensors["index"]
	var spans *safetensors.Tensor
	if x == nil {
		if spans = f.Tensors[jpegSpans]; spans != nil {
			x = &safetensors.Tensor{Name: "x", DType: safetensors.U8, Shape: spans.Shape[:min(1, len(spans.Shape))]}
		}
	}
	if x == nil || y == nil || idx == nil {
		return nil, fmt.Errorf("%s: missing x, y or index tensor", p)
	}
	s := &Split{X: *x, Y: *y, Index: idx.Int64s()}
	if spans != nil {
		if spans.DType != safetensors.I64 || len(spans.Shape) != 2 || spans.Shape[1] != 2 {
			return nil, fmt.Errorf("%s: %s must be I64 [N, 2]", p, jpegSpans)
		}
		s.JPEG = &JPEGInputs{spans: *spans}
	}
	if len(x.Shape) == 0 || x.Shape[0] != s.Len() || len(y.Shape) == 0 || y.Shape[0] != s.Len() {
		return nil, fmt.Errorf("%s: x, y and index disagree on the number of examples", p)
	}
	if q := f.Tensors["q"]; q != nil {
		if q.DType != safetensors.I64 || len(q.Shape) != 2 || q.Shape[0] != s.Len() {
			return nil, fmt.Errorf("%s: q must be I64 [N, L] with N = %d", p, s.Len())
		}
		s.Q = *q
	}
	return s, nil
}

// ChannelLayout says how an example of the given shape is split into
// normalisation channels: element i of an example belongs to channel
// (i / inner) % channels. Tables [F]: every feature is a channel; images
// [C, H, W] and clips [T, C, H, W]: the colour channels.
func ChannelLayout(shape []int) (channels, inner int) {
	switch len(shape) {
	case 0:
		return 1, 1
	case 1:
		return shape[0], 1
	case 3:
		return shape[0], shape[1] * shape[2]
	case 4:
		return shape[1], shape[2] * shape[3]
	}
	return 1, 1
}

// SplitWriter writes one split's file as its examples arrive, a batch at
// a time and in any order, so that a split larger than memory is written
// with memory for a batch. The file's bytes equal Write's for the same
// examples.
type SplitWriter struct {
	fw *safetensors.FileWriter
	n  int
	// jpeg, in a JPEG store, is the sidecar its images are appended to;
	// jpegOff its length and nextJPEG the next example it expects.
	jpeg     *os.File
	jpegOff  int64
	nextJPEG int
}

// CreateSplit starts dir/name.safetensors for n examples: x and y give
// the dtype and the shape of one example's input and target ([] for one
// value), q the length of its text tokens (0 for none).
func CreateSplit(dir, name string, n int, x, y safetensors.Spec, qLen int) (*SplitWriter, error) {
	specs := []safetensors.Spec{
		{Name: "x", DType: x.DType, Shape: append([]int{n}, x.Shape...)},
		{Name: "y", DType: y.DType, Shape: append([]int{n}, y.Shape...)},
		{Name: "index", DType: safetensors.I64, Shape: []int{n}},
	}
	if qLen > 0 {
		specs = append(specs, safetensors.Spec{Name: "q", DType: safetensors.I64, Shape: []int{n, qLen}})
	}
	fw, err := safetensors.Create(filepath.Join(dir, name+".safetensors"), specs, map[string]string{"split": name})
	if err != nil {
		return nil, fmt.Errorf("writing split %s: %w", name, err)
	}
	return &SplitWriter{fw: fw, n: n}, nil
}

// Write writes the rows first, first+1, ... of tensor ("x", "y", "index"
// or "q") from data, little-endian.
func (w *SplitWriter) Write(tensor string, first int, data []byte) error {
	return w.fw.WriteRows(tensor, first, data)
}

// Close finishes the file; it fails, and removes it, when any example's
// rows are missing.
func (w *SplitWriter) Close() error {
	if err := w.closeJPEG(); err != nil {
		w.fw.Abort()
		return err
	}
	if w.jpeg != nil && w.nextJPEG != w.n {
		w.fw.Abort()
		return fmt.Errorf("%d of %d JPEGs written (internal error)", w.nextJPEG, w.n)
	}
	return w.fw.Close()
}

// Abort removes the unfinished file.
func (w *SplitWriter) Abort() {
	w.abortJPEG()
	w.fw.Abort()
}

// WriteMeta writes meta.json for splits of the given sizes.
func WriteMeta(dir string, meta *Meta, counts map[string]int) error {
	meta.Version = 1
	meta.Splits = counts
	data, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "meta.json"), data, 0o666)
}

// Skipped is an example a dataset left out because its media could not or
// might not be decoded (on_bad_example = "skip"), recorded in meta.json.
type Skipped struct {
	Split string `json:"split"`
	// Index is the example's position in the source data.
	Index int64  `json:"index"`
	Error string `json:"error"`
}

// DropRows rewrites dir/name.safetensors without the examples at the
// positions drop (ascending), copying every tensor's other rows a batch at
// a time; the file is replaced only once the new one is complete.
func DropRows(dir, name string, drop []int) error {
	p := filepath.Join(dir, name+".safetensors")
	f, unmap, err := safetensors.MapFile(p)
	if err != nil {
		return err
	}
	defer unmap()
	n := 0
	if idx := f.Tensors["index"]; idx != nil && len(idx.Shape) > 0 {
		n = idx.Shape[0]
	}
	keep := make([]int, 0, n)
	for i, d := 0, 0; i < n; i++ {
		if d < len(drop) && drop[d] == i {
			d++
			continue
		}
		keep = append(keep, i)
	}
	var specs []safetensors.Spec
	for tn, t := range f.Tensors {
		if len(t.Shape) == 0 || t.Shape[0] != n {
			return fmt.Errorf("%s: tensor %q has no row per example", p, tn)
		}
		specs = append(specs, safetensors.Spec{Name: tn, DType: t.DType, Shape: append([]int{len(keep)}, t.Shape[1:]...)})
	}
	tmp := p + ".compact"
	w, err := safetensors.Create(tmp, specs, f.Metadata)
	if err != nil {
		return err
	}
	for tn, t := range f.Tensors {
		row := len(t.Data) / max(n, 1)
		buf := make([]byte, 0, min(len(keep)*row, 16<<20))
		first := 0
		for k, i := range keep {
			buf = append(buf, t.Data[i*row:(i+1)*row]...)
			if len(buf)+row > cap(buf) || k == len(keep)-1 {
				if err := w.WriteRows(tn, first, buf); err != nil {
					w.Abort()
					return err
				}
				first = k + 1
				buf = buf[:0]
			}
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
