package dataset

// Format hdf5: one example per HDF5 file, an image dataset and a target
// dataset inside it (fast-depth's NYU Depth v2 files: "rgb" [3, H, W]
// uint8 and "depth" [H, W] float32), read as segmentation as GATE reads
// NYU: the target's values truncated to integers are the classes.

import (
	"context"
	"fmt"
	"image"
	"math"
	"os"
	"sort"
	"sync"

	"github.com/gatepipe/gatepipe/formats/hdf5"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
	"golang.org/x/image/draw"
)

// decodeHDF5 checks an hdf5 dataset.
func (n *Node) decodeHDF5(decl nodes.Decl) hcl.Diagnostics {
	cfg := n.cfg
	var diags hcl.Diagnostics
	n.task = "segmentation"
	if len(cfg.Train) == 0 {
		diags = append(diags, decl.Errorf("train", "Missing training files", "Format \"hdf5\" needs train = [\"train/*/*.h5\"]: the HDF5 files (one example each) inside the fetched sources."))
	}
	if cfg.ImageColumn == nil || cfg.LabelColumn == nil {
		diags = append(diags, decl.Errorf("format", "Missing datasets", "Format \"hdf5\" needs image_column and label_column: the HDF5 datasets holding each file's image ([C, H, W] or [H, W] uint8) and its per-pixel target (\"rgb\" and \"depth\" in NYU Depth v2's files)."))
	}
	if len(cfg.ClassNames) < 2 {
		diags = append(diags, decl.Errorf("class_names", "Missing class names", "Format \"hdf5\" needs class_names: a target value v is class trunc(v), which must be below their number."))
	}
	if cfg.Task != nil && *cfg.Task != "segmentation" {
		diags = append(diags, decl.Errorf("task", "Invalid task", "An hdf5 dataset is a segmentation task, not %q.", *cfg.Task))
	}
	if cfg.SplitColumn != nil || len(cfg.Annotations) > 0 {
		diags = append(diags, decl.Errorf("format", "Invalid attributes", "An hdf5 dataset is split by its train/val/test file patterns (and val_fraction / test_fraction); it has no annotation table."))
	}
	return diags
}

// parseHDF5 lists each split's files; their images and targets are read
// only when a split keeps them.
func (n *Node) parseHDF5(ctx context.Context, env *nodes.Env, rawDir string) (train, val, test *examples, err error) {
	build := func(patterns []string, what string) (*examples, error) {
		if len(patterns) == 0 {
			return nil, nil
		}
		paths, err := resolveFiles(rawDir, patterns)
		if err != nil {
			return nil, fmt.Errorf("%s files: %w", what, err)
		}
		sort.Strings(paths)
		_, channels, h, w := n.clipGeometry(0)
		src := &h5Files{ctx: ctx, paths: paths, image: *n.cfg.ImageColumn, target: *n.cfg.LabelColumn,
			channels: channels, h: h, w: w, classes: len(n.cfg.ClassNames), progress: env.Progress, masks: map[int][]int64{}}
		return &examples{dtype: safetensors.U8, shape: []int{channels, h, w}, yShape: []int{h, w}, classes: n.cfg.ClassNames,
			lazy: src, lazyY: src, count: len(paths), task: "segmentation"}, nil
	}
	if train, err = build(n.cfg.Train, "train"); err != nil {
		return nil, nil, nil, err
	}
	if val, err = build(n.cfg.Val, "validation"); err != nil {
		return nil, nil, nil, err
	}
	if test, err = build(n.cfg.Test, "test"); err != nil {
		return nil, nil, nil, err
	}
	return train, val, test, nil
}

// h5Files reads examples from HDF5 files: decode gives the images and
// keeps the targets, which labels then hands out.
type h5Files struct {
	ctx           context.Context
	paths         []string
	image, target string
	channels      int
	h, w          int
	classes       int
	progress      nodes.Progress

	mu    sync.Mutex
	masks map[int][]int64 // by example, read by decode and not yet taken
}

