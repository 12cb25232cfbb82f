package dataset

// Format video_list: video files (Kinetics' MP4s, extracted from its
// tar.gz parts) named by GATE's decord split lists, decoded with ffmpeg
// only for the clips a split keeps.

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gatepipe/gatepipe/formats/archive"
	"github.com/gatepipe/gatepipe/formats/gulp"
	"github.com/gatepipe/gatepipe/formats/videodec"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
	"golang.org/x/sync/errgroup"
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
// the fetched files when none are named), on disk or in archives read in
// place. A name in an earlier directory wins over the same name in a
// later one (Kinetics' replacements for its corrupted videos are listed
// first), and a directory walks past the others listed; one name twice
// in one directory is an error naming both. Values are tree names.
func (n *Node) videoIndex(tree *rawTree) (map[string]string, error) {
	dirs := []string{"."}
	if len(n.cfg.Images) > 0 {
		var err error
		if dirs, err = resolveNames(tree, n.cfg.Images); err != nil {
			return nil, fmt.Errorf("images: %w", err)
		}
	}
	listed := map[string]bool{}
	for _, d := range dirs {
		listed[path.Clean(d)] = true
	}
	index := map[string]string{}
	for _, dir := range dirs {
		mine := map[string]string{}
		err := fs.WalkDir(tree, dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != dir && listed[path.Clean(p)] {
					return fs.SkipDir // another images entry: its own turn
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
func (n *Node) parseVideoList(ctx context.Context, env *nodes.Env, tree *rawTree) (train, val, test *examples, err error) {
	rawDir := tree.dir
	if err := tree.materialize(slices.Concat(n.cfg.Train, n.cfg.Val, n.cfg.Test)); err != nil {
		return nil, nil, nil, err
	}
	videos, err := n.videoIndex(tree)
	if err != nil {
		return nil, nil, nil, err
	}
	frames, channels, h, w := n.clipGeometry(defaultClipFrames)
	split := map[string]*examples{}
	missing := map[string]int{}
	err = n.eachListedClip(rawDir, func(name, _ string, c gulp.Clip) error {
		ex := clipSplit(split, name, []int{frames, channels, h, w}, func() pixelSource {
			return &videoClips{ctx: ctx, tree: tree, frames: frames, channels: channels, h: h, w: w, progress: env.Progress,
				dec: videodec.Decoder{Timeout: n.media.ffmpegTimeout}}
		})
		lazy := ex.lazy.(*videoClips)
		video, ok := videos[filepath.Base(filepath.FromSlash(c.Key))]
		if !ok {
			missing[name]++
			return nil
		}
		var idx []int
		for _, i := range gulp.SparseIndices(c.End-c.Start+1, frames) {
			idx = append(idx, c.Start+i)
		}
		clip := videoClip{name: video, frames: idx, in: tree.layer(video)}
		if clip.in == nil {
			if clip.path, err = tree.diskPath("open", video); err != nil {
				return err
			}
		} else if clip.pos, err = clip.in.Position(video); err != nil {
			return err
		}
		lazy.clips = append(lazy.clips, clip)
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

// videoClip is one clip: its video and the frames sampled from it.
type videoClip struct {
	// name is the video's name in the tree (as the sources name it).
	name string
	// path is the video on disk; or in is the archive read in place that
	// holds it, at pos there.
	path   string
	in     *archive.Tree
	pos    int64
	frames []int
}

// videoClips decodes clips with ffmpeg when a split takes them, one
// process per clip, as many at once as there are cores. A video in an
// archive read in place is copied to a temporary file for ffmpeg (which
// needs to seek in an MP4) and removed once decoded; a compressed
// tarball's videos are copied in the archive's order, through one
// decompression, while the ones before them decode.
type videoClips struct {
	ctx                    context.Context
	tree                   *rawTree
	clips                  []videoClip
	frames, channels, h, w int
	progress               nodes.Progress
	dec                    videodec.Decoder
	// stream reads the compressed tarball of the last clip copied out.
	stream *archive.Stream
	from   *archive.Tree
}

// order puts the clips of compressed tarballs in their archives' order
// (the sources' order, then the position in each), after the others: the
// writer decodes them so, reading each tarball once.
func (v *videoClips) order(idx []int) []int {
	rank := map[*archive.Tree]int{}
	for _, c := range v.clips {
		if c.in != nil && c.in.Streamed() {
			if _, ok := rank[c.in]; !ok {
				rank[c.in] = len(rank) + 1
			}
		}
	}
	if len(rank) == 0 {
		return nil
	}
	key := func(k int) (int, int64) {
		c := v.clips[idx[k]]
		if c.in == nil || !c.in.Streamed() {
			return 0, int64(k)
		}
		return rank[c.in], c.pos
	}
	out := make([]int, len(idx))
	for k := range out {
		out[k] = k
	}
	slices.SortStableFunc(out, func(a, b int) int {
		ra, pa := key(a)
		rb, pb := key(b)
		if ra != rb {
			return ra - rb
		}
		return cmp.Compare(pa, pb)
	})
	return out
}

func (v *videoClips) decode(idx []int) ([]byte, error) { return v.decodeInto(nil, idx) }

// decodeInto is decode into dst's storage when it is large enough (every
// clip's bytes are written).
func (v *videoClips) decodeInto(dst []byte, idx []int) ([]byte, error) {
	size := v.frames * v.channels * v.h * v.w
	out := dst[:0]
	if cap(out) < len(idx)*size {
		out = make([]byte, len(idx)*size)
	}
	out = out[:len(idx)*size]
	ctx, cancel := context.WithCancel(v.ctx)
	defer cancel()
	// Videos come out of their archives on this goroutine, in idx's order
	// (the writer's: archive order), at most one per core ahead of the
	// decoders.
	workers := runtime.GOMAXPROCS(0)
	ready := make(chan readyClip, workers)
	var copyErr error
	go func() {
		defer close(ready)
		copyErr = v.handOut(ctx, idx, ready)
	}()
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	done := 0
	for range workers {
		g.Go(func() error {
			for r := range ready {
				err := gctx.Err()
				if err == nil {
					err = v.decodeClip(gctx, v.clips[idx[r.k]], r.path, out[r.k*size:(r.k+1)*size])
				}
				r.release()
				if err != nil {
					cancel()
					return err
				}
				mu.Lock()
				done++
				if done%16 == 0 || done == len(idx) {
					v.progress.Update(int64(done), int64(len(idx)), "decoding videos")
				}
				mu.Unlock()
			}
			return nil
		})
	}
	err := g.Wait()
	for r := range ready { // what the decoders left when one failed
		r.release()
	}
	if err == nil {
		err = copyErr
	}
	if err == nil {
		err = v.ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// handOut sends the clips idx to the decoders in turn, each with its
// video's path: a clip's file on disk, or a temporary copy out of its
// archive. It stops at the first copy that fails, or when ctx ends.
func (v *videoClips) handOut(ctx context.Context, idx []int, ready chan<- readyClip) error {
	// last is the latest copy, held here too while later clips may still
	// want it.
	var last *tempVideo
	defer func() { readyClip{temp: last}.release() }()
	for k, i := range idx {
		c := v.clips[i]
		r := readyClip{k: k, path: c.path}
		if c.in != nil {
			// Clips of one video (several spans of it) follow each other
			// in archive order: one copy serves them all.
			if last == nil || last.in != c.in || last.name != c.name {
				p, err := v.copyOut(c)
				if err != nil {
					return err
				}
				readyClip{temp: last}.release()
				last = &tempVideo{in: c.in, name: c.name, path: p}
				last.users.Add(1)
			}
			last.users.Add(1)
			r.path, r.temp = last.path, last
		}
		select {
		case ready <- r:
		case <-ctx.Done():
			r.release()
			return nil
		}
	}
	return nil
}

// readyClip is the k-th clip of a batch with its video at path (a
// temporary copy when temp is set).
type readyClip struct {
	k    int
	path string
	temp *tempVideo
}

// release drops the clip's hold on its temporary copy, removing the
// copy after its last clip.
func (r readyClip) release() {
	if r.temp != nil && r.temp.users.Add(-1) == 0 {
		os.Remove(r.temp.path)
	}
}

// tempVideo is a video copied out of an archive, removed once every clip
// given it has been decoded.
type tempVideo struct {
	in    *archive.Tree
	name  string
	path  string
	users atomic.Int32
}

// decodeClip decodes one clip from the video at p into dst.
func (v *videoClips) decodeClip(ctx context.Context, c videoClip, p string, dst []byte) error {
	rgb, err := v.dec.FramesNamed(ctx, p, c.name, c.frames, v.h, v.w)
	if err != nil {
		return err
	}
	v.planar(rgb, dst)
	return nil
}

// copyOut copies the clip's video out of its archive into a temporary
// file of the node's raw directory, keeping its extension (ffmpeg's
// guess of the container).
func (v *videoClips) copyOut(c videoClip) (string, error) {
	if v.from != c.in {
		v.stream, v.from = c.in.Stream(), c.in
	}
	f, err := os.CreateTemp(v.tree.dir, "video-*"+path.Ext(c.name))
	if err != nil {
		return "", err
	}
	err = v.stream.Copy(c.name, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("%s: %w", c.name, err)
	}
	return f.Name(), nil
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
