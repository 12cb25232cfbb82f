package imagedec

import "math"

// precisionBits is the fixed-point precision of the filter weights, as
// PIL's 8-bit resampler has it: 32 bits less 8 for the value and 2 for
// the sign and overflow of negative lobes.
const precisionBits = 32 - 8 - 2

// filterTaps are one axis's resampling weights: output pixel i reads
// count[i] input pixels from first[i] with weights w[i*ksize:].
type filterTaps struct {
	ksize int
	first []int
	count []int
	w     []int32
}

// bilinearTaps computes the antialiased triangle filter that PIL's
// resize(..., Image.BILINEAR) uses to map in pixels to out pixels: the
// filter's support is stretched by the scale when shrinking, every output
// pixel's weights are normalised to sum to one and then rounded to
// precisionBits fixed point, exactly as Pillow's precompute_coeffs and
// normalize_coeffs_8bpc do, so that the stored pixels equal PIL's.
func bilinearTaps(in, out int) *filterTaps {
	scale := float64(in) / float64(out)
	filterscale := max(scale, 1.0)
	support := 1.0 * filterscale
	ksize := int(math.Ceil(support))*2 + 1
	t := &filterTaps{ksize: ksize, first: make([]int, out), count: make([]int, out), w: make([]int32, out*ksize)}
	k := make([]float64, ksize)
	for xx := range out {
		center := (float64(xx) + 0.5) * scale
		ss := 1.0 / filterscale
		xmin := int(center - support + 0.5) // truncation toward zero, as C's cast
		if xmin < 0 {
			xmin = 0
		}
		xmax := int(center + support + 0.5)
		if xmax > in {
			xmax = in
		}
		xmax -= xmin
		ww := 0.0
		for x := range xmax {
			w := triangle((float64(x+xmin) - center + 0.5) * ss)
			k[x] = w
			ww += w
		}
		for x := range xmax {
			if ww != 0 {
				k[x] /= ww
			}
			if k[x] < 0 {
				t.w[xx*ksize+x] = int32(-0.5 + k[x]*(1<<precisionBits))
			} else {
				t.w[xx*ksize+x] = int32(0.5 + k[x]*(1<<precisionBits))
			}
		}
		t.first[xx], t.count[xx] = xmin, xmax
	}
	return t
}

func triangle(x float64) float64 {
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return 1 - x
	}
	return 0
}

// clip8 turns a fixed-point sum into a byte.
func clip8(s int32) byte {
	v := s >> precisionBits
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return byte(v)
}

// resizer scales interleaved 8-bit images (bands values a pixel) as PIL's
// two-pass resampler does: horizontally first, into only the rows the
// vertical pass reads, then vertically. It keeps its buffers and weights
// between calls of the same geometry.
type resizer struct {
	inW, inH, outW, outH int
	horiz, vert          *filterTaps
	tmp                  []byte
}

func (r *resizer) taps(inW, inH, outW, outH int) {
	if r.horiz != nil && r.inW == inW && r.inH == inH && r.outW == outW && r.outH == outH {
		return
	}
	r.inW, r.inH, r.outW, r.outH = inW, inH, outW, outH
	r.horiz, r.vert = bilinearTaps(inW, outW), bilinearTaps(inH, outH)
}

// resize scales src (inW x inH, bands values a pixel, rows stride bytes
// apart) into dst (outW x outH, packed).
func (r *resizer) resize(dst, src []byte, stride, bands, inW, inH, outW, outH int) {
	r.taps(inW, inH, outW, outH)
	needH, needV := inW != outW, inH != outH
	if !needH && !needV {
		for y := range outH {
			copy(dst[y*outW*bands:(y+1)*outW*bands], src[y*stride:y*stride+inW*bands])
		}
		return
	}
	rowFirst := r.vert.first[0]
	rowLast := r.vert.first[outH-1] + r.vert.count[outH-1]
	if !needV {
		rowFirst, rowLast = 0, inH
	}
	if !needH {
		resizeVertical(dst, src[rowFirst*stride:], stride, inW*bands, r.vert, rowFirst)
		return
	}
	rows := rowLast - rowFirst
	if cap(r.tmp) < rows*outW*bands {
		r.tmp = make([]byte, rows*outW*bands)
	}
	tmp := r.tmp[:rows*outW*bands]
	resizeHorizontal(tmp, src, stride, bands, r.horiz, outW, rowFirst, rows)
	if !needV {
		copy(dst, tmp)
		return
	}
	resizeVertical(dst, tmp, outW*bands, outW*bands, r.vert, rowFirst)
}

// resizeHorizontal scales rows [first, first+rows) of src into tmp.
func resizeHorizontal(tmp, src []byte, stride, bands int, t *filterTaps, outW, first, rows int) {
	const half = 1 << (precisionBits - 1)
	ks := t.ksize
	for y := range rows {
		row := src[(first+y)*stride:]
		out := tmp[y*outW*bands : (y+1)*outW*bands]
		switch bands {
		case 3:
			for xx := range outW {
				w := t.w[xx*ks : xx*ks+t.count[xx]]
				px := row[t.first[xx]*3 : (t.first[xx]+len(w))*3]
				s0, s1, s2 := int32(half), int32(half), int32(half)
				for x, k := range w {
					p := px[x*3 : x*3+3 : x*3+3]
					s0 += int32(p[0]) * k
					s1 += int32(p[1]) * k
					s2 += int32(p[2]) * k
				}
				o := out[xx*3 : xx*3+3 : xx*3+3]
				o[0], o[1], o[2] = clip8(s0), clip8(s1), clip8(s2)
			}
		default:
			for xx := range outW {
				w := t.w[xx*ks : xx*ks+t.count[xx]]
				px := row[t.first[xx] : t.first[xx]+len(w)]
				s := int32(half)
				for x, k := range w {
					s += int32(px[x]) * k
				}
				out[xx] = clip8(s)
			}
		}
	}
}

// resizeVertical scales the columns of src (rows stride bytes apart, its
// first row being source row shift) into dst, width values a row.
func resizeVertical(dst, src []byte, stride, width int, t *filterTaps, shift int) {
	const half = 1 << (precisionBits - 1)
	ks := t.ksize
	acc := make([]int32, width)
	for yy := range len(t.first) {
		w := t.w[yy*ks : yy*ks+t.count[yy]]
		first := t.first[yy] - shift
		for i := range acc {
			acc[i] = half
		}
		for y, k := range w {
			row := src[(first+y)*stride : (first+y)*stride+width]
			for i, v := range row {
				acc[i] += int32(v) * k
			}
		}
		out := dst[yy*width : (yy+1)*width]
		for i, s := range acc {
			out[i] = clip8(s)
		}
	}
}