func (s *h5Files) decode(idx []int) ([]byte, error) {
	size := s.channels * s.h * s.w
	out := make([]byte, len(idx)*size)
	masks := make([][]int64, len(idx))
	err := decodeEach(s.ctx, len(idx), s.progress, "reading HDF5 files", func(_ context.Context, k int) error {
		var err error
		masks[k], err = s.read(s.paths[idx[k]], out[k*size:(k+1)*size])
		return err
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	for k, i := range idx {
		s.masks[i] = masks[k]
	}
	s.mu.Unlock()
	return out, nil
}

func (s *h5Files) labels(idx []int) ([]int64, error) {
	var missing []int
	s.mu.Lock()
	for _, i := range idx {
		if _, ok := s.masks[i]; !ok {
			missing = append(missing, i)
		}
	}
	s.mu.Unlock()
	if len(missing) > 0 {
		if _, err := s.decode(missing); err != nil {
			return nil, err
		}
	}
	out := make([]int64, 0, len(idx)*s.h*s.w)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range idx {
		out = append(out, s.masks[i]...)
		delete(s.masks, i)
	}
	return out, nil
}

// read reads one file's image into px ([C, h, w], resized bilinearly)
// and returns its target at [h, w] (nearest neighbour at pixel centres),
// truncated to classes.
func (s *h5Files) read(path string, px []byte) ([]int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := hdf5.Parse(data, path)
	if err != nil {
		return nil, err
	}
	img, err := f.Dataset(s.image)
	if err != nil {
		return nil, err
	}
	pixels, err := img.Uint8s()
	if err != nil {
		return nil, err
	}
	c, ih, iw := 1, 0, 0
	switch len(img.Shape) {
	case 2:
		ih, iw = img.Shape[0], img.Shape[1]
	case 3:
		c, ih, iw = img.Shape[0], img.Shape[1], img.Shape[2]
	}
	if ih == 0 || iw == 0 || (c != 1 && c != 3) {
		return nil, fmt.Errorf("%s: %q has shape %v, want [C, H, W] with 1 or 3 channels, or [H, W]", path, s.image, img.Shape)
	}
	resizePlanes(px, pixels, c, ih, iw, s.channels, s.h, s.w)
	tgt, err := f.Dataset(s.target)
	if err != nil {
		return nil, err
	}
	if len(tgt.Shape) != 2 || tgt.Shape[0] != ih || tgt.Shape[1] != iw {
		return nil, fmt.Errorf("%s: %q has shape %v, the image is %dx%d", path, s.target, tgt.Shape, ih, iw)
	}
	values, err := tgt.Float32s()
	if err != nil {
		return nil, err
	}
	mask := make([]int64, 0, s.h*s.w)
	for y := range s.h {
		sy := min(int((float64(y)+0.5)*float64(ih)/float64(s.h)), ih-1)
		for x := range s.w {
			sx := min(int((float64(x)+0.5)*float64(iw)/float64(s.w)), iw-1)
			v := float64(values[sy*iw+sx])
			label := math.Trunc(v) // torch's .long(), as GATE turns the map into labels
			if math.IsNaN(v) || label < 0 || label >= float64(s.classes) {
				return nil, fmt.Errorf("%s: %q value %g at (%d, %d) is not one of the %d classes", path, s.target, v, sy, sx, s.classes)
			}
			mask = append(mask, int64(label))
		}
	}
	return mask, nil
}

// resizePlanes scales a [c, ih, iw] image bilinearly into dst [channels,
// h, w]: one plane is repeated to three, three are averaged to one.
func resizePlanes(dst, src []byte, c, ih, iw, channels, h, w int) {
	in := image.NewGray(image.Rect(0, 0, iw, ih))
	out := image.NewGray(image.Rect(0, 0, w, h))
	planes := make([][]byte, c)
	for ch := range c {
		copy(in.Pix, src[ch*ih*iw:(ch+1)*ih*iw])
		draw.BiLinear.Scale(out, out.Bounds(), in, in.Bounds(), draw.Src, nil)
		planes[ch] = append([]byte(nil), out.Pix...)
	}
	for ch := range channels {
		plane := dst[ch*h*w : (ch+1)*h*w]
		switch {
		case c == channels:
			copy(plane, planes[ch])
		case c == 1:
			copy(plane, planes[0])
		default: // three planes to one
			for i := range plane {
				plane[i] = uint8((int(planes[0][i]) + int(planes[1][i]) + int(planes[2][i]) + 1) / 3)
			}
		}
	}
}
