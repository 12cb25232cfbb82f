package dataset

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/formats/matv5"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// decodeVOCMat checks a voc_mat dataset: images with per-image MATLAB
// label maps (PASCAL-Context's trainval/*.mat beside VOC2010's
// JPEGImages), segmentation over class_names.
func (n *Node) decodeVOCMat(decl nodes.Decl) hcl.Diagnostics {
	cfg := n.cfg
	var diags hcl.Diagnostics
	n.task = "segmentation"
	if len(cfg.Annotations) == 0 {
		diags = append(diags, decl.Errorf("annotations", "Missing label maps", "Format \"voc_mat\" needs annotations = [\"trainval/*.mat\"]: the MAT-files holding each image's LabelMap."))
	}
	if len(cfg.Images) == 0 {
		diags = append(diags, decl.Errorf("images", "Missing images", "Format \"voc_mat\" needs images = [\"VOCdevkit/VOC2010/JPEGImages\"]."))
	}
	if len(cfg.ClassNames) < 2 {
		diags = append(diags, decl.Errorf("class_names", "Missing class names", "Format \"voc_mat\" needs class_names: label i of a LabelMap is class i; labels beyond the list are background (0)."))
	}
	if len(cfg.Train)+len(cfg.Test)+len(cfg.Val) > 0 || cfg.SplitColumn != nil {
		diags = append(diags, decl.Errorf("train", "Invalid splits", "A voc_mat dataset is split by val_fraction and test_fraction (seeded), as GATE splits PASCAL-Context."))
	}
	if cfg.Task != nil && *cfg.Task != "segmentation" {
		diags = append(diags, decl.Errorf("task", "Invalid task", "A voc_mat dataset is a segmentation task, not %q.", *cfg.Task))
	}
	return diags
}

// parseVOCMat pairs every label map with the image of the same name (as
// GATE's loader matches ids), resizes both to image_size (the map by
// nearest neighbour) and keeps labels below len(class_names), the others
// background, as GATE does.
func (n *Node) parseVOCMat(ctx context.Context, env *nodes.Env, rawDir string) (*examples, error) {
	maps, err := resolveFiles(rawDir, n.cfg.Annotations)
	if err != nil {
		return nil, fmt.Errorf("annotations: %w", err)
	}
	index, err := n.imageIndex(rawDir)
	if err != nil {
		return nil, err
	}
	sort.Strings(maps)
	_, channels, h, w := n.clipGeometry(0)
	classes := len(n.cfg.ClassNames)
	lazy := &lazyImages{ctx: ctx, channels: channels, h: h, w: w, maxPixels: n.media.maxPixels}
	labels := &vocLabelMaps{h: h, w: w, classes: classes}
	ex := &examples{dtype: safetensors.U8, shape: []int{channels, h, w}, yShape: []int{h, w}, classes: n.cfg.ClassNames, lazy: lazy, lazyY: labels, task: "segmentation"}
	for i, p := range maps {
		if i%64 == 0 {
			env.Progress.Update(int64(i), int64(len(maps)), "label maps")
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		img, err := index.Find(id + ".jpg")
		if err != nil {
			continue // GATE keeps the ids with both an image and a map
		}
		// Each map is read now, to fail early on a bad one, and again when
		// its split is written: the masks are never all held.
		if _, err := labels.read(p, nil); err != nil {
			return nil, err
		}
		labels.paths = append(labels.paths, p)
		lazy.paths = append(lazy.paths, img)
	}
	ex.count = len(labels.paths)
	if len(lazy.paths) == 0 {
		return nil, fmt.Errorf("no label map has an image of the same name under %v", n.cfg.Images)
	}
	return ex, nil
}

// vocLabelMaps reads the LabelMaps of the examples when a split takes them,
// resized to h x w by nearest neighbour, labels past classes background.
type vocLabelMaps struct {
	paths   []string
	h, w    int
	classes int
}

func (v *vocLabelMaps) labels(idx []int) ([]int64, error) {
	out := make([]int64, 0, len(idx)*v.h*v.w)
	for _, i := range idx {
		var err error
		if out, err = v.read(v.paths[i], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// read appends the label map at p, resized, to dst.
func (v *vocLabelMaps) read(p string, dst []int64) ([]int64, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	m, err := matv5.Read(data, p, "LabelMap")
	if err != nil {
		return nil, err
	}
	if m.Rows == 0 || m.Cols == 0 {
		return nil, fmt.Errorf("%s: an empty LabelMap", p)
	}
	for y := range v.h {
		sy := min(int((float64(y)+0.5)*float64(m.Rows)/float64(v.h)), m.Rows-1)
		for x := range v.w {
			sx := min(int((float64(x)+0.5)*float64(m.Cols)/float64(v.w)), m.Cols-1)
			val := m.At(sy, sx)
			label := int64(0)
			if val >= 0 && val < float64(v.classes) {
				label = int64(val)
			}
			dst = append(dst, label)
		}
	}
	return dst, nil
}
