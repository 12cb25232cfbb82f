// Package imageops resizes, crops and normalises float32 images laid out
// [C, H, W], computing what torchvision's tensor transforms compute:
// Resize with antialias=True (the separable filter of PIL and of PyTorch's
// _upsample_*_aa kernels), CenterCrop and Normalize.
package imageops

import (
	"fmt"
	"math"
)

// Interpolation names a resampling filter.
type Interpolation string

const (
	// Bilinear is the triangle filter (support 1).
	Bilinear Interpolation = "bilinear"
	// Bicubic is the cubic convolution filter with a = -0.5 (support 2),
	// as PIL and PyTorch's antialiased bicubic use.
	Bicubic Interpolation = "bicubic"
)

// ParseInterpolation accepts "bilinear" or "bicubic" ("" is bilinear).
func ParseInterpolation(s string) (Interpolation, error) {
	switch s {
	case "", string(Bilinear):
		return Bilinear, nil
	case string(Bicubic):
		return Bicubic, nil
	}
	return "", fmt.Errorf("interpolation %q is not bilinear or bicubic", s)
}

func (f Interpolation) support() float64 {
	if f == Bicubic {
		return 2
	}
	return 1
}

func (f Interpolation) weight(x float64) float64 {
	x = math.Abs(x)
	if f == Bicubic {
		const a = -0.5
		switch {
		case x < 1:
			return ((a+2)*x-(a+3))*x*x + 1
		case x < 2:
			return (((x-5)*x+8)*x - 4) * a
		}
		return 0
	}
	return max(0, 1-x)
}

// taps are one output position's input span and weights.
type taps struct {
	lo int
	w  []float64
}

// filterTaps computes, for every output of size out resampled from in,
// the input positions and normalised weights, as PyTorch's
// _compute_indices_weights_aa: the filter widens by the scale when
// shrinking (antialiasing) and keeps its support when growing.
func filterTaps(in, out int, f Interpolation) []taps {
	scale := float64(in) / float64(out)
	support := f.support()
	invscale := 1.0
	if scale >= 1 {
		support *= scale
		invscale = 1 / scale
	}
	res := make([]taps, out)
	for i := range out {
		center := scale * (float64(i) + 0.5)
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), in)
		w := make([]float64, max(hi-lo, 0))
		var total float64
		for j := range w {
			w[j] = f.weight((float64(j+lo) - center + 0.5) * invscale)
			total += w[j]
		}
		if total != 0 {
			for j := range w {
				w[j] /= total
			}
		}
		res[i] = taps{lo: lo, w: w}
	}
	return res
}

// Resize resamples img [c, h, w] to [c, oh, ow] with the filter,
// horizontally then vertically, antialiased (torchvision's
// Resize(antialias=True) on a float tensor).
func Resize(img []float32, c, h, w, oh, ow int, f Interpolation) []float32 {
	if oh == h && ow == w {
		return append([]float32(nil), img...)
	}
	tx, ty := filterTaps(w, ow, f), filterTaps(h, oh, f)
	tmp := make([]float64, c*h*ow)
	for p := range c * h {
		row := img[p*w : (p+1)*w]
		for x, t := range tx {
			var s float64
			for j, wt := range t.w {
				s += wt * float64(row[t.lo+j])
			}
			tmp[p*ow+x] = s
		}
	}
	out := make([]float32, c*oh*ow)
	for ch := range c {
		plane := tmp[ch*h*ow : (ch+1)*h*ow]
		for y, t := range ty {
			dst := out[(ch*oh+y)*ow : (ch*oh+y+1)*ow]
			for x := range ow {
				var s float64
				for j, wt := range t.w {
					s += wt * plane[(t.lo+j)*ow+x]
				}
				dst[x] = float32(s)
			}
		}
	}
	return out
}

// ShorterSide returns the size torchvision's Resize(size) gives an h x w
// image: the shorter side becomes size, the longer int(size * long /
// short).
func ShorterSide(h, w, size int) (oh, ow int) {
	if h <= w {
		return size, int(float64(size) * float64(w) / float64(h))
	}
	return int(float64(size) * float64(h) / float64(w)), size
}

// CenterCrop crops img [c, h, w] to [c, ch, cw] around its centre, offsets
// rounded half to even as torchvision's CenterCrop (Python's round). A
// crop larger than the image pads it with zeros, as torchvision does.
func CenterCrop(img []float32, c, h, w, ch, cw int) []float32 {
	top := int(math.RoundToEven(float64(h-ch) / 2))
	left := int(math.RoundToEven(float64(w-cw) / 2))
	out := make([]float32, c*ch*cw)
	for k := range c {
		for y := range ch {
			sy := y + top
			if sy < 0 || sy >= h {
				continue
			}
			for x := range cw {
				if sx := x + left; sx >= 0 && sx < w {
					out[(k*ch+y)*cw+x] = img[(k*h+sy)*w+sx]
				}
			}
		}
	}
	return out
}

// Normalize subtracts mean and divides by std per channel, in place.
func Normalize(img []float32, mean, std []float32) {
	c := len(mean)
	n := len(img) / c
	for k := range c {
		for i := k * n; i < (k+1)*n; i++ {
			img[i] = (img[i] - mean[k]) / std[k]
		}
	}
}
