package train

import (
	"fmt"
	"github.com/gatepipe/gatepipe/internal/imageops"
	"slices"

	"github.com/gatepipe/gatepipe/formats/examplestore"
)

// StoreTask maps an example store's task to the head that trains on it
// (the store's task names are the Task values).
func StoreTask(meta *examplestore.Meta) (Task, error) {
	if t := Task(meta.Task); slices.Contains(Tasks, t) {
		return t, nil
	}
	return "", fmt.Errorf("benchmark dataset is a %q task; train handles %v", meta.Task, Tasks)
}

// LoadSplit reads one split of an example store, normalised as its
// meta.json says, with the targets the task needs, and returns it with the
// number of outputs (classes, labels or targets).
func LoadSplit(store, split string, meta *examplestore.Meta, task Task) (*Data, int, error) {
	s, err := readDecoded(store, split, meta)
	if err != nil {
		return nil, 0, err
	}
	return splitData(s, split, meta, task)
}

// readDecoded reads a split whole, a JPEG store's images decoded.
func readDecoded(store, split string, meta *examplestore.Meta) (*examplestore.Split, error) {
	s, err := examplestore.ReadSplit(store, split)
	if err != nil {
		return nil, err
	}
	if s, err = s.Decoded(meta.Shape); err != nil {
		return nil, fmt.Errorf("split %s: %w", split, err)
	}
	return s, nil
}

// splitData is LoadSplit for a split (or a slice of one) already open.
func splitData(s *examplestore.Split, split string, meta *examplestore.Meta, task Task) (*Data, int, error) {
	d, outputs, err := targetsOf(s, split, meta, task)
	if err != nil {
		return nil, 0, err
	}
	x := s.X.Float32s()
	per := len(x) / max(s.Len(), 1)
	channels, inner := examplestore.ChannelLayout(meta.Shape)
	if channels != len(meta.Normalize.Mean) || channels != len(meta.Normalize.Std) {
		return nil, 0, fmt.Errorf("meta.json: %d normalisation channels for examples of shape %v", len(meta.Normalize.Mean), meta.Shape)
	}
	for i, v := range x {
		c := (i % per / inner) % channels
		x[i] = float32((float64(v)*meta.Normalize.Scale - meta.Normalize.Mean[c]) / meta.Normalize.Std[c])
	}
	d.X = x
	if d.Len() != s.Len() {
		return nil, 0, fmt.Errorf("split %s: %d examples of shape %v in %d values", split, s.Len(), meta.Shape, len(x))
	}
	return d, outputs, nil
}

