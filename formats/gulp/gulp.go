// Package gulp reads GulpIO chunk directories, the video format of GATE's
// HMDB51 and UCF-101 (kiyoonkim's *-gulprgb repositories): data_N.gulp
// files of concatenated JPEG frames, each padded to a multiple of four
// bytes, and beside each a meta_N.gmeta JSON mapping every video's key to
// its frame_info, [offset, padding, total length] per frame, and
// meta_data; and the split lists of GATE's sparse-sample loaders (a first
// line with the number of classes, then "gulp_key video_id label
// start_frame end_frame" per clip, or for its decord loader of video
// files "path video_id label start_frame end_frame width height").
package gulp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Frame locates one JPEG frame in a chunk's data file.
type Frame struct {
	Offset, Length int64 // the JPEG's bytes, padding excluded
}

// Video is one video's frames in a chunk.
type Video struct {
	Chunk  string // the data file's name (data_N.gulp)
	Frames []Frame
}

// maxFrames bounds one video's frame list (a damaged meta file cannot ask
// for more memory than its own size allows anyway; this keeps one video sane).
const maxFrames = 1 << 20

// ReadMeta reads a meta_N.gmeta file (name for errors) whose data file is
// chunk into each video's frames. Offsets and lengths must describe bytes
// inside a data file of dataSize bytes (dataSize < 0 skips that check); a
// damaged file is an error naming it and the byte offset.
func ReadMeta(r io.Reader, name, chunk string, dataSize int64) (map[string]Video, error) {
	dec := json.NewDecoder(r)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s at byte %d: %s", name, dec.InputOffset(), fmt.Sprintf(format, args...))
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fail("not a JSON object")
	}
	out := map[string]Video{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fail("%v", err)
		}
		key, _ := tok.(string)
		var v struct {
			FrameInfo [][]int64 `json:"frame_info"`
		}
		if err := dec.Decode(&v); err != nil {
			return nil, fail("video %q: %v", key, err)
		}
		if len(v.FrameInfo) == 0 || len(v.FrameInfo) > maxFrames {
			return nil, fail("video %q has %d frames", key, len(v.FrameInfo))
		}
		if _, dup := out[key]; dup {
			return nil, fail("video %q is listed twice", key)
		}
		frames := make([]Frame, len(v.FrameInfo))
		for i, fi := range v.FrameInfo {
			if len(fi) != 3 {
				return nil, fail("video %q frame %d: frame_info %v is not [offset, padding, length]", key, i, fi)
			}
			off, pad, n := fi[0], fi[1], fi[2]
			if off < 0 || pad < 0 || pad > 3 || n <= pad || (dataSize >= 0 && off+n > dataSize) || off+n < off {
				return nil, fail("video %q frame %d: frame_info %v does not fit a data file of %d bytes", key, i, fi, dataSize)
			}
			frames[i] = Frame{Offset: off, Length: n - pad}
		}
		out[key] = Video{Chunk: chunk, Frames: frames}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail("%v", err)
	}
	return out, nil
}

// Clip is one line of a split list: a video's frames start..end
// (inclusive) in the gulp directory under key, and its label.
type Clip struct {
	Key        string
	VideoID    int
	Label      int
	Start, End int
}

// ReadSplit reads a split list (name for errors): the number of classes
// (0 for single-label lists, the only kind read here), then clips. A line
// that is not five fields, a negative label or a frame range that is
// empty is an error naming the line.
func ReadSplit(r io.Reader, name string) ([]Clip, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("%s: empty (a split list starts with its number of classes)", name)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err != nil || n != 0 {
		return nil, fmt.Errorf("%s line 1: %q: only single-label lists (0) are read", name, sc.Text())
	}
	var out []Clip
	for line := 2; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 && len(f) != 7 {
			return nil, fmt.Errorf("%s line %d: %d fields, want gulp_key video_id label start_frame end_frame (or, for videos, path video_id label start_frame end_frame width height)", name, line, len(f))
		}
		var c Clip
		var errs [4]error
		c.Key = f[0]
		c.VideoID, errs[0] = strconv.Atoi(f[1])
		c.Label, errs[1] = strconv.Atoi(f[2])
		c.Start, errs[2] = strconv.Atoi(f[3])
		c.End, errs[3] = strconv.Atoi(f[4])
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %v", name, line, err)
			}
		}
		if c.Label < 0 || c.Start < 0 || c.End < c.Start {
			return nil, fmt.Errorf("%s line %d: label %d, frames %d..%d", name, line, c.Label, c.Start, c.End)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// SparseIndices picks out of n frames as GATE's sparse sampler does
// (frames repeated when the video is shorter; one frame per equal
// segment), deterministically: each segment's first frame, the sampler's
// uniform mode.
func SparseIndices(n, out int) []int {
	if n <= 0 || out <= 0 {
		return nil
	}
	frames := make([]int, 0, max(n, out))
	for i := range n {
		frames = append(frames, i)
	}
	if n < out {
		repeats := (out + n - 1) / n
		frames = frames[:0]
		for i := range n {
			for range repeats {
				frames = append(frames, i)
			}
		}
	}
	idx := make([]int, out)
	for k := range out {
		idx[k] = frames[len(frames)*k/out]
	}
	return idx
}
