package train

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/imagedec"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/internal/imageops"
)

// Inputs gives a split's inputs on demand, in place of Data.X, so that a
// split larger than memory is read a batch at a time (StoreInputs).
type Inputs interface {
	// Len is the number of examples.
	Len() int
	// Read writes the inputs of the examples idx, one after another,
	// into dst (len(idx) examples of the Data's shape).
	Read(dst []float32, idx []int) error
}

// readInputs writes the inputs of the examples idx into dst.
func (d *Data) readInputs(dst []float32, idx []int) error {
	if d.Source != nil {
		return d.Source.Read(dst, idx)
	}
	size := d.exampleSize()
	for i, k := range idx {
		copy(dst[i*size:(i+1)*size], d.X[k*size:(k+1)*size])
	}
	return nil
}

// readRange writes the inputs of the examples [off, off+cnt) into dst.
func (d *Data) readRange(dst []float32, off, cnt int) error {
	if d.Source == nil {
		size := d.exampleSize()
		copy(dst, d.X[off*size:(off+cnt)*size])
		return nil
	}
	idx := make([]int, cnt)
	for i := range idx {
		idx[i] = off + i
	}
	return d.Source.Read(dst, idx)
}

// Close releases what d's Source and masks hold (a mapped store), if
// anything.
func (d *Data) Close() error {
	err := d.masks.close()
	if c, ok := d.Source.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// StoreInputs reads a split's inputs from its mapped store file as they
// are asked for: normalised as the store's meta.json says (or scaled to
// [0, 1] and put through an encoder's evaluation transform), exactly the
// values LoadSplit and LoadSplitFor hold for the whole split. The pages
// of each example read are released afterwards, so the process's memory
// holds the batches being used, not the file.
type StoreInputs struct {
	x     safetensors.Tensor
	n     int
	raw   int // values of one stored example
	norm  examplestore.Normalization
	inner int
	chans int
	// p, when set, transforms each image (each frame of a clip) of c x h
	// x w into out values.
	p              *imageops.Preprocess
	frames         int
	c, h, w, outSz int
	unmap          func() error
	// lut maps a U8 store's byte v of channel c to lut[c*256+v], the
	// normalised value (nil for other dtypes).
	lut []float32
	// jpeg, in a JPEG store, holds the examples instead of x: each is
	// decoded to shape as it is read, by decoders kept in decoders.
	jpeg     *examplestore.JPEGInputs
	shape    []int
	decoders sync.Pool
}

// OpenSplitFor is LoadSplitFor with the inputs left in the store: the
// targets are read now, the inputs by each batch that uses them (Data's
// Source). Close the Data when done with it.
func OpenSplitFor(store, split string, meta *examplestore.Meta, task Task, p *imageops.Preprocess) (*Data, int, error) {
	s, unmap, err := examplestore.MapSplit(store, split)
	if err != nil {
		return nil, 0, err
	}
	d, outputs, err := openSplit(s, split, meta, task, p)
	if err != nil {
		unmap()
		return nil, 0, err
	}
	d.Source.(*StoreInputs).unmap = unmap
	return d, outputs, nil
}

// openSplit makes the Data of a mapped split s.
func openSplit(s *examplestore.Split, split string, meta *examplestore.Meta, task Task, p *imageops.Preprocess) (*Data, int, error) {
	d, outputs, err := openTargets(s, split, meta, task, p)
	if err != nil {
		return nil, 0, err
	}
	in := &StoreInputs{x: s.X, n: s.Len(), norm: meta.Normalize, p: p, jpeg: s.JPEG, shape: meta.Shape}
	in.decoders.New = func() any { return imagedec.New() }
	in.raw = 1
	for _, v := range meta.Shape {
		in.raw *= v
	}
	if s.JPEG != nil && len(meta.Shape) != 3 {
		return nil, 0, fmt.Errorf("split %s: a JPEG store of examples %v, not images [C, H, W]", split, meta.Shape)
	}
	if s.Len() > 0 && s.JPEG == nil && s.X.NumElements() != s.Len()*in.raw {
		return nil, 0, fmt.Errorf("split %s: %d examples of shape %v in %d values", split, s.Len(), meta.Shape, s.X.NumElements())
	}
	in.chans, in.inner = examplestore.ChannelLayout(meta.Shape)
	if in.chans != len(in.norm.Mean) || in.chans != len(in.norm.Std) {
		return nil, 0, fmt.Errorf("meta.json: %d normalisation channels for examples of shape %v", len(in.norm.Mean), meta.Shape)
	}
	d.Shape = meta.Shape
	if p != nil {
		if len(meta.Shape) != 3 && len(meta.Shape) != 4 {
			return nil, 0, fmt.Errorf("the encoder's preprocess resizes images [C, H, W] or clips' frames [T, C, H, W]; this dataset's examples are %v", meta.Shape)
		}
		// Scaled to [0, 1] as stored: the dataset's own normalisation is
		// not applied before the encoder's transform.
		in.norm.Mean, in.norm.Std = make([]float64, in.chans), make([]float64, in.chans)
		for c := range in.norm.Std {
			in.norm.Std[c] = 1
		}
		in.frames, in.c, in.h, in.w = 1, meta.Shape[0], meta.Shape[1], meta.Shape[2]
		if len(meta.Shape) == 4 {
			in.frames, in.c, in.h, in.w = meta.Shape[0], meta.Shape[1], meta.Shape[2], meta.Shape[3]
		}
		shape := p.OutShape(in.c)
		in.outSz = shape[0] * shape[1] * shape[2]
		if len(meta.Shape) == 4 {
			shape = append([]int{in.frames}, shape...)
		}
		d.Shape = shape
	}
	if s.X.DType == safetensors.U8 {
		in.lut = make([]float32, in.chans*256)
		for c := range in.chans {
			for v := range 256 {
				in.lut[c*256+v] = float32((float64(float32(v))*in.norm.Scale - in.norm.Mean[c]) / in.norm.Std[c])
			}
		}
	}
	d.Source = in
	return d, outputs, nil
}

// Len is the number of examples.
func (s *StoreInputs) Len() int { return s.n }

// Read writes the examples idx into dst.
func (s *StoreInputs) Read(dst []float32, idx []int) error {
	rowBytes := s.raw * s.x.DType.Size()
	out := s.raw
	var x []float32 // one example, normalised, when it is transformed next
	if s.p != nil {
		out = s.frames * s.outSz
		x = make([]float32, s.raw)
	}
	var dec *imagedec.Decoder
	var row []byte // a JPEG store's example, decoded
	if s.jpeg != nil {
		dec = s.decoders.Get().(*imagedec.Decoder)
		defer s.decoders.Put(dec)
	}
	for j, k := range idx {
		if k < 0 || k >= s.n {
			return fmt.Errorf("example %d of %d (internal error)", k, s.n)
		}
		o := dst[j*out : (j+1)*out]
		norm := o
		if s.p != nil {
			norm = x
		}
		if s.jpeg != nil {
			if pix, ok := dec.Interleaved(s.jpeg.Row(k), s.shape[0], s.shape[1], s.shape[2]); ok && s.lut != nil {
				s.normaliseInterleaved(norm, pix)
			} else {
				var err error
				if row, err = s.jpeg.DecodeRows(dec, row[:0], k, 1, s.shape); err != nil {
					return err
				}
				s.normalise(norm, row)
			}
		} else {
			b := s.x.Data[k*rowBytes : (k+1)*rowBytes]
			s.normalise(norm, b)
			safetensors.Release(b)
		}
		if s.p == nil {
			continue
		}
		size := s.c * s.h * s.w
		for f := range s.frames {
			img, err := s.p.Apply(x[f*size:(f+1)*size], s.c, s.h, s.w)
			if err != nil {
				return err
			}
			copy(o[f*s.outSz:(f+1)*s.outSz], img)
		}
	}
	return nil
}

// normalise writes the stored example b (raw values) into x, normalised.
func (s *StoreInputs) normalise(x []float32, b []byte) {
	if s.lut != nil {
		// A channel's values are runs of inner values.
		for start := 0; start < len(b); start += s.inner {
			c := (start / s.inner) % s.chans
			lut := s.lut[c*256 : (c+1)*256 : (c+1)*256]
			xs := x[start : start+s.inner]
			for i, v := range b[start : start+s.inner] {
				xs[i] = lut[v]
			}
		}
		return
	}
	row := safetensors.Tensor{DType: s.x.DType, Shape: []int{s.raw}, Data: b}
	for i, v := range row.Float32s() {
		c := (i / s.inner) % s.chans
		x[i] = float32((float64(v)*s.norm.Scale - s.norm.Mean[c]) / s.norm.Std[c])
	}
}

// normaliseInterleaved writes an image of interleaved pixels ([H, W, C]
// bytes, a JPEG store's decoded) into x channel-major, normalised: the
// layout and the lookup in one pass.
func (s *StoreInputs) normaliseInterleaved(x []float32, pix []byte) {
	c := s.chans
	plane := len(pix) / c
	if c == 1 {
		lut := s.lut[:256:256]
		for i, v := range pix {
			x[i] = lut[v]
		}
		return
	}
	r, g, b := x[:plane], x[plane:2*plane], x[2*plane:3*plane]
	lr, lg, lb := s.lut[:256:256], s.lut[256:512:512], s.lut[512:768:768]
	for i := range plane {
		p := pix[3*i : 3*i+3 : 3*i+3]
		r[i], g[i], b[i] = lr[p[0]], lg[p[1]], lb[p[2]]
	}
}

// Close unmaps the store file.
func (s *StoreInputs) Close() error {
	if s.unmap == nil {
		return nil
	}
	err := s.unmap()
	s.unmap = nil
	return err
}
