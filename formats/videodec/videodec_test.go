package videodec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/internal/videofixture"
)

// TestFramesAreTheOnesAskedFor: frame i of the fixture has grey level
// 20*i; the decoded frames, in the order asked and repeated where asked,
// have those levels at the size asked.
func TestFramesAreTheOnesAskedFor(t *testing.T) {
	videofixture.Need(t)
	p := filepath.Join(t.TempDir(), "clip.mp4")
	if err := videofixture.MP4(p, videofixture.Grey(12, 32, 48, 20), 32, 48); err != nil {
		t.Fatal(err)
	}
	indices := []int{11, 0, 5, 5}
	got, err := Decoder{}.Frames(context.Background(), p, indices, 8, 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(indices)*8*6*3 {
		t.Fatalf("%d bytes", len(got))
	}
	for k, f := range indices {
		v := int(got[k*8*6*3+7])
		if want := 20 * f; v < want-4 || v > want+4 {
			t.Errorf("frame %d (index %d) has level %d, want about %d", k, f, v, want)
		}
	}
}

// TestBadVideosAreErrors: a truncated file, frames past the end and a
// missing ffmpeg are errors that say so and name the file.
func TestBadVideosAreErrors(t *testing.T) {
	videofixture.Need(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "clip.mp4")
	if err := videofixture.MP4(p, videofixture.Grey(12, 32, 32, 20), 32, 32); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	cut := filepath.Join(dir, "cut.mp4")
	os.WriteFile(cut, data[:len(data)/3], 0o644)
	for _, c := range []struct {
		path    string
		indices []int
		want    string
	}{
		{cut, []int{0, 11}, "cut.mp4"},
		{p, []int{3, 30}, "ends before frame 30 (1 of the 2"},
		{filepath.Join(dir, "garbage.mp4"), []int{0}, "garbage.mp4: ffmpeg cannot decode it"},
	} {
		if strings.HasSuffix(c.path, "garbage.mp4") {
			os.WriteFile(c.path, []byte("not a video at all"), 0o644)
		}
		_, err := Decoder{}.Frames(context.Background(), c.path, c.indices, 8, 8)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want an error with %q", filepath.Base(c.path), c.indices, err, c.want)
		}
	}
	if _, err := (Decoder{FFmpeg: "/nonexistent/ffmpeg"}).Frames(context.Background(), p, []int{0}, 8, 8); !errors.Is(err, ErrNoFFmpeg) {
		t.Errorf("no ffmpeg: %v", err)
	}
}

// TestHungFFmpegIsKilled: an ffmpeg that never finishes (here a script
// whose child holds the output pipe open) is killed at the timeout, with
// an error naming the file, instead of hanging the dataset node.
func TestHungFFmpegIsKilled(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "ffmpeg")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nsleep 600 &\nsleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Decoder{FFmpeg: fake, Timeout: 300 * time.Millisecond}.Frames(context.Background(), filepath.Join(dir, "clip.mp4"), []int{0}, 4, 4)
	if err == nil || !strings.Contains(err.Error(), "clip.mp4: ffmpeg did not finish within 300ms") {
		t.Fatalf("err = %v, want the clip named as timed out", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("returned after %s", d)
	}
}

// TestErrorsNameTheClipAsTheSourceDoes: a clip extracted to a temporary
// directory is named in errors (ffmpeg's own message included) by its
// path in the source, and the error is a BadVideoError that
// on_bad_example = "skip" can skip.
func TestErrorsNameTheClipAsTheSourceDoes(t *testing.T) {
	videofixture.Need(t)
	tmp := filepath.Join(t.TempDir(), "tmp", "raw-8127")
	os.MkdirAll(tmp, 0o755)
	p := filepath.Join(tmp, "abc.mp4")
	os.WriteFile(p, []byte("not a video at all"), 0o644)
	_, err := Decoder{}.FramesNamed(context.Background(), p, "kinetics_train.tar.gz/train/abc.mp4", []int{0}, 8, 8)
	if err == nil || !errors.Is(err, ErrBadVideo) || !strings.Contains(err.Error(), "kinetics_train.tar.gz/train/abc.mp4: ffmpeg cannot decode it") || strings.Contains(err.Error(), tmp) {
		t.Fatalf("err = %v", err)
	}
}
