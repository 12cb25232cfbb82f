package dataset

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/vec"
	"github.com/gatepipe/gatepipe/nodes"
)

// splitPart is one split of the store: the examples idx (ascending) of
// one parsed set.
type splitPart struct {
	name string
	from *examples
	idx  []int
}

// defaultBatchBytes bounds the inputs of one batch of examples that is
// decoded and written at a time; three batches are held at most (one
// being decoded, one waiting, one being written), so a dataset node's
// memory does not grow with the data.
const defaultBatchBytes = 16 << 20

// writeStore writes each part's split file batch by batch as its examples
// are decoded, accumulating the training split's normalisation statistics
// on the way, then meta.json. It returns how many examples each split
// holds (fewer than its part's when on_bad_example skipped some).
func (n *Node) writeStore(ctx context.Context, env *nodes.Env, meta *examplestore.Meta, train *examples, parts []splitPart) (map[string]int, error) {
	stats := n.newChannelStats(train)
	counts := map[string]int{}
	var skipped []skippedExample
	for _, p := range parts {
		var s *channelStats
		if p.name == "train" {
			s = stats
		}
		bad, err := writeSplit(ctx, env, p, s, writeOptions{batchBytes: n.batchBytes, skipBad: n.media.skipBad, jpegQuality: n.jpegQuality})
		if err != nil {
			return nil, fmt.Errorf("%s split: %w", p.name, err)
		}
		counts[p.name] = len(p.idx) - len(bad)
		skipped = append(skipped, bad...)
	}
	meta.Normalize = stats.normalization()
	meta.Skipped = skipped
	reportSkipped(env, skipped)
	return counts, examplestore.WriteMeta(env.OutDir, meta, counts)
}

// decodedChunk is one batch of a split: its examples (idx, the first at
// position first in the split) and their inputs, in order.
type decodedChunk struct {
	first int
	// pos, when set, are the split positions of the chunk's examples
	// (written out of order); otherwise they run from first.
	pos []int
	idx []int
	x   []byte // the split file's bytes: U8 pixels or little-endian F32
	// bad holds the positions in idx of examples whose media could not
	// be decoded (on_bad_example = "skip"; their x is zero), with why.
	bad []badPosition
	err error
}

type badPosition struct {
	at  int
	err error
}

// writeOptions are how a split is written.
type writeOptions struct {
	// batchBytes bounds one batch's inputs.
	batchBytes int
	// skipBad skips examples whose media cannot be decoded.
	skipBad bool
	// jpegQuality, above 0, keeps the images as JPEGs of that quality.
	jpegQuality int
}

