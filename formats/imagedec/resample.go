package imagedec

import (
	"encoding/binary"
	"math"
)

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
	// The same weights with one count for every output, n: ufirst[i] is
	// moved back where first[i]+n would pass the input's end, and the
	// weights of uw[i*n:] are padded with zeros (adding nothing), so a
	// pass's inner loop runs the same number of times for every pixel.
	n      int
	ufirst []int32
	uw     []uint32
}

// uniform fills t's uniform-count weights for in input pixels.
func (t *filterTaps) uniform(in int) {
	t.n = 0
	for _, c := range t.count {
		t.n = max(t.n, c)
	}
	t.n = min(t.n, in)
	t.ufirst = make([]int32, len(t.first))
	t.uw = make([]uint32, len(t.first)*t.n)
	for i, f := range t.first {
		uf := min(f, in-t.n)
		t.ufirst[i] = int32(uf)
		for x := range t.count[i] {
			t.uw[i*t.n+f-uf+x] = uint32(t.w[i*t.ksize+x])
		}
	}
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
	t.uniform(in)
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
	// goOnly keeps to the Go passes (tests compare them with C's).
	goOnly bool
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
	rowFirst, rowLast := r.vert.rowsRead()
	if !needV {
		rowFirst, rowLast = 0, inH
	}
	if !needH {
		r.vertical(dst, src[rowFirst*stride:], stride, inW*bands, rowFirst)
		return
	}
	rows := rowLast - rowFirst
	r.tmp = grow(r.tmp, rows*outW*bands)
	tmp := r.tmp
	if r.goOnly || !nativeHorizontal(tmp, src, stride, bands, r.horiz, rowFirst, rows) {
		resizeHorizontal(tmp, src, stride, bands, r.horiz, outW, rowFirst, rows)
	}
	if !needV {
		copy(dst, tmp)
		return
	}
	r.vertical(dst, tmp, outW*bands, outW*bands, rowFirst)
}

// resizePlanar is resize into channel-major planes (bands planes of outW
// x outH) through small (outW x outH x bands), in one native call where
// the build has one and both axes change; false when it did not (the
// caller then resizes and splits).
func (r *resizer) resizePlanar(planes, small, src []byte, stride, bands, inW, inH, outW, outH int) bool {
	if r.goOnly || inW == outW || inH == outH {
		return false
	}
	r.taps(inW, inH, outW, outH)
	rowFirst, rowLast := r.vert.rowsRead()
	rows := rowLast - rowFirst
	r.tmp = grow(r.tmp, rows*outW*bands)
	return nativeResizePlanar(planes, small, r.tmp, src, stride, bands, r.horiz, r.vert, rowFirst, rows)
}

// vertical is the vertical pass, native where the build has it.
func (r *resizer) vertical(dst, src []byte, stride, width, shift int) {
	if r.goOnly || !nativeVertical(dst, src, stride, width, r.vert, shift) {
		resizeVertical(dst, src, stride, width, r.vert, shift)
	}
}

// rowsRead is the range of input rows [first, last) that the pass reads,
// with its weights as given or uniform.
func (t *filterTaps) rowsRead() (first, last int) {
	first, last = t.first[0], 0
	for i, f := range t.ufirst {
		first = min(first, int(f))
		last = max(last, int(f)+t.n, t.first[i]+t.count[i])
	}
	return first, last
}

// The passes below sum four or two values at once in the 32-bit lanes of
// a uint64 (SWAR): a bilinear weight is never negative and a pixel's
// weights add up to 1<<precisionBits, so a lane's sum stays below
// 256<<precisionBits < 1<<31 and never carries into the next lane. The
// sums are the same integers as one value at a time, so the same bytes.

// laneMask selects the low byte of each 32-bit lane.
const laneMask = 0x000000ff_000000ff

// half2 is the rounding half in both lanes.
const half2 = 1<<(precisionBits-1) | 1<<(precisionBits-1)<<32

// lane8 is a lane's sum as a byte.
func lane8(s uint32) byte { return byte(min(s>>precisionBits, 255)) }

// resizeHorizontal scales rows [first, first+rows) of src into tmp.
func resizeHorizontal(tmp, src []byte, stride, bands int, t *filterTaps, outW, first, rows int) {
	const half = 1 << (precisionBits - 1)
	ks := t.ksize
	for y := range rows {
		row := src[(first+y)*stride:]
		out := tmp[y*outW*bands : (y+1)*outW*bands]
		if bands == 3 {
			horizontalRGB(out, row, t)
			continue
		}
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

// horizontalRGB scales one row of RGB pixels: red and green in the two
// lanes of one sum, blue in another.
func horizontalRGB(out, row []byte, t *filterTaps) {
	ks := t.ksize
	for xx := range len(t.first) {
		w := t.w[xx*ks : xx*ks+t.count[xx]]
		px := row[t.first[xx]*3:]
		px = px[:3*len(w)]
		rg, b := uint64(half2), uint64(1<<(precisionBits-1))
		for _, k := range w {
			_ = px[2]
			kk := uint64(uint32(k))
			rg += (uint64(px[0]) | uint64(px[1])<<32) * kk
			b += uint64(px[2]) * kk
			px = px[3:]
		}
		o := out[xx*3 : xx*3+3 : xx*3+3]
		o[0], o[1], o[2] = lane8(uint32(rg)), lane8(uint32(rg>>32)), lane8(uint32(b))
	}
}

// resizeVertical scales the columns of src (rows stride bytes apart, its
// first row being source row shift) into dst, width values a row. Eight
// columns are summed at a time, four uint64s of two lanes each: bytes 0
// and 4 of the eight, 1 and 5, 2 and 6, 3 and 7.
func resizeVertical(dst, src []byte, stride, width int, t *filterTaps, shift int) {
	ks := t.ksize
	for yy := range len(t.first) {
		w := t.w[yy*ks : yy*ks+t.count[yy]]
		base := (t.first[yy] - shift) * stride
		out := dst[yy*width : (yy+1)*width]
		i := 0
		for ; i+8 <= width; i += 8 {
			a0, a1, a2, a3 := uint64(half2), uint64(half2), uint64(half2), uint64(half2)
			off := base + i
			for _, k := range w {
				u := binary.LittleEndian.Uint64(src[off:])
				kk := uint64(uint32(k))
				a0 += (u & laneMask) * kk
				a1 += (u >> 8 & laneMask) * kk
				a2 += (u >> 16 & laneMask) * kk
				a3 += (u >> 24 & laneMask) * kk
				off += stride
			}
			o := out[i : i+8 : i+8]
			o[0], o[4] = lane8(uint32(a0)), lane8(uint32(a0>>32))
			o[1], o[5] = lane8(uint32(a1)), lane8(uint32(a1>>32))
			o[2], o[6] = lane8(uint32(a2)), lane8(uint32(a2>>32))
			o[3], o[7] = lane8(uint32(a3)), lane8(uint32(a3>>32))
		}
		for ; i < width; i++ {
			s := uint32(1 << (precisionBits - 1))
			off := base + i
			for _, k := range w {
				s += uint32(src[off]) * uint32(k)
				off += stride
			}
			out[i] = lane8(s)
		}
	}
}
