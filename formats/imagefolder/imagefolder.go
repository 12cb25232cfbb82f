// Package imagefolder reads a directory of images with one sub-directory
// per class (PNG and JPEG), converting every image to a fixed size and
// channel count.
package imagefolder

import (
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // register decoders
	_ "image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/image/draw"
)

// Images is the decoded folder.
type Images struct {
	Classes []string
	Pixels  []byte // N*C*H*W, channel-major per image
	Labels  []int64
	Files   []string // relative paths, in example order
}

// Read loads root/<class>/<image>. classes, when non-nil, fixes the class
// order (so train and test folders agree); otherwise the sorted
// sub-directory names are used.
func Read(root string, classes []string, channels, height, width int) (*Images, error) {
	if channels != 1 && channels != 3 {
		return nil, fmt.Errorf("channels must be 1 or 3, not %d", channels)
	}
	if height <= 0 || width <= 0 {
		return nil, fmt.Errorf("image size must be positive, not %dx%d", height, width)
	}
	if classes == nil {
		entries, err := os.ReadDir(root)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				classes = append(classes, e.Name())
			}
		}
		sort.Strings(classes)
		if len(classes) == 0 {
			return nil, fmt.Errorf("%s: no class sub-directories", root)
		}
	}
	out := &Images{Classes: classes}
	dst := image.NewRGBA(image.Rect(0, 0, width, height))
	for ci, class := range classes {
		dir := filepath.Join(root, class)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
		for _, e := range entries {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if e.IsDir() || (ext != ".png" && ext != ".jpg" && ext != ".jpeg") {
				continue
			}
			if out.Pixels, err = AppendFile(out.Pixels, filepath.Join(dir, e.Name()), dst, channels); err != nil {
				return nil, err
			}
			out.Labels = append(out.Labels, int64(ci))
			out.Files = append(out.Files, filepath.ToSlash(filepath.Join(class, e.Name())))
		}
	}
	if len(out.Labels) == 0 {
		return nil, fmt.Errorf("%s: no PNG or JPEG images found", root)
	}
	return out, nil
}

// AppendFile decodes the PNG or JPEG file p, scales it to dst's size
// (bilinear; dst is scratch space) and appends its pixels to out as
// AppendCHW does.
func AppendFile(out []byte, p string, dst *image.RGBA, channels int) ([]byte, error) {
	img, err := decode(p)
	if err != nil {
		return out, err
	}
	return AppendImage(out, img, dst, channels), nil
}

// AppendImage scales img to dst's size (bilinear; dst is scratch space)
// and appends its pixels to out as AppendCHW does.
func AppendImage(out []byte, img image.Image, dst *image.RGBA, channels int) []byte {
	draw.BiLinear.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	return AppendCHW(out, dst, channels)
}

func decode(p string) (image.Image, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		off, _ := f.Seek(0, 1)
		return nil, fmt.Errorf("%s: byte %d: cannot decode image: %w", p, off, err)
	}
	return img, nil
}

// AppendCHW appends img's pixels to out channel-major ([C, H, W]), as
// grey (channels 1) or RGB (channels 3).
func AppendCHW(out []byte, img *image.RGBA, channels int) []byte {
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	start := len(out)
	out = append(out, make([]byte, channels*h*w)...)
	px := out[start:]
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := img.RGBAAt(x, y)
			if channels == 1 {
				px[y*w+x] = color.GrayModel.Convert(c).(color.Gray).Y
				continue
			}
			px[0*h*w+y*w+x] = c.R
			px[1*h*w+y*w+x] = c.G
			px[2*h*w+y*w+x] = c.B
		}
	}
	return out
}