// writeSplit writes one split file. Its inputs are decoded a batch ahead
// of the one being written. Under skipBad, examples whose media cannot be
// decoded are left out (the file is compacted once written) and returned.
func writeSplit(ctx context.Context, env *nodes.Env, p splitPart, stats *channelStats, o writeOptions) ([]skippedExample, error) {
	e := p.from
	size := e.exampleSize()
	w, jw, err := createSplit(env.OutDir, p, o)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	index := make([]int64, len(p.idx))
	for k, i := range p.idx {
		index[k] = int64(i)
	}
	if err := w.Write("index", 0, i64Bytes(index)); err != nil {
		return nil, err
	}
	// A batch's inputs, and its labels as they are read (int64 a pixel
	// for masks, three times an image's bytes at 224 px), fit batchBytes.
	per := chunkExamples(o.batchBytes, size*e.dtype.Size()+8*e.labelsPerExample(), runtime.GOMAXPROCS(0))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var skipped []skippedExample
	var drop []int
	free := make(chan []byte, chunkBuffers)
	var order []int
	if jw == nil {
		order = writeOrder(e, p.idx)
	}
	done := 0
	for c := range decodeChunks(ctx, e, p.idx, order, per, o.skipBad, free) {
		if c.err != nil {
			return nil, c.err
		}
		if err := writeChunk(w, jw, e, c); err != nil {
			return nil, err
		}
		stats.add(withoutRows(c.x, c.bad, size*e.dtype.Size()), e.dtype, size)
		select {
		case free <- c.x:
		default:
		}
		for _, b := range c.bad {
			at := c.position(b.at)
			drop = append(drop, at)
			skipped = append(skipped, skippedExample{Split: p.name, Index: index[at], Error: b.err.Error()})
		}
		done += len(c.idx)
		env.Progress.Update(int64(done), int64(len(p.idx)), "writing the "+p.name+" split")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	ok = true
	if len(drop) == 0 {
		return nil, nil
	}
	slices.Sort(drop)
	if len(drop) == len(p.idx) {
		return nil, fmt.Errorf("none of its %d examples could be decoded (the first: %s)", len(p.idx), skipped[0].Error)
	}
	if err := examplestore.DropRows(env.OutDir, p.name, drop); err != nil {
		return nil, err
	}
	return skipped, nil
}

// createSplit creates the split file of p in dir: raw inputs, or JPEGs
// (with the encoder that writes them) when o asks for them.
func createSplit(dir string, p splitPart, o writeOptions) (*examplestore.SplitWriter, *jpegWriter, error) {
	e := p.from
	ySpec := safetensors.Spec{DType: e.labelType(), Shape: e.yShape}
	if e.yf != nil {
		ySpec = safetensors.Spec{DType: safetensors.F32}
		if e.targets > 0 {
			ySpec.Shape = []int{max(e.targets, 1)}
		}
	}
	qLen := 0
	if e.q != nil {
		qLen = e.qLen
	}
	if o.jpegQuality > 0 {
		w, err := examplestore.CreateJPEGSplit(dir, p.name, len(p.idx), ySpec, qLen)
		return w, &jpegWriter{quality: o.jpegQuality}, err
	}
	w, err := examplestore.CreateSplit(dir, p.name, len(p.idx), safetensors.Spec{DType: e.dtype, Shape: e.shape}, ySpec, qLen)
	return w, nil, err
}

// withoutRows returns x without the rows (row bytes each) at bad's
// positions: what the normalisation statistics see.
func withoutRows(x []byte, bad []badPosition, row int) []byte {
	if len(bad) == 0 {
		return x
	}
	out := make([]byte, 0, len(x))
	prev := 0
	for _, b := range bad {
		out = append(out, x[prev*row:b.at*row]...)
		prev = b.at + 1
	}
	return append(out, x[prev*row:]...)
}

// maxChunkBytes bounds a chunk that chunkExamples grows past batchBytes.
const maxChunkBytes = 256 << 20

// chunkExamples is how many examples of rowBytes each a chunk holds: as
// many as batchBytes takes, but at least two per core where that stays
// under maxChunkBytes, so that the decoders of large examples (a video
// clip of 8 frames at 224 px is 1.2 MB: 13 to a 16 MB batch) keep every
// core of a large machine busy through a chunk.
func chunkExamples(batchBytes, rowBytes, cores int) int {
	rowBytes = max(rowBytes, 1)
	per := max(1, batchBytes/rowBytes)
	if floor := 2 * cores; per < floor {
		per = max(per, min(floor, maxChunkBytes/rowBytes))
	}
	return per
}

// chunkBuffers is how many decoded chunks' buffers a split's writer keeps
// for reuse: one being decoded, one waiting and one being written.
const chunkBuffers = 3

// decodeChunks decodes the inputs of examples idx, per at a time, on a
// goroutine of their own, a chunk ahead of the writer; it stops at the
// first error (sent as a chunk) or when ctx ends. With skipBad, a chunk
// that holds an example whose media cannot be decoded is decoded again
// one example at a time, and those examples are marked bad. A chunk is
// decoded into a buffer taken from free when one is there (the writer
// gives back each chunk's inputs once written).
func decodeChunks(ctx context.Context, e *examples, idx, order []int, per int, skipBad bool, free <-chan []byte) <-chan decodedChunk {
	chunks := make(chan decodedChunk, 1)
	go func() {
		defer close(chunks)
		for first := 0; first < len(idx); first += per {
			part := idx[first:min(first+per, len(idx))]
			var pos []int
			if order != nil {
				pos = order[first : first+len(part)]
				part = make([]int, len(pos))
				for k, at := range pos {
					part[k] = idx[at]
				}
			}
			var dst []byte
			select {
			case dst = <-free:
			default:
			}
			x, err := e.inputsInto(dst, part)
			var bad []badPosition
			// A group (Winoground's pairs) is kept whole or not at all:
			// skipping is for examples that stand alone.
			if err != nil && skipBad && e.group <= 1 && isBadExample(err) && ctx.Err() == nil {
				x, bad, err = e.inputsOneByOne(part)
			}
			select {
			case chunks <- decodedChunk{first: first, pos: pos, idx: part, x: x, bad: bad, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return chunks
}

// writeChunk writes chunk c into the split: its examples' inputs (as
// JPEGs through jw when set), targets and (for question-answer data)
// questions.
func writeChunk(w *examplestore.SplitWriter, jw *jpegWriter, e *examples, c decodedChunk) error {
	idx := c.idx
	if len(c.x) != len(idx)*e.exampleSize()*e.dtype.Size() {
		return fmt.Errorf("%d input bytes for %d examples of shape %v (internal error)", len(c.x), len(idx), e.shape)
	}
	if jw != nil {
		if c.pos != nil {
			return fmt.Errorf("JPEGs written out of order (internal error)")
		}
		if err := jw.write(w, e, c.first, c.x); err != nil {
			return err
		}
	} else if err := c.write(w, "x", c.x); err != nil {
		return err
	}
	y, err := e.targetBytes(idx)
	if err != nil {
		return err
	}
	if err := c.write(w, "y", y); err != nil {
		return err
	}
	if e.q != nil {
		return c.write(w, "q", i64Bytes(gather(e.q, idx, e.qLen)))
	}
	return nil
}

// position is the split position of the chunk's k-th example.
func (c decodedChunk) position(k int) int {
	if c.pos != nil {
		return c.pos[k]
	}
	return c.first + k
}

// write writes data, the chunk's rows of tensor in chunk order, at their
// positions: one write for each run of consecutive positions.
func (c decodedChunk) write(w *examplestore.SplitWriter, tensor string, data []byte) error {
	if c.pos == nil {
		return w.Write(tensor, c.first, data)
	}
	n := len(c.pos)
	if n == 0 {
		return nil
	}
	row := len(data) / n
	for k := 0; k < n; {
		end := k + 1
		for end < n && c.pos[end] == c.pos[end-1]+1 {
			end++
		}
		if err := w.Write(tensor, c.pos[k], data[k*row:end*row]); err != nil {
			return err
		}
		k = end
	}
	return nil
}

// writeOrderer is a lazy source whose examples are cheapest decoded in
// another order than the split's (clips in the order their compressed
// archives hold them): order returns the positions 0..len(idx)-1 of the
// examples idx in that order, or nil for the split's own.
type writeOrderer interface {
	order(idx []int) []int
}

// writeOrder is the order a split's examples are decoded and written in:
// nil (the split's own) unless its source asks for another.
func writeOrder(e *examples, idx []int) []int {
	if o, ok := e.lazy.(writeOrderer); ok {
		return o.order(idx)
	}
	return nil
}

// inputs returns the inputs of the examples idx as the split file stores
// them: U8 pixels decoded now from a lazy source, or copied.
func (e *examples) inputs(idx []int) ([]byte, error) { return e.inputsInto(nil, idx) }

// inputsInto is inputs into dst's storage where the source can decode
// into a buffer and dst is large enough.
func (e *examples) inputsInto(dst []byte, idx []int) ([]byte, error) {
	size := e.exampleSize()
	switch {
	case e.lazy != nil:
		return decodeInto(e.lazy, dst, idx)
	case e.dtype == safetensors.U8:
		return gather(e.u8, idx, size), nil
	}
	return f32Bytes(gather(e.f32, idx, size)), nil
}

// inputsOneByOne decodes the examples idx one at a time: those whose
// media cannot be decoded are returned as bad, their inputs left zero.
func (e *examples) inputsOneByOne(idx []int) ([]byte, []badPosition, error) {
	row := e.exampleSize() * e.dtype.Size()
	out := make([]byte, len(idx)*row)
	var bad []badPosition
	for k, i := range idx {
		x, err := e.inputs([]int{i})
		switch {
		case err != nil && isBadExample(err):
			bad = append(bad, badPosition{at: k, err: err})
		case err != nil:
			return nil, nil, err
		default:
			copy(out[k*row:], x)
		}
	}
	return out, bad, nil
}

// targetBytes returns the targets of the examples idx as the split file
// stores them (labels as labelType says, or F32 targets).
func (e *examples) targetBytes(idx []int) ([]byte, error) {
	if e.yf != nil {
		return f32Bytes(gather(e.yf, idx, max(e.targets, 1))), nil
	}
	var ys []int64
	if e.lazyY != nil {
		var err error
		if ys, err = e.lazyY.labels(idx); err != nil {
			return nil, err
		}
	} else {
		ys = gather(e.y, idx, e.labelsPerExample())
	}
	if want := len(idx) * e.labelsPerExample(); len(ys) != want {
		return nil, fmt.Errorf("%d labels for %d examples of %d each (internal error)", len(ys), len(idx), e.labelsPerExample())
	}
	b, err := safetensors.PutLabels(e.labelType(), ys)
	if err != nil {
		return nil, fmt.Errorf("%w (%d classes)", err, len(e.classes))
	}
	return b, nil
}

// labelType is the dtype the split files store labels in: per-pixel
// labels (masks) in the smallest type that holds the classes, one label
// per example as I64.
func (e *examples) labelType() safetensors.DType {
	if len(e.yShape) == 0 || len(e.classes) == 0 {
		return safetensors.I64
	}
	return safetensors.LabelType(len(e.classes))
}

// gather copies the runs of size values of the examples idx.
func gather[T any](v []T, idx []int, size int) []T {
	out := make([]T, 0, len(idx)*size)
	for _, i := range idx {
		out = append(out, v[i*size:(i+1)*size]...)
	}
	return out
}

func i64Bytes(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// channelStats accumulates per-channel sums of the training split's
// values as its batches stream by: for U8 inputs, exact integer sums of
// the bytes and of their squares per channel (so the order of the
// examples cannot change the result); for F32, float64 running sums in
// example order.
type channelStats struct {
	standard        bool
	scale           float64
	channels, inner int
	sum, sq         []float64
	moments         [][2]uint64 // U8: per channel, the sum of the bytes and of their squares
	values          float64
}

// newChannelStats starts the statistics of the training examples ex.
func (n *Node) newChannelStats(ex *examples) *channelStats {
	scale := 1.0
	if ex.dtype == safetensors.U8 && n.normalize != "none" {
		scale = 1.0 / 255
	}
	channels, inner := examplestore.ChannelLayout(ex.shape)
	s := &channelStats{standard: n.normalize == "standard", scale: scale, channels: channels, inner: inner,
		sum: make([]float64, channels), sq: make([]float64, channels)}
	if ex.dtype == safetensors.U8 {
		s.moments = make([][2]uint64, channels)
	}
	return s
}

// add takes in a batch of examples of size values each (U8 bytes or
// little-endian F32). A nil channelStats ignores it.
func (s *channelStats) add(x []byte, dtype safetensors.DType, size int) {
	if s == nil || !s.standard {
		return
	}
	blocks := size / s.inner
	esize := dtype.Size()
	for ex := 0; ex < len(x)/(size*esize); ex++ {
		for b := range blocks {
			c := b % s.channels
			start := (ex*size + b*s.inner) * esize
			block := x[start : start+s.inner*esize]
			if dtype == safetensors.U8 {
				sum, sq := vec.ByteMoments(block)
				s.moments[c][0] += sum
				s.moments[c][1] += sq
				continue
			}
			sum, sq := s.sum[c], s.sq[c]
			for i := 0; i < len(block); i += 4 {
				f := float64(math.Float32frombits(binary.LittleEndian.Uint32(block[i:]))) * s.scale
				sum += f
				sq += f * f
			}
			s.sum[c], s.sq[c] = sum, sq
		}
		s.values += float64(size / s.channels)
	}
}

// normalization returns the statistics gathered: mean and standard
// deviation per channel for "standard", identity otherwise.
func (s *channelStats) normalization() examplestore.Normalization {
	norm := examplestore.Normalization{Scale: s.scale, Mean: make([]float64, s.channels), Std: make([]float64, s.channels)}
	for c := range norm.Std {
		norm.Std[c] = 1
	}
	if !s.standard || s.values == 0 {
		return norm
	}
	for c := range s.sum {
		sum, sq := s.sum[c], s.sq[c]
		if s.moments != nil {
			// Exact integer sums of the bytes and their squares, scaled
			// once (float64 holds them exactly below 2^53: ImageNet-1k's
			// squares add up to 4.2e15 per channel at 224 px).
			s1, s2 := s.moments[c][0], s.moments[c][1]
			sum, sq = float64(s1)*s.scale, float64(s2)*s.scale*s.scale
		}
		mean := sum / s.values
		variance := sq/s.values - mean*mean
		norm.Mean[c] = mean
		if variance > 1e-12 {
			norm.Std[c] = math.Sqrt(variance)
		}
	}
	return norm
}
