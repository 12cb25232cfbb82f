package examplestore

// JPEG stores: a split's images kept as JPEGs at their stored size, as
// FFCV keeps them (a fifth of raw bytes on photographs), decoded as they
// are read.
//
// The split file holds, instead of "x", the tensor "xjpeg" (I64 [N, 2]:
// each example's offset and length in the sidecar NAME.jpeg, the JPEGs
// one after another). Its other tensors are as in a raw store, so that
// DropRows and every reader of y, index and q work unchanged.

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gatepipe/gatepipe/formats/imagedec"
	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// EncodingJPEG is Meta.Encoding for a JPEG store.
const EncodingJPEG = "jpeg"

// JPEGSuffix ends a split's sidecar of JPEGs.
const JPEGSuffix = ".jpeg"

// jpegSpans names the tensor of each example's offset and length.
const jpegSpans = "xjpeg"

// JPEGInputs are a split's encoded images.
type JPEGInputs struct {
	data  []byte             // the sidecar, read or mapped
	spans safetensors.Tensor // I64 [N, 2]
}

// Len is the number of examples.
func (j *JPEGInputs) Len() int {
	if len(j.spans.Shape) == 0 {
		return 0
	}
	return j.spans.Shape[0]
}

// span is example k's offset and length.
func (j *JPEGInputs) span(k int) (int64, int64) {
	b := j.spans.Data[16*k : 16*k+16]
	return int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
}

// Row is example k's JPEG, a view of the sidecar.
func (j *JPEGInputs) Row(k int) []byte {
	off, n := j.span(k)
	return j.data[off : off+n]
}

// check refuses spans outside the sidecar.
func (j *JPEGInputs) check() error {
	for k := range j.Len() {
		off, n := j.span(k)
		if off < 0 || n <= 0 || off+n > int64(len(j.data)) {
			return fmt.Errorf("example %d: JPEG bytes [%d, %d) outside the %d of the sidecar", k, off, off+n, len(j.data))
		}
	}
	return nil
}

// DecodeRows decodes examples [first, first+n) of a JPEG split, each to
// shape [C, H, W], appending their bytes to dst.
func (j *JPEGInputs) DecodeRows(dec *imagedec.Decoder, dst []byte, first, n int, shape []int) ([]byte, error) {
	if len(shape) != 3 {
		return dst, fmt.Errorf("a JPEG store holds images [C, H, W], not %v", shape)
	}
	for k := first; k < first+n; k++ {
		var err error
		if dst, err = dec.AppendCHW(dst, j.Row(k), shape[0], shape[1], shape[2]); err != nil {
			return dst, fmt.Errorf("example %d: %w", k, err)
		}
	}
	return dst, nil
}

// Decoded returns s with its inputs as values in X (U8 [N, C, H, W] of
// shape): a JPEG split decoded, or s itself for a raw one.
func (s *Split) Decoded(shape []int) (*Split, error) {
	if s.JPEG == nil {
		return s, nil
	}
	data, err := s.JPEG.DecodeRows(imagedec.New(), make([]byte, 0, s.Len()*prod(shape)), 0, s.Len(), shape)
	if err != nil {
		return nil, err
	}
	out := *s
	out.JPEG = nil
	out.X = safetensors.Tensor{Name: "x", DType: safetensors.U8, Shape: append([]int{s.Len()}, shape...), Data: data}
	return &out, nil
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// mapJPEG maps a sidecar read-only.
func mapJPEG(p string) ([]byte, func() error, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if info.Size() == 0 {
		return nil, func() error { return nil }, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: mapping: %w", p, err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}

// CreateJPEGSplit starts a JPEG store's split: dir/name.safetensors for n
// examples of y's targets (and q tokens of qLen), and dir/name.jpeg.
// Write its JPEGs with WriteJPEG, in order.
func CreateJPEGSplit(dir, name string, n int, y safetensors.Spec, qLen int) (*SplitWriter, error) {
	specs := []safetensors.Spec{
		{Name: jpegSpans, DType: safetensors.I64, Shape: []int{n, 2}},
		{Name: "y", DType: y.DType, Shape: append([]int{n}, y.Shape...)},
		{Name: "index", DType: safetensors.I64, Shape: []int{n}},
	}
	if qLen > 0 {
		specs = append(specs, safetensors.Spec{Name: "q", DType: safetensors.I64, Shape: []int{n, qLen}})
	}
	side, err := os.Create(filepath.Join(dir, name+JPEGSuffix))
	if err != nil {
		return nil, fmt.Errorf("writing split %s: %w", name, err)
	}
	fw, err := safetensors.Create(filepath.Join(dir, name+".safetensors"), specs, map[string]string{"split": name})
	if err != nil {
		side.Close()
		os.Remove(side.Name())
		return nil, fmt.Errorf("writing split %s: %w", name, err)
	}
	return &SplitWriter{fw: fw, n: n, jpeg: side}, nil
}

// WriteJPEG appends the JPEGs of examples first, first+1, ... to the
// sidecar; they must follow the examples written before.
func (w *SplitWriter) WriteJPEG(first int, images [][]byte) error {
	if w.jpeg == nil {
		return fmt.Errorf("WriteJPEG on a raw split (internal error)")
	}
	if first != w.nextJPEG {
		return fmt.Errorf("JPEGs of examples from %d written after %d (internal error)", first, w.nextJPEG)
	}
	spans := make([]byte, 16*len(images))
	for i, img := range images {
		if _, err := w.jpeg.Write(img); err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(spans[16*i:], uint64(w.jpegOff))
		binary.LittleEndian.PutUint64(spans[16*i+8:], uint64(len(img)))
		w.jpegOff += int64(len(img))
	}
	w.nextJPEG += len(images)
	return w.fw.WriteRows(jpegSpans, first, spans)
}

// closeJPEG finishes the sidecar.
func (w *SplitWriter) closeJPEG() error {
	if w.jpeg == nil {
		return nil
	}
	err := w.jpeg.Sync()
	if cerr := w.jpeg.Close(); err == nil {
		err = cerr
	}
	return err
}

// abortJPEG removes the unfinished sidecar.
func (w *SplitWriter) abortJPEG() {
	if w.jpeg != nil {
		w.jpeg.Close()
		os.Remove(w.jpeg.Name())
	}
}
