// Package videodec decodes chosen frames of a video file (Kinetics' MP4s)
// with ffmpeg, run as a subprocess: Debian's ffmpeg decodes every codec
// those files use, a crash or a damaged file stays in its own process, and
// gatepipe needs no cgo binding to libav. Frames come back as RGB bytes at
// the size asked for (scaled bilinearly, aspect ratio not kept, as GATE's
// decord reader resizes), so a clip's memory is known before it is read.
package videodec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatepipe/gatepipe/internal/procattr"
)

// ErrNoFFmpeg is returned when no ffmpeg can be run.
var ErrNoFFmpeg = errors.New("decoding video needs ffmpeg: install it (apt-get install ffmpeg) or put it on PATH")

// ErrBadVideo marks a video ffmpeg cannot decode, that stalls past the
// limit, or that is shorter than its list says: a dataset node refuses
// it with its name, or skips and counts it (on_bad_example = "skip").
var ErrBadVideo = errors.New("bad video")

// BadVideoError is a video that cannot be decoded.
type BadVideoError struct{ Err error }

func (e *BadVideoError) Error() string { return e.Err.Error() }

// Unwrap gives the cause.
func (e *BadVideoError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBadVideo) true.
func (e *BadVideoError) Is(target error) bool { return target == ErrBadVideo }

func badVideo(format string, args ...any) error {
	return &BadVideoError{Err: fmt.Errorf(format, args...)}
}

// DefaultTimeout bounds one video's decoding: a clip of a few hundred
// frames takes seconds, so an ffmpeg still running after this is stuck
// (on a damaged file, or a pipe nobody reads) and is killed.
const DefaultTimeout = 2 * time.Minute

// Decoder runs one ffmpeg per video.
type Decoder struct {
	// FFmpeg is the program (default "ffmpeg" on PATH).
	FFmpeg string
	// Timeout bounds each video (default DefaultTimeout).
	Timeout time.Duration
}

// Frames returns the frames at the given indices (0-based, in any order,
// repeats allowed) of the video at path, each [h, w, 3] RGB, in the order
// of indices. A video with fewer frames than an index asks for is an
// error naming the file and how many frames it has.
func (d Decoder) Frames(ctx context.Context, path string, indices []int, h, w int) ([]byte, error) {
	return d.FramesNamed(ctx, path, path, indices, h, w)
}

// FramesNamed is Frames for a video read from path but known to the user
// as name (its name in the source archive): errors, and ffmpeg's own
// messages, say name.
func (d Decoder) FramesNamed(ctx context.Context, path, name string, indices []int, h, w int) ([]byte, error) {
	if len(indices) == 0 {
		return nil, nil
	}
	if h <= 0 || w <= 0 || h > 8192 || w > 8192 {
		return nil, fmt.Errorf("%s: frame size %dx%d", name, h, w)
	}
	unique := slices.Clone(indices)
	slices.Sort(unique)
	unique = slices.Compact(unique)
	if unique[0] < 0 {
		return nil, fmt.Errorf("%s: frame %d", name, unique[0])
	}
	terms := make([]string, len(unique))
	for i, f := range unique {
		terms[i] = "eq(n\\," + strconv.Itoa(f) + ")"
	}
	filter := fmt.Sprintf("select='%s',scale=%d:%d:flags=bilinear", strings.Join(terms, "+"), w, h)
	prog := d.FFmpeg
	if prog == "" {
		prog = "ffmpeg"
	}
	if _, err := exec.LookPath(prog); err != nil {
		return nil, ErrNoFFmpeg
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	clipCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(clipCtx, prog, "-nostdin", "-hide_banner", "-v", "error", "-threads", "1",
		"-i", path, "-vf", filter, "-fps_mode", "passthrough", "-frames:v", strconv.Itoa(len(unique)),
		"-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1")
	// ffmpeg gets its own process group, killed whole, and the pipes are
	// closed soon after: a child it started cannot keep the read waiting.
	cmd.SysProcAttr = procattr.Child()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	frame := h * w * 3
	want := len(unique) * frame
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4096}
	stdout := &limitedBuffer{buf: bytes.NewBuffer(make([]byte, 0, want)), max: want + 1}
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: starting ffmpeg: %w", name, err)
	}
	waitErr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if clipCtx.Err() != nil {
		return nil, badVideo("%s: ffmpeg did not finish within %s (stuck on a damaged file?); killed (ffmpeg_timeout raises the limit)", name, timeout)
	}
	got := stdout.buf.Bytes()
	msg := strings.ReplaceAll(strings.TrimSpace(stderr.String()), path, name)
	switch {
	case waitErr != nil && len(got) < want:
		return nil, badVideo("%s: ffmpeg cannot decode it: %s", name, firstLine(msg, waitErr))
	case len(got) < want:
		have := len(got) / frame
		return nil, badVideo("%s: the video ends before frame %d (%d of the %d frames asked for were there): truncated, or shorter than its split list says", name, unique[have], have, len(unique))
	case len(got) > want:
		return nil, badVideo("%s: ffmpeg returned more than the %d frames asked for", name, len(unique))
	}
	out := make([]byte, 0, len(indices)*frame)
	for _, f := range indices {
		k, _ := slices.BinarySearch(unique, f)
		out = append(out, got[k*frame:(k+1)*frame]...)
	}
	return out, nil
}

// firstLine is ffmpeg's first error line, or the exit status.
func firstLine(msg string, err error) string {
	if msg == "" {
		return err.Error()
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return msg[:i]
	}
	return msg
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
