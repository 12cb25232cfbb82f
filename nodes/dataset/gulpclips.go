package dataset

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gatepipe/gatepipe/formats/gulp"
	"github.com/gatepipe/gatepipe/formats/imagedec"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// defaultClipFrames is the clip length of a gulp dataset: GATE's video
// loaders sample 8 frames (input_frame_length).
const defaultClipFrames = 8

// decodeGulp checks a gulp dataset: GulpIO chunk directories (images) and
// GATE's split lists (train, val, test), clips of a class each.
func (n *Node) decodeGulp(decl nodes.Decl) hcl.Diagnostics {
	cfg := n.cfg
	var diags hcl.Diagnostics
	n.task = "video"
	if len(cfg.Images) == 0 {
		diags = append(diags, decl.Errorf("images", "Missing gulp directories", "Format \"gulp\" needs images = [\"gulp_rgb\"]: the directories holding data_N.gulp and meta_N.gmeta chunks."))
	}
	if cfg.Task != nil && *cfg.Task != "video" {
		diags = append(diags, decl.Errorf("task", "Invalid task", "A gulp dataset is a video task (a class per clip), not %q.", *cfg.Task))
	}
	diags = append(diags, n.checkFrames(decl)...)
	if len(cfg.Annotations) > 0 || cfg.ImageColumn != nil || cfg.LabelColumn != nil {
		diags = append(diags, decl.Errorf("annotations", "Invalid annotations", "A gulp dataset's clips and labels come from its split lists (train, val, test); annotations, image_column and label_column do not apply."))
	}
	return diags
}

// gulpChunks reads every meta_N.gmeta under the gulp directories: the
// frames of each video, by key.
func (n *Node) gulpChunks(rawDir string) (map[string]gulp.Video, error) {
	dirs, err := resolveFiles(rawDir, n.cfg.Images)
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	videos := map[string]gulp.Video{}
	for _, dir := range dirs {
		metas, _ := filepath.Glob(filepath.Join(dir, "meta_*.gmeta"))
		if len(metas) == 0 {
			return nil, fmt.Errorf("images: %s holds no meta_N.gmeta chunk", dir)
		}
		for _, m := range metas {
			data := filepath.Join(dir, "data_"+strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "meta_"), ".gmeta")+".gulp")
			info, err := os.Stat(data)
			if err != nil {
				return nil, fmt.Errorf("%s: its data file: %w", m, err)
			}
			f, err := os.Open(m)
			if err != nil {
				return nil, err
			}
			vs, err := gulp.ReadMeta(f, m, data, info.Size())
			f.Close()
			if err != nil {
				return nil, err
			}
			for k, v := range vs {
				if _, dup := videos[k]; dup {
					return nil, fmt.Errorf("%s: video %q is in another chunk too", m, k)
				}
				videos[k] = v
			}
		}
	}
	return videos, nil
}

