package dataset

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/gatepipe/gatepipe/formats/cameratrap"
	"github.com/gatepipe/gatepipe/formats/imagecsv"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// defaultFrames is the clip length of a camera_traps dataset: GATE's
// iWildCam loader keeps up to 10 frames per sequence.
const defaultFrames = 10

// decodeCameraTraps checks a camera_traps dataset: camera-trap sequences
// (iWildCam 2022) as clips, the target each sequence's animal count.
func (n *Node) decodeCameraTraps(decl nodes.Decl) hcl.Diagnostics {
	cfg := n.cfg
	var diags hcl.Diagnostics
	n.task = "video_regression"
	var jsons, csvs int
	for _, a := range cfg.Annotations {
		switch {
		case strings.HasSuffix(a, ".json"):
			jsons++
		case strings.HasSuffix(a, ".csv"):
			csvs++
		}
	}
	if jsons == 0 || csvs == 0 || jsons+csvs != len(cfg.Annotations) {
		diags = append(diags, decl.Errorf("annotations", "Invalid annotations", "A camera_traps dataset needs annotations = [\"....json\", \"....csv\"]: the COCO-style image list (file_name, seq_id, seq_frame_num per image) and the sequence counts (seq_id,count)."))
	}
	if len(cfg.Train) == 0 {
		diags = append(diags, decl.Errorf("train", "Missing training list", "Format \"camera_traps\" needs train = [...]: files of sequence ids, one per line (iWildCam's train.txt)."))
	}
	if cfg.Task != nil && *cfg.Task != "video_regression" {
		diags = append(diags, decl.Errorf("task", "Invalid task", "A camera_traps dataset is a video_regression task (a count per sequence), not %q.", *cfg.Task))
	}
	diags = append(diags, n.checkFrames(decl)...)
	for _, a := range []struct {
		name string
		set  bool
	}{{"image_column", cfg.ImageColumn != nil}, {"label_column", cfg.LabelColumn != nil}, {"split_column", cfg.SplitColumn != nil},
		{"caption_column", cfg.CaptionColumn != nil}, {"keep_classes", len(cfg.KeepClasses) > 0}} {
		if a.set {
			diags = append(diags, decl.Errorf(a.name, "Invalid "+a.name, "%s does not apply to camera_traps datasets.", a.name))
		}
	}
	return diags
}

