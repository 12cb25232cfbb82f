package dataset

// How a store keeps its inputs: raw values (the default), or, for images,
// JPEGs at the stored size (store = "jpeg"), a fifth of the bytes on
// photographs, decoded as they are read.

import (
	"fmt"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/imagedec"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// Values of store.
const (
	storeRaw  = "raw"
	storeJPEG = "jpeg"
)

// defaultJPEGQuality is jpeg_quality's default: FFCV's, and visually
// lossless on photographs.
const defaultJPEGQuality = 90

// decodeStorage decodes store and jpeg_quality.
func (n *Node) decodeStorage(decl nodes.Decl) hcl.Diagnostics {
	var diags hcl.Diagnostics
	store := storeRaw
	if v := n.cfg.Store; v != nil {
		store = *v
	}
	switch store {
	case storeRaw:
		if n.cfg.JPEGQuality != nil {
			diags = append(diags, decl.Errorf("jpeg_quality", "Invalid jpeg_quality", "jpeg_quality applies to store = %q; this store keeps raw values.", storeJPEG))
		}
	case storeJPEG:
		n.jpegQuality = defaultJPEGQuality
		if q := n.cfg.JPEGQuality; q != nil {
			if *q < 1 || *q > 100 {
				diags = append(diags, decl.Errorf("jpeg_quality", "Invalid jpeg_quality", "jpeg_quality is 1 to 100 (the default is %d), not %d.", defaultJPEGQuality, *q))
			}
			n.jpegQuality = *q
		}
		if len(n.cfg.ImageSize) != 2 {
			diags = append(diags, decl.Errorf("store", "Invalid store", "store = %q keeps images of one size: set image_size = [H, W].", storeJPEG))
		}
	default:
		diags = append(diags, decl.Errorf("store", "Invalid store", "store is %q (raw values, the default) or %q (images as JPEGs at the stored size, decoded as they are read), not %q.", storeRaw, storeJPEG, store))
	}
	return diags
}

// jpegStorable refuses a JPEG store for examples that are not images
// [C, H, W] of bytes with 1 or 3 channels.
func jpegStorable(e *examples) error {
	if e.dtype != safetensors.U8 || len(e.shape) != 3 || (e.shape[0] != 1 && e.shape[0] != 3) {
		return fmt.Errorf("store = %q keeps images [C, H, W] of bytes with 1 or 3 channels; this dataset's examples are %s %v", storeJPEG, e.dtype, e.shape)
	}
	return nil
}

// jpegWriter encodes a split's images as they are written.
type jpegWriter struct {
	enc     imagedec.Encoder
	quality int
	buf     []byte
}

// write encodes the chunk's images (U8 [C, H, W] each) and appends them.
func (j *jpegWriter) write(w *examplestore.SplitWriter, e *examples, first int, x []byte) error {
	size := e.exampleSize()
	images := make([][]byte, 0, len(x)/max(size, 1))
	j.buf = j.buf[:0]
	var ends []int
	for k := 0; k+size <= len(x); k += size {
		var err error
		if j.buf, err = j.enc.AppendJPEG(j.buf, x[k:k+size], e.shape[0], e.shape[1], e.shape[2], j.quality); err != nil {
			return fmt.Errorf("example %d: %w", first+k/size, err)
		}
		ends = append(ends, len(j.buf))
	}
	start := 0
	for _, end := range ends {
		images = append(images, j.buf[start:end])
		start = end
	}
	return w.WriteJPEG(first, images)
}