// transformMasks puts n segmentation masks [h, w] through p's geometry
// (ApplyMask), so they stay aligned with their transformed images.
func transformMasks(y []int64, n, h, w int, p *imageops.Preprocess) ([]int64, error) {
	var out []int64
	for i := range n {
		m, err := p.ApplyMask(y[i*h*w:(i+1)*h*w], h, w)
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

// LoadTargetsFor is LoadTargets for an encoder with an evaluation
// transform (nil for none): segmentation masks go through its geometry.
func LoadTargetsFor(store, split string, meta *examplestore.Meta, task Task, p *imageops.Preprocess) (*Data, int, int, error) {
	s, unmap, err := examplestore.MapSplit(store, split)
	if err != nil {
		return nil, 0, 0, err
	}
	d, outputs, err := openTargets(s, split, meta, task, p)
	if err != nil {
		unmap()
		return nil, 0, 0, err
	}
	if d.masks != nil {
		// The masks are read from the mapping as they are used; Close
		// unmaps it.
		d.masks.unmap = unmap
	} else if err := unmap(); err != nil {
		return nil, 0, 0, err
	}
	return d, s.Len(), outputs, nil
}

// LoadTargets reads one split's targets (labels, targets, questions) and
// not its examples, for metrics computed from another runtime's
// predictions; the Data's X is nil. It also returns the number of
// examples. The split file is mapped, not read: its inputs are never
// paged in, and segmentation masks are read one at a time as they are
// used (Close the Data when done).
func LoadTargets(store, split string, meta *examplestore.Meta, task Task) (*Data, int, int, error) {
	return LoadTargetsFor(store, split, meta, task, nil)
}

// openTargets is targetsOf for a mapped split: segmentation masks are
// checked a batch at a time and left in the store (Data.masks, through
// p's geometry when p is set), not held.
func openTargets(s *examplestore.Split, split string, meta *examplestore.Meta, task Task, p *imageops.Preprocess) (*Data, int, error) {
	if task != Segmentation {
		return targetsOf(s, split, meta, task)
	}
	if len(meta.Shape) != 3 {
		return nil, 0, fmt.Errorf("segmentation needs image examples [C, H, W], not %v", meta.Shape)
	}
	n := s.Len()
	if n == 0 {
		return nil, 0, fmt.Errorf("split %s: no examples", split)
	}
	h, w := meta.Shape[1], meta.Shape[2]
	m, err := newStoreMasks(s.Y, n, h, w, meta.NumClasses, p)
	if err != nil {
		return nil, 0, fmt.Errorf("split %s: %w", split, err)
	}
	return &Data{Shape: meta.Shape, Task: task, ClassNames: meta.Classes, Group: meta.Group, masks: m}, meta.NumClasses, nil
}

// targetsOf checks and keeps the targets of split s.
func targetsOf(s *examplestore.Split, split string, meta *examplestore.Meta, task Task) (*Data, int, error) {
	d := &Data{Shape: meta.Shape, Task: task, ClassNames: meta.Classes, Group: meta.Group}
	outputs := meta.NumClasses
	if meta.Group > 1 && s.Len()%meta.Group != 0 {
		return nil, 0, fmt.Errorf("split %s: %d examples are not whole groups of %d", split, s.Len(), meta.Group)
	}
	if task == Segmentation && len(meta.Shape) != 3 {
		return nil, 0, fmt.Errorf("segmentation needs image examples [C, H, W], not %v", meta.Shape)
	}
	if task == Relational || task == Retrieval {
		if d.Q = s.Q.Int64s(); d.Q == nil || len(meta.Vocab) == 0 {
			return nil, 0, fmt.Errorf("split %s: a %s dataset needs text tokens (q) and a vocabulary", split, task)
		}
		d.QLen, d.Vocab = s.Q.Shape[1], len(meta.Vocab)
		for _, tok := range d.Q {
			if tok < 0 || int(tok) >= d.Vocab {
				return nil, 0, fmt.Errorf("split %s: question token %d is outside the vocabulary of %d", split, tok, d.Vocab)
			}
		}
	}
	switch task {
	case Retrieval:
		// Image-caption pairs: the captions are the targets.
	case Classification, Segmentation, Video, Relational, FewShot:
		if d.Y = s.Y.Int64s(); d.Y == nil {
			return nil, 0, fmt.Errorf("split %s: labels are not class indices", split)
		}
		for _, y := range d.Y {
			if y < 0 || int(y) >= outputs {
				return nil, 0, fmt.Errorf("split %s: label %d is outside the %d classes", split, y, outputs)
			}
		}
	default:
		if d.T = s.Y.Float32s(); d.T == nil {
			return nil, 0, fmt.Errorf("split %s: %s targets must be F32", split, task)
		}
		outputs = 1
		if len(s.Y.Shape) == 2 {
			outputs = s.Y.Shape[1]
		}
	}
	n := s.Len()
	want := n * outputs
	switch task {
	case Classification, Video, Relational, FewShot:
		want = n
	case Retrieval:
		want = 0 // pairs: the captions are the targets
	case Segmentation:
		want = n * meta.Shape[len(meta.Shape)-2] * meta.Shape[len(meta.Shape)-1]
	}
	if got := len(d.Y) + len(d.T); got != want || n == 0 {
		return nil, 0, fmt.Errorf("split %s: %d examples but %d targets (want %d for a %s task)", split, n, got, want, task)
	}
	return d, outputs, nil
}

// LoadSplitFor reads one split for an encoder with an evaluation transform
// (nil for none): the pixels are scaled to [0, 1] as stored (the
// dataset's own normalisation is not applied) and every image goes
// through the transform.
func LoadSplitFor(store, split string, meta *examplestore.Meta, task Task, p *imageops.Preprocess) (*Data, int, error) {
	s, err := readDecoded(store, split, meta)
	if err != nil {
		return nil, 0, err
	}
	return SplitDataFor(s, split, meta, task, p)
}

// SplitDataFor is LoadSplitFor for a split already open, or a slice of
// one (examplestore.MapSplit and Split.Slice: a batch of a split larger
// than memory).
func SplitDataFor(s *examplestore.Split, split string, meta *examplestore.Meta, task Task, p *imageops.Preprocess) (*Data, int, error) {
	if p == nil {
		return splitData(s, split, meta, task)
	}
	if len(meta.Shape) != 3 && len(meta.Shape) != 4 {
		return nil, 0, fmt.Errorf("the encoder's preprocess resizes images [C, H, W] or clips' frames [T, C, H, W]; this dataset's examples are %v", meta.Shape)
	}
	raw := *meta
	channels, _ := examplestore.ChannelLayout(meta.Shape)
	raw.Normalize.Mean, raw.Normalize.Std = make([]float64, channels), make([]float64, channels)
	for i := range raw.Normalize.Std {
		raw.Normalize.Std[i] = 1
	}
	d, outputs, err := splitData(s, split, &raw, task)
	if err != nil {
		return nil, 0, err
	}
	// A clip's frames each go through the transform.
	frames, img := 1, meta.Shape
	if len(img) == 4 {
		frames, img = img[0], img[1:]
	}
	c, h, w := img[0], img[1], img[2]
	size := c * h * w
	n := d.Len() * frames
	shape := p.OutShape(c)
	out := make([]float32, 0, n*shape[0]*shape[1]*shape[2])
	for i := range n {
		img, err := p.Apply(d.X[i*size:(i+1)*size], c, h, w)
		if err != nil {
			return nil, 0, fmt.Errorf("split %s: %w", split, err)
		}
		out = append(out, img...)
	}
	if len(meta.Shape) == 4 {
		shape = append([]int{frames}, shape...)
	}
	d.X, d.Shape = out, shape
	if task == Segmentation {
		if d.Y, err = transformMasks(d.Y, n, h, w, p); err != nil {
			return nil, 0, fmt.Errorf("split %s: %w", split, err)
		}
	}
	return d, outputs, nil
}