// parseCameraTraps reads the sequences the train, val and test lists name:
// each a clip of its first frames (in seq_frame_num order, zero frames
// after its last, as GATE pads them), the target its count.
func (n *Node) parseCameraTraps(ctx context.Context, env *nodes.Env, tree *rawTree) (train, val, test *examples, err error) {
	// The annotations and lists come out of a zip read in place (they are
	// small); the frames are read in it.
	if err := tree.materialize(slices.Concat(n.cfg.Annotations, n.cfg.Train, n.cfg.Val, n.cfg.Test)); err != nil {
		return nil, nil, nil, err
	}
	rawDir := tree.dir
	paths, err := resolveFiles(rawDir, n.cfg.Annotations)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("annotations: %w", err)
	}
	seqs, counts, err := readCameraTrapAnnotations(paths)
	if err != nil {
		return nil, nil, nil, err
	}
	index, fsys, err := n.imageIndexIn(tree)
	if err != nil {
		return nil, nil, nil, err
	}
	frames, channels, h, w := n.clipGeometry(defaultFrames)
	split := map[string]*examples{}
	seen := map[string]string{}
	err = n.eachSplitFile(rawDir, "list", func(name, p string) error {
		ids, err := imagecsv.ReadList(p)
		if err != nil {
			return err
		}
		ex := split[name]
		if ex == nil {
			lazy := &sequenceImages{ctx: ctx, fsys: fsys, clip: frames, channels: channels, h: h, w: w, progress: env.Progress, maxPixels: n.media.maxPixels}
			ex = &examples{dtype: safetensors.U8, shape: []int{frames, channels, h, w}, lazy: lazy, task: "video_regression"}
			split[name] = ex
		}
		lazy := ex.lazy.(*sequenceImages)
		for _, id := range ids {
			if other, ok := seen[id]; ok {
				return fmt.Errorf("sequence %q is listed for both %s and %s", id, other, name)
			}
			seen[id] = name
			seqFrames, ok := seqs[id]
			if !ok {
				return fmt.Errorf("%s: sequence %q has no images in the annotations", p, id)
			}
			count, ok := counts[id]
			if !ok {
				return fmt.Errorf("%s: sequence %q has no count", p, id)
			}
			var files []string
			for _, f := range seqFrames[:min(len(seqFrames), frames)] {
				path, err := index.Find(f.File)
				if err != nil {
					return fmt.Errorf("sequence %q: %w", id, err)
				}
				files = append(files, path)
			}
			lazy.seqs = append(lazy.seqs, files)
			ex.yf = append(ex.yf, float32(count))
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if split["train"] == nil || len(split["train"].yf) == 0 {
		return nil, nil, nil, fmt.Errorf("the training list names no sequence")
	}
	return split["train"], split["val"], split["test"], nil
}

// readCameraTrapAnnotations reads the annotation files: each sequence's
// frames (JSON) and each sequence's count (CSV).
func readCameraTrapAnnotations(paths []string) (seqs map[string][]cameratrap.Frame, counts map[string]float64, err error) {
	seqs, counts = map[string][]cameratrap.Frame{}, map[string]float64{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, err
		}
		if strings.HasSuffix(p, ".csv") {
			var c map[string]float64
			if c, err = cameratrap.ReadCounts(f, p); err == nil {
				for k, v := range c {
					counts[k] = v
				}
			}
		} else {
			var s map[string][]cameratrap.Frame
			if s, err = cameratrap.ReadSequences(f, p); err == nil {
				for k, v := range s {
					seqs[k] = append(seqs[k], v...)
				}
			}
		}
		f.Close()
		if err != nil {
			return nil, nil, err
		}
	}
	return seqs, counts, nil
}

// sequenceImages decodes sequences' frames when a split takes them, each
// sequence a clip of clip frames (zero frames after its last).
type sequenceImages struct {
	ctx            context.Context
	fsys           fs.FS // the frames' archive read in place, or nil (on disk)
	clip           int
	seqs           [][]string // frame paths per sequence
	channels, h, w int
	progress       nodes.Progress
	maxPixels      int64 // max_image_pixels
}

func (s *sequenceImages) decode(idx []int) ([]byte, error) {
	var paths []string
	for _, i := range idx {
		paths = append(paths, s.seqs[i]...)
	}
	pixels, err := imagecsv.Decode(s.ctx, s.fsys, paths, s.channels, s.h, s.w, s.maxPixels, func(done int) {
		s.progress.Update(int64(done), int64(len(paths)), "decoding frames")
	})
	if err != nil {
		return nil, err
	}
	frame := s.channels * s.h * s.w
	out := make([]byte, len(idx)*s.clip*frame)
	at := 0
	for k, i := range idx {
		n := len(s.seqs[i]) * frame
		copy(out[k*s.clip*frame:], pixels[at:at+n])
		at += n
	}
	return out, nil
}

// checkFrames checks a clip dataset's frames attribute.
func (n *Node) checkFrames(decl nodes.Decl) hcl.Diagnostics {
	if f := n.cfg.Frames; f != nil && (*f < 1 || *f > 64) {
		return hcl.Diagnostics{decl.Errorf("frames", "Invalid frames", "frames must be between 1 and 64, not %d.", *f)}
	}
	return nil
}

// clipGeometry is a clip dataset's frames per clip (def unless set),
// channels (3 unless set) and frame size.
func (n *Node) clipGeometry(def int) (frames, channels, h, w int) {
	frames, channels = def, 3
	if n.cfg.Frames != nil {
		frames = *n.cfg.Frames
	}
	if n.cfg.Channels != nil {
		channels = *n.cfg.Channels
	}
	return frames, channels, n.cfg.ImageSize[0], n.cfg.ImageSize[1]
}