// parseGulp reads the clips the split lists name: each a clip of frames
// frames sampled as GATE's sparse sampler does (uniform mode), its label
// the class. The training list fixes the number of classes.
func (n *Node) parseGulp(ctx context.Context, env *nodes.Env, rawDir string) (train, val, test *examples, err error) {
	videos, err := n.gulpChunks(rawDir)
	if err != nil {
		return nil, nil, nil, err
	}
	frames, channels, h, w := n.clipGeometry(defaultClipFrames)
	split := map[string]*examples{}
	err = n.eachListedClip(rawDir, func(name, p string, c gulp.Clip) error {
		ex := clipSplit(split, name, []int{frames, channels, h, w}, func() pixelSource {
			return &gulpFrames{ctx: ctx, channels: channels, h: h, w: w, progress: env.Progress, maxPixels: n.media.maxPixels}
		})
		lazy := ex.lazy.(*gulpFrames)
		v, ok := videos[c.Key]
		if !ok {
			return fmt.Errorf("%s: clip %q is in no gulp chunk", p, c.Key)
		}
		if c.End >= len(v.Frames) {
			return fmt.Errorf("%s: clip %q asks for frames %d..%d of %d", p, c.Key, c.Start, c.End, len(v.Frames))
		}
		var clip []gulpFrame
		for _, i := range gulp.SparseIndices(c.End-c.Start+1, frames) {
			clip = append(clip, gulpFrame{data: v.Chunk, frame: v.Frames[c.Start+i]})
		}
		lazy.clips = append(lazy.clips, clip)
		ex.y = append(ex.y, int64(c.Label))
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	train = split["train"]
	if train == nil || len(train.y) == 0 {
		return nil, nil, nil, fmt.Errorf("the training list names no clip")
	}
	if err := numberListClasses(split); err != nil {
		return nil, nil, nil, err
	}
	return train, split["val"], split["test"], nil
}

// eachListedClip calls fn with every clip of the split lists (train, val,
// test: GATE's sparse-sample lists, gulp or decord), list by list, in
// order.
func (n *Node) eachListedClip(rawDir string, fn func(split, list string, c gulp.Clip) error) error {
	return n.eachSplitFile(rawDir, "list", func(name, p string) error {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		clips, err := gulp.ReadSplit(f, p)
		f.Close()
		if err != nil {
			return err
		}
		for _, c := range clips {
			if err := fn(name, p, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// clipSplit returns split's examples of clips of shape, made with the
// pixel source lazy gives on first use.
func clipSplit(split map[string]*examples, name string, shape []int, lazy func() pixelSource) *examples {
	ex := split[name]
	if ex == nil {
		ex = &examples{dtype: safetensors.U8, shape: shape, task: "video", lazy: lazy()}
		split[name] = ex
	}
	return ex
}

// numberListClasses numbers the classes of split lists' clips: the
// training list's labels fix how many; a later list's label beyond them
// is an error.
func numberListClasses(split map[string]*examples) error {
	classes := 0
	for _, y := range split["train"].y {
		classes = max(classes, int(y)+1)
	}
	for _, s := range []string{"train", "val", "test"} {
		ex := split[s]
		if ex == nil {
			continue
		}
		for _, y := range ex.y {
			if int(y) >= classes {
				return fmt.Errorf("the %s list has label %d, but the training list's labels end at %d", s, y, classes-1)
			}
		}
		ex.classes = numericClasses(classes)
	}
	return nil
}

// gulpFrame is one sampled frame: its data file and place.
type gulpFrame struct {
	data  string
	frame gulp.Frame
}

// gulpFrames decodes clips' frames when a split takes them.
type gulpFrames struct {
	ctx            context.Context
	clips          [][]gulpFrame
	channels, h, w int
	progress       nodes.Progress
	maxPixels      int64 // max_image_pixels
}

func (g *gulpFrames) decode(idx []int) ([]byte, error) {
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	dec := imagedec.New()
	dec.MaxPixels = g.maxPixels
	var out []byte
	var buf []byte
	for k, i := range idx {
		if err := g.ctx.Err(); err != nil {
			return nil, err
		}
		for _, fr := range g.clips[i] {
			f := files[fr.data]
			if f == nil {
				var err error
				if f, err = os.Open(fr.data); err != nil {
					return nil, err
				}
				files[fr.data] = f
			}
			if int64(cap(buf)) < fr.frame.Length {
				buf = make([]byte, fr.frame.Length)
			}
			buf = buf[:fr.frame.Length]
			if _, err := f.ReadAt(buf, fr.frame.Offset); err != nil {
				return nil, fmt.Errorf("%s at byte %d: %w", fr.data, fr.frame.Offset, err)
			}
			if len(buf) < 2 || buf[0] != 0xff || buf[1] != 0xd8 {
				return nil, &imagedec.BadImageError{Err: fmt.Errorf("%s at byte %d: a frame that is not a JPEG", fr.data, fr.frame.Offset)}
			}
			var err error
			if out, err = dec.AppendCHW(out, buf, g.channels, g.h, g.w); err != nil {
				return nil, fmt.Errorf("%s at byte %d: a frame that cannot be decoded: %w", fr.data, fr.frame.Offset, err)
			}
		}
		if k%16 == 0 {
			g.progress.Update(int64(k), int64(len(idx)), "decoding clips")
		}
	}
	return out, nil
}
