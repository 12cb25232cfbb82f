package dataset

// Format video_list: video files (Kinetics' MP4s, extracted from its
// tar.gz parts) named by GATE's decord split lists, decoded with ffmpeg
// only for the clips a split keeps.

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/gatepipe/gatepipe/formats/gulp"
	"github.com/gatepipe/gatepipe/formats/videodec"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// decodeVideoList checks a video_list dataset.
func (n *Node) decodeVideoList(decl nodes.Decl) hcl.Diagnostics {
	cfg := n.cfg
	var diags hcl.Diagnostics
	n.task = "video"
	if len(cfg.Train) == 0 {
		diags = append(diags, decl.Errorf("train", "Missing split lists", "Format \"video_list\" needs train = [\"splits_decord_videos/train.csv\"]: GATE's decord split lists (a first line 0, then \"path video_id label start_frame end_frame width height\" per clip)."))
	}
	if cfg.Task != nil && *cfg.Task != "video" {
		diags = append(diags, decl.Errorf("task", "Invalid task", "A video_list dataset is a video task (a class per clip), not %q.", *cfg.Task))
	}
	if len(cfg.Annotations) > 0 || cfg.ImageColumn != nil || cfg.LabelColumn != nil || cfg.SplitColumn != nil {
		diags = append(diags, decl.Errorf("annotations", "Invalid annotations", "A video_list dataset's clips and labels come from its split lists (train, val, test); annotations and columns do not apply."))
	}
	diags = append(diags, n.checkFrames(decl)...)
	return diags
}

// videoIndex finds videos by file name under the images directories (all
// the fetched files when none are named). A name in an earlier directory
// wins over the same name in a later one (Kinetics' replacements for its
// corrupted videos are listed first), and a directory walks past the
// others listed; one name twice in one directory is an error naming both.
func (n *Node) videoIndex(rawDir string) (map[string]string, error) {
	dirs := []string{rawDir}
	if len(n.cfg.Images) > 0 {
		var err error
		if dirs, err = resolveFiles(rawDir, n.cfg.Images); err != nil {
			return nil, fmt.Errorf("images: %w", err)
		}
	}
	listed := map[string]bool{}
	for _, d := range dirs {
		listed[filepath.Clean(d)] = true
	}
	index := map[string]string{}
	for _, dir := range dirs {
		mine := map[string]string{}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != dir && listed[filepath.Clean(p)] {
					return filepath.SkipDir // another images entry: its own turn
				}
				return nil
			}
			if !isVideo(p) {
				return nil
			}
			name := d.Name()
			if other, dup := mine[name]; dup {
				return fmt.Errorf("video %q is both %s and %s", name, other, p)
			}
			mine[name] = p
			return nil
		})
		if err != nil {
			return nil, err
		}
		for name, p := range mine {
			if _, ok := index[name]; !ok {
				index[name] = p
			}
		}
	}
	return index, nil
}

func isVideo(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".mp4", ".webm", ".mkv", ".avi", ".mov":
		return true
	}
	return false
}

// parseVideoList reads the clips the split lists name. A clip whose video
// is in none of the fetched files is left out, as GATE's Kinetics loader
// keeps only the listed videos it finds (so fewer downloaded parts give
// fewer clips); the log says how many. The training list fixes the
// number of classes.
func (n *Node) parseVideoList(ctx context.Context, env *nodes.Env, rawDir string) (train, val, test *examples, err error) {
	videos, err := n.videoIndex(rawDir)
	if err != nil {
		return nil, nil, nil, err
	}
	frames, channels, h, w := n.clipGeometry(defaultClipFrames)
	split := map[string]*examples{}
	missing := map[string]int{}
	err = n.eachListedClip(rawDir, func(name, _ string, c gulp.Clip) error {
		ex := clipSplit(split, name, []int{frames, channels, h, w}, func() pixelSource {
			return &videoClips{ctx: ctx, frames: frames, channels: channels, h: h, w: w, progress: env.Progress,
				dec: videodec.Decoder{Timeout: n.media.ffmpegTimeout}}
		})
		lazy := ex.lazy.(*videoClips)
		path, ok := videos[filepath.Base(filepath.FromSlash(c.Key))]
		if !ok {
			missing[name]++
			return nil
		}
		var idx []int
		for _, i := range gulp.SparseIndices(c.End-c.Start+1, frames) {
			idx = append(idx, c.Start+i)
		}
		lazy.clips = append(lazy.clips, videoClip{path: path, name: sourceName(rawDir, path), frames: idx})
		ex.y = append(ex.y, int64(c.Label))
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for s, k := range missing {
		env.Log.Warn().Str("split", s).Int("clips", k).Msg("listed clips whose video is not among the fetched files were left out, as GATE leaves them out")
	}
	train = split["train"]
	if train == nil || len(train.y) == 0 {
		return nil, nil, nil, fmt.Errorf("none of the training list's clips has its video among the fetched files (%d listed)", missing["train"])
	}
	if err := numberListClasses(split); err != nil {
		return nil, nil, nil, err
	}
	return train, split["val"], split["test"], nil
}

// videoClip is one clip: its file and the frames sampled from it.
type videoClip struct {
	path   string
	name   string // as the source names it (relative to the raw directory)
	frames []int
}

// videoClips decodes clips with ffmpeg when a split takes them, one
// process per clip, as many at once as there are cores.
type videoClips struct {
	ctx                    context.Context
	clips                  []videoClip
	frames, channels, h, w int
	progress               nodes.Progress
	dec                    videodec.Decoder
}

func (v *videoClips) decode(idx []int) ([]byte, error) {
	size := v.frames * v.channels * v.h * v.w
	out := make([]byte, len(idx)*size)
	err := decodeEach(v.ctx, len(idx), v.progress, "decoding videos", func(ctx context.Context, k int) error {
		c := v.clips[idx[k]]
		rgb, err := v.dec.FramesNamed(ctx, c.path, c.name, c.frames, v.h, v.w)
		if err != nil {
			return err
		}
		v.planar(rgb, out[k*size:(k+1)*size])
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// planar turns a clip's [frames, h, w, 3] RGB into dst [frames, channels,
// h, w] (one channel: the mean of the three).
func (v *videoClips) planar(rgb, dst []byte) {
	plane := v.h * v.w
	for f := range v.frames {
		src := rgb[f*plane*3 : (f+1)*plane*3]
		base := f * v.channels * plane
		for p := range plane {
			r, g, b := src[3*p], src[3*p+1], src[3*p+2]
			if v.channels == 1 {
				dst[base+p] = uint8((int(r) + int(g) + int(b) + 1) / 3)
				continue
			}
			dst[base+p], dst[base+plane+p], dst[base+2*plane+p] = r, g, b
		}
	}
}
