// Package videofixture writes small H.264 MP4 files with ffmpeg, for
// tests of the video readers (Kinetics' clips are H.264 in MP4).
package videofixture

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// Available reports whether ffmpeg can be run.
func Available() bool {
	_, err := exec.LookPath("ffmpeg")
	return err == nil
}

// Need skips a test where ffmpeg is missing, except in CI (CI set),
// where make deps-test installs it and its absence fails the test.
func Need(t testing.TB) {
	t.Helper()
	if Available() {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("ffmpeg is missing in CI: make deps-test installs it")
	}
	t.Skip("ffmpeg is not installed")
}

// MP4 encodes frames (each h*w*3 RGB bytes) at 10 frames per second
// into an H.264 MP4 at path, every frame a key frame so that decoded
// colours stay close to the given ones.
func MP4(path string, frames [][]byte, h, w int) error {
	var raw bytes.Buffer
	for i, f := range frames {
		if len(f) != h*w*3 {
			return fmt.Errorf("frame %d has %d bytes, want %d", i, len(f), h*w*3)
		}
		raw.Write(f)
	}
	cmd := exec.Command("ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-y",
		"-f", "rawvideo", "-pix_fmt", "rgb24", "-s", strconv.Itoa(w)+"x"+strconv.Itoa(h), "-r", "10", "-i", "pipe:0",
		"-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-g", "1", "-pix_fmt", "yuv444p", path)
	cmd.Stdin = &raw
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ffmpeg: %v: %s", err, out)
	}
	return nil
}

// Grey returns n frames of h x w whose frame i is the grey level
// step*i (mod 256).
func Grey(n, h, w, step int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte(step * i)}, h*w*3)
	}
	return out
}
