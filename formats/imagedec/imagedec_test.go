package imagedec

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pilFixtures writes the fixtures of testdata/pilref.py with PIL's pixels
// for them at w x h (Debian's python3-pil; make deps-test installs it).
func pilFixtures(t *testing.T, w, h int) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("/usr/bin/python3", "testdata/pilref.py", dir, itoa(w), itoa(h))
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" && strings.Contains(string(out), "No module named 'PIL'") {
			t.Skip("python3-pil is missing (make deps-test installs it)")
		}
		t.Fatalf("pilref.py: %v\n%s", err, out)
	}
	return dir
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestMatchesPIL decodes and resizes each fixture as a PyTorch pipeline
// does with PIL and compares the pixels: with libjpeg-turbo every byte
// equals PIL's (the same decoder, the same resampler); with Go's JPEG
// decoder, whose colour conversion and upsampling round differently, a
// JPEG's pixels stay within a few levels. PNGs equal PIL's on both.
func TestMatchesPIL(t *testing.T) {
	const w, h = 224, 224
	dir := pilFixtures(t, w, h)
	files, _ := filepath.Glob(filepath.Join(dir, "*.[jp][pn]g"))
	if len(files) < 8 {
		t.Fatalf("fixtures: %v", files)
	}
	d := New()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		for _, c := range []struct {
			channels int
			suffix   string
		}{{3, ".rgb"}, {1, ".l"}} {
			want, err := os.ReadFile(filepath.Join(dir, name+c.suffix))
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.AppendCHW(nil, data, c.channels, h, w)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			maxDiff, sum := 0, 0
			for i := range h * w {
				for ch := range c.channels {
					diff := int(got[ch*h*w+i]) - int(want[i*c.channels+ch])
					diff = max(diff, -diff)
					maxDiff = max(maxDiff, diff)
					sum += diff
				}
			}
			mean := float64(sum) / float64(h*w*c.channels)
			exact := strings.HasSuffix(f, ".png") || backend != noTurbo
			switch {
			case exact && maxDiff != 0:
				t.Errorf("%s, %d channel(s): differs from PIL by up to %d (mean %.3f); want equal", name, c.channels, maxDiff, mean)
			case !exact && (maxDiff > 40 || mean > 2):
				t.Errorf("%s, %d channel(s): differs from PIL by up to %d (mean %.3f) with Go's decoder", name, c.channels, maxDiff, mean)
			}
			t.Logf("%s, %d channel(s): max diff %d, mean %.3f (%s)", name, c.channels, maxDiff, mean, backend)
		}
	}
}

// TestResizeShapes checks the resampler alone against hand-computed
// cases: identity, a 2:1 shrink that averages pairs, and an enlargement
// that keeps a constant image constant.
func TestResizeShapes(t *testing.T) {
	var r resizer
	src := []byte{10, 20, 30, 40, 50, 60, 70, 80}
	dst := make([]byte, 8)
	r.resize(dst, src, 8, 1, 8, 1, 8, 1)
	if string(dst) != string(src) {
		t.Fatalf("identity: %v", dst)
	}
	// Halving with the stretched triangle: output pixel i is centred on
	// input 2i+1 and weighs the four inputs 2i-1..2i+2 by 1/4, 3/4,
	// 3/4, 1/4, renormalised where the edges clip them.
	half := make([]byte, 4)
	r.resize(half, src, 8, 1, 8, 1, 4, 1)
	want := []byte{
		byte((10*3 + 20*3 + 30*1 + 3) / 7),
		byte((20*1 + 30*3 + 40*3 + 50*1 + 4) / 8),
		byte((40*1 + 50*3 + 60*3 + 70*1 + 4) / 8),
		byte((60*1 + 70*3 + 80*3 + 3) / 7),
	}
	for i := range half {
		if d := int(half[i]) - int(want[i]); d < -1 || d > 1 {
			t.Fatalf("halving: got %v, want about %v", half, want)
		}
	}
	flat := []byte{7, 7, 7, 7, 7, 7}
	big := make([]byte, 5*7)
	r.resize(big, flat, 3, 1, 3, 2, 5, 7)
	for _, v := range big {
		if v != 7 {
			t.Fatalf("a constant image enlarged: %v", big)
		}
	}
}

func TestRejectsBadInput(t *testing.T) {
	d := New()
	for _, data := range [][]byte{nil, []byte("not an image"), {0xff, 0xd8, 0xff, 0xe0, 1, 2, 3}} {
		if _, err := d.AppendCHW(nil, data, 3, 4, 4); err == nil {
			t.Errorf("%q decoded without an error", data)
		}
	}
	if _, err := d.AppendCHW(nil, []byte{0xff, 0xd8}, 2, 4, 4); err == nil {
		t.Error("2 channels accepted")
	}
}

// TestNativeResizeEqualsGo resizes random images of assorted geometries
// (shrinking, enlarging, one axis only, one and three bands, a source
// that ends at its last pixel) with the native passes and with Go's, and
// wants the same bytes.
func TestNativeResizeEqualsGo(t *testing.T) {
	if resizeBackend == "Go" {
		t.Skip("this build resizes in Go only (no turbojpeg tag)")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct{ inW, inH, outW, outH, bands int }{
		{500, 375, 224, 224, 3}, {375, 500, 224, 224, 1}, {31, 17, 224, 224, 3},
		{224, 300, 224, 224, 3}, {300, 224, 224, 224, 3}, {7, 5, 3, 9, 3},
		{1, 1, 5, 5, 3}, {2000, 30, 13, 30, 1}, {97, 89, 96, 90, 3},
		// Row counts around the AVX2 pass's groups of four.
		{500, 3, 224, 3, 3}, {50, 6, 20, 5, 3}, {13, 4, 5, 4, 3}, {8, 9, 3, 9, 3}, {640, 7, 9, 2, 3},
		// Many taps (odd and even counts) in the 16-bit multiply-adds.
		{2000, 30, 13, 30, 3}, {1000, 9, 250, 9, 3}, {901, 10, 300, 10, 3},
	}
	for _, c := range cases {
		src := make([]byte, c.inW*c.inH*c.bands)
		for i := range src {
			src[i] = byte(rng.IntN(256))
		}
		var native, portable resizer
		got := make([]byte, c.outW*c.outH*c.bands)
		native.resize(got, src, c.inW*c.bands, c.bands, c.inW, c.inH, c.outW, c.outH)
		want := make([]byte, len(got))
		portable.goOnly = true
		portable.resize(want, src, c.inW*c.bands, c.bands, c.inW, c.inH, c.outW, c.outH)
		if !bytes.Equal(got, want) {
			t.Errorf("%+v: the native resize differs from Go's", c)
		}
		// The one-call path into channel-major planes: Go's pixels, split.
		var planar resizer
		planes, small := make([]byte, len(got)), make([]byte, len(got))
		done := planar.resizePlanar(planes, small, src, c.inW*c.bands, c.bands, c.inW, c.inH, c.outW, c.outH)
		if both := c.inW != c.outW && c.inH != c.outH; done != both {
			t.Errorf("%+v: resizePlanar = %v, want %v", c, done, both)
		}
		if !done {
			continue
		}
		n := c.outW * c.outH
		for i := range n {
			for b := range c.bands {
				if planes[b*n+i] != want[i*c.bands+b] {
					t.Fatalf("%+v: planar pixel %d band %d = %d, Go's %d", c, i, b, planes[b*n+i], want[i*c.bands+b])
				}
			}
		}
	}
}
