package dataset

// How a store keeps its inputs: raw values (the default), or, for images,
// JPEGs at the stored size (store = "jpeg"), a fifth of the bytes on
// photographs, decoded as they are read.

import (
	"context"
	"fmt"
	"os"

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

// keepSources reports whether the sources stay in the cache once the
// store is written (keep_sources, default true).
func (n *Node) keepSources() bool { return n.cfg.KeepSources == nil || *n.cfg.KeepSources }

// fetchInUse fetches the sources and marks their blobs in use until
// release (so that another dataset's keep_sources = false leaves them
// alone); a blob dropped between its fetch and its mark is fetched again.
func (n *Node) fetchInUse(ctx context.Context, env *nodes.Env) (got []fetched, release func(), err error) {
	var unlocks []func()
	release = func() {
		for _, u := range unlocks {
			u()
		}
		unlocks = nil
	}
	for try := 0; ; try++ {
		if got, err = n.fetchAll(ctx, env); err != nil {
			return nil, release, err
		}
		if env.Blobs == nil {
			return got, release, nil
		}
		missing := false
		seen := map[string]bool{}
		for _, g := range got {
			if g.sha == "" || seen[g.sha] {
				continue
			}
			seen[g.sha] = true
			u, err := env.Blobs.UseBlob(ctx, g.sha)
			if err != nil {
				release()
				return nil, release, err
			}
			unlocks = append(unlocks, u)
			if _, err := os.Stat(g.path); err != nil {
				missing = true
			}
		}
		if !missing || try == 2 {
			return got, release, nil
		}
		release() // a source was dropped meanwhile: fetch it again
	}
}

// dropSources removes the fetched sources' blobs from the cache (those no
// other node is using), once the store is written: keep_sources = false.
// They are fetched again through their pins if the store is ever rebuilt.
func (n *Node) dropSources(env *nodes.Env, got []fetched) {
	if env.Blobs == nil {
		return
	}
	var freed int64
	dropped, kept := 0, 0
	seen := map[string]bool{}
	for _, g := range got {
		if g.sha == "" || seen[g.sha] {
			continue
		}
		seen[g.sha] = true
		info, _ := os.Stat(g.path)
		ok, err := env.Blobs.DropBlob(g.sha)
		switch {
		case err != nil:
			env.Log.Warn().Err(err).Str("source", g.url).Msg("keep_sources = false: the source could not be removed")
		case ok:
			dropped++
			if info != nil {
				freed += info.Size()
			}
		default:
			kept++
		}
	}
	env.Log.Info().Int("dropped", dropped).Int("in_use", kept).Int64("bytes", freed).Msg("keep_sources = false: the sources left the cache")
}
