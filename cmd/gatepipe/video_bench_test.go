package main

import (
	"archive/tar"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// BenchmarkVideoListParts stores a Kinetics-like video_list dataset with
// the real binary: 40 MP4 clips (10 s at 340 x 256, x264 of a noisy test
// pattern, about 9.6 MB each, ffmpeg) in four tar.gz parts, 8 frames a
// clip at 112 px, a fifth of the clips for test. It reports the apply's
// wall and CPU time and the peak bytes under the cache's tmp directory,
// polled every 50 ms: the parts are read in place, so that peak is the few
// videos copied out for ffmpeg at a time, where extracting the parts put
// all of them there (SPEC §5.1, "Compressed video parts streamed").
func BenchmarkVideoListParts(b *testing.B) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		b.Skip("ffmpeg is missing (apt-get install ffmpeg)")
	}
	work := b.TempDir()
	clips := videoParts(b, work, 40, 4)
	writeFile(&testing.T{}, filepath.Join(work, "main.hcl"), `
dataset "kinetics" {
  source { url = "part_0.tar.gz" }
  source { url = "part_1.tar.gz" }
  source { url = "part_2.tar.gz" }
  source { url = "part_3.tar.gz" }
  source { url = "train.csv" }
  format        = "video_list"
  train         = ["train.csv"]
  test_fraction = 0.2
  frames        = 8
  image_size    = [112, 112]
}
output "splits" { value = dataset.kinetics.splits }
`)
	for range b.N {
		cache := b.TempDir()
		peak := peakBytes(filepath.Join(cache, "tmp"), 50*time.Millisecond)
		wall, ru, rss := timedApply(b, work, cache)
		tmpPeak := float64(peak()) / 1e6
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		b.Logf("%d clips (%.0f MB of MP4 in 4 tar.gz parts): apply %.1f s wall, %.1f s CPU (%s, ffmpeg included), peak RSS %.0f MB; peak under the cache's tmp: %.1f MB",
			len(clips), float64(sumSizes(clips))/1e6, wall.Seconds(), cpu.Seconds(), cpuModel(), rss, tmpPeak)
		b.ReportMetric(tmpPeak, "peak-tmp-MB")
		b.ReportMetric(float64(sumSizes(clips))/1e6, "videos-MB")
		b.ReportMetric(cpu.Seconds(), "cpu-s")
	}
}

// videoParts writes n noisy 10 s MP4 clips with ffmpeg (two at a time),
// packs them round robin into parts tar.gz parts in dir with a decord
// split list (train.csv) naming them all, and returns the clips' paths.
func videoParts(b *testing.B, dir string, n, parts int) []string {
	b.Helper()
	vids := filepath.Join(b.TempDir(), "vids")
	os.MkdirAll(vids, 0o755)
	clips := make([]string, n)
	errs := make(chan error, 2)
	for w := range 2 {
		go func() {
			for i := w; i < n; i += 2 {
				clips[i] = filepath.Join(vids, fmt.Sprintf("vid%08d_000000_000010.mp4", i))
				out, err := exec.Command("ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=340x256:rate=25",
					"-vf", fmt.Sprintf("noise=alls=30:allf=t+u,hue=h=%d", 7*i), "-t", "10", "-c:v", "libx264", "-preset", "ultrafast",
					"-crf", "20", "-pix_fmt", "yuv420p", clips[i]).CombinedOutput()
				if err != nil {
					errs <- fmt.Errorf("ffmpeg: %v\n%s", err, out)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	var list strings.Builder
	list.WriteString("0\n")
	for i, c := range clips {
		fmt.Fprintf(&list, "c%d/%s %d %d 0 240 340 256\n", i%5, filepath.Base(c), i, i%5)
	}
	writeFile(&testing.T{}, filepath.Join(dir, "train.csv"), list.String())
	for p := range parts {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("part_%d.tar.gz", p)))
		if err != nil {
			b.Fatal(err)
		}
		zw := gzip.NewWriter(f)
		tw := tar.NewWriter(zw)
		for i := p; i < n; i += parts {
			data, err := os.ReadFile(clips[i])
			if err != nil {
				b.Fatal(err)
			}
			tw.WriteHeader(&tar.Header{Name: filepath.Base(clips[i]), Mode: 0o644, Size: int64(len(data))})
			tw.Write(data)
		}
		if err := tw.Close(); err != nil {
			b.Fatal(err)
		}
		zw.Close()
		f.Close()
	}
	// Datasets on disk were written well before they are stored.
	old := time.Now().Add(-time.Hour)
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		os.Chtimes(f, old, old)
	}
	return clips
}

func sumSizes(paths []string) int64 {
	var n int64
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil {
			n += info.Size()
		}
	}
	return n
}
