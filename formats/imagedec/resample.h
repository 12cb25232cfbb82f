// The resize's two passes in C for the native build (resample_native.go).
// They compute exactly the integer sums of Pillow's 8-bit resampler that
// resample.go computes in Go: 22-bit fixed-point weights, never negative
// for the bilinear filter, so unsigned 32-bit sums that cannot overflow
// (a pixel's weights add up to 1 << 22). Every output pixel of a pass
// reads the same number of inputs n (the weights are padded with zeros).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GP_PRECISION_BITS 22
#define GP_HALF (1u << (GP_PRECISION_BITS - 1))

static inline uint8_t gp_clip8(uint32_t s) {
	s >>= GP_PRECISION_BITS;
	return s > 255 ? 255 : (uint8_t)s;
}

// gp_horizontal_scalar scales rows of bands-value pixels.
static void gp_horizontal_scalar(uint8_t *tmp, const uint8_t *src, long stride, int bands, int rows,
                                 const int32_t *first, const uint32_t *w, int n, int out_w) {
	for (int y = 0; y < rows; y++) {
		const uint8_t *row = src + (long)y * stride;
		uint8_t *out = tmp + (long)y * out_w * bands;
		for (int xx = 0; xx < out_w; xx++) {
			const uint32_t *k = w + (long)xx * n;
			const uint8_t *px = row + (long)first[xx] * bands;
			for (int b = 0; b < bands; b++) {
				uint32_t s = GP_HALF;
				for (int x = 0; x < n; x++) s += px[x * bands + b] * k[x];
				out[xx * bands + b] = gp_clip8(s);
			}
		}
	}
}

// gp_vertical_body is the vertical pass, compiled twice below: as it is
// and for AVX2, where the compiler vectorises its inner loops.
#define GP_VERTICAL_BODY                                                           \
	for (int yy = 0; yy < out_h; yy++) {                                           \
		const uint32_t *k = w + (long)yy * n;                                      \
		const uint8_t *base = src + (long)(first[yy] - shift) * stride;            \
		uint8_t *out = dst + (long)yy * width;                                     \
		for (int i0 = 0; i0 < width; i0 += 512) {                                  \
			int m = width - i0 < 512 ? width - i0 : 512;                           \
			uint32_t acc[512];                                                     \
			for (int i = 0; i < m; i++) acc[i] = GP_HALF;                          \
			for (int y = 0; y < n; y++) {                                          \
				const uint8_t *r = base + (long)y * stride + i0;                   \
				uint32_t ky = k[y];                                                \
				for (int i = 0; i < m; i++) acc[i] += r[i] * ky;                   \
			}                                                                      \
			for (int i = 0; i < m; i++) {                                          \
				uint32_t v = acc[i] >> GP_PRECISION_BITS;                          \
				out[i0 + i] = v > 255 ? 255 : (uint8_t)v;                          \
			}                                                                      \
		}                                                                          \
	}

static void gp_vertical_plain(uint8_t *dst, const uint8_t *src, long stride, int width, int shift,
                              const int32_t *first, const uint32_t *w, int n, int out_h) {
	GP_VERTICAL_BODY
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

__attribute__((target("avx2"))) static void gp_vertical_avx2(uint8_t *dst, const uint8_t *src, long stride, int width,
                                                             int shift, const int32_t *first, const uint32_t *w, int n,
                                                             int out_h) {
	GP_VERTICAL_BODY
}

// gp_horizontal_rgb_sse41 scales rows of RGB pixels, one pixel's three
// sums in the lanes of a vector (the fourth lane reads the next pixel's
// red and is dropped). end is the end of the source buffer: a pixel at
// its very end is read in three bytes.
__attribute__((target("sse4.1"))) static void gp_horizontal_rgb_sse41(uint8_t *tmp, const uint8_t *src, const uint8_t *end,
                                                                      long stride, int rows, const int32_t *first,
                                                                      const uint32_t *w, int n, int out_w) {
	const __m128i half = _mm_set1_epi32(GP_HALF);
	for (int y = 0; y < rows; y++) {
		const uint8_t *row = src + (long)y * stride;
		uint8_t *out = tmp + (long)y * out_w * 3;
		for (int xx = 0; xx < out_w; xx++) {
			const uint32_t *k = w + (long)xx * n;
			const uint8_t *px = row + (long)first[xx] * 3;
			__m128i s = half;
			for (int x = 0; x < n; x++, px += 3) {
				int32_t v = 0;
				if (px + 4 <= end) memcpy(&v, px, 4);
				else memcpy(&v, px, 3);
				__m128i p = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(v));
				s = _mm_add_epi32(s, _mm_mullo_epi32(p, _mm_set1_epi32((int32_t)k[x])));
			}
			s = _mm_srli_epi32(s, GP_PRECISION_BITS);
			s = _mm_packus_epi32(s, s);
			s = _mm_packus_epi16(s, s);
			int32_t o = _mm_cvtsi128_si32(s);
			memcpy(out + xx * 3, &o, 3);
		}
	}
}

// gp_horizontal_rgb_avx2 scales four rows of RGB pixels at a time with
// 16-bit multiply-adds: each 22-bit weight k is split as kh * 2^11 + kl
// (both under 2^11, so they and the pixels fit signed 16-bit lanes), a
// pair of taps of one channel is one vpmaddwd lane, and the sum is
// (sum p*kh) * 2^11 + sum p*kl: the same integer as Pillow's sum of
// p * k, in fewer multiplies than 32-bit lanes take. One output pixel's
// weights serve the four rows, two rows to a vector. Rows whose last
// 8-byte read could pass end go to the SSE4.1 version.
__attribute__((target("avx2"))) static void gp_horizontal_rgb_avx2(uint8_t *tmp, const uint8_t *src, const uint8_t *end,
                                                                  long stride, int rows, const int32_t *first,
                                                                  const uint32_t *w, int n, int out_w) {
	int pairs = (n + 1) / 2;
	int32_t *kp = malloc(sizeof(int32_t) * 2 * (size_t)pairs * (size_t)out_w);
	if (kp == NULL) {
		gp_horizontal_rgb_sse41(tmp, src, end, stride, rows, first, w, n, out_w);
		return;
	}
	for (int xx = 0; xx < out_w; xx++) {
		for (int p = 0; p < pairs; p++) {
			uint32_t k0 = w[(long)xx * n + 2 * p], k1 = 2 * p + 1 < n ? w[(long)xx * n + 2 * p + 1] : 0;
			kp[((long)xx * pairs + p) * 2] = (int32_t)((k0 >> 11) | (k1 >> 11) << 16);
			kp[((long)xx * pairs + p) * 2 + 1] = (int32_t)((k0 & 0x7ff) | (k1 & 0x7ff) << 16);
		}
	}
	const __m256i half = _mm256_set1_epi32(GP_HALF);
	const __m256i shuf = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,
	                                      0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
	long reach = ((long)first[out_w - 1] + 2 * pairs - 2) * 3 + 8;
	int y = 0;
	for (; y + 4 <= rows && src + (long)(y + 3) * stride + reach <= end; y += 4) {
		const uint8_t *r0 = src + (long)y * stride;
		const uint8_t *r1 = r0 + stride, *r2 = r1 + stride, *r3 = r2 + stride;
		uint8_t *o0 = tmp + (long)y * out_w * 3;
		uint8_t *o1 = o0 + (long)out_w * 3, *o2 = o1 + (long)out_w * 3, *o3 = o2 + (long)out_w * 3;
		for (int xx = 0; xx < out_w; xx++) {
			const int32_t *k = kp + (long)xx * pairs * 2;
			long off = (long)first[xx] * 3;
			__m256i h01 = _mm256_setzero_si256(), l01 = h01, h23 = h01, l23 = h01;
			for (int p = 0; p < pairs; p++, off += 6) {
				__m256i kh = _mm256_set1_epi32(k[2 * p]), kl = _mm256_set1_epi32(k[2 * p + 1]);
				__m256i p01 = _mm256_shuffle_epi8(
				    _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(r0 + off))),
				                            _mm_loadl_epi64((const __m128i *)(r1 + off)), 1),
				    shuf);
				__m256i p23 = _mm256_shuffle_epi8(
				    _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(r2 + off))),
				                            _mm_loadl_epi64((const __m128i *)(r3 + off)), 1),
				    shuf);
				h01 = _mm256_add_epi32(h01, _mm256_madd_epi16(p01, kh));
				l01 = _mm256_add_epi32(l01, _mm256_madd_epi16(p01, kl));
				h23 = _mm256_add_epi32(h23, _mm256_madd_epi16(p23, kh));
				l23 = _mm256_add_epi32(l23, _mm256_madd_epi16(p23, kl));
			}
			__m256i s01 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h01, 11), l01), half);
			__m256i s23 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h23, 11), l23), half);
			s01 = _mm256_srli_epi32(s01, GP_PRECISION_BITS);
			s23 = _mm256_srli_epi32(s23, GP_PRECISION_BITS);
			__m256i pk = _mm256_packus_epi16(_mm256_packus_epi32(s01, s23), _mm256_setzero_si256());
			__m128i lo = _mm256_castsi256_si128(pk), hi = _mm256_extracti128_si256(pk, 1);
			int32_t v0 = _mm_cvtsi128_si32(lo), v2 = _mm_extract_epi32(lo, 1);
			int32_t v1 = _mm_cvtsi128_si32(hi), v3 = _mm_extract_epi32(hi, 1);
			memcpy(o0 + xx * 3, &v0, 3);
			memcpy(o1 + xx * 3, &v1, 3);
			memcpy(o2 + xx * 3, &v2, 3);
			memcpy(o3 + xx * 3, &v3, 3);
		}
	}
	free(kp);
	if (y < rows) {
		gp_horizontal_rgb_sse41(tmp + (long)y * out_w * 3, src + (long)y * stride, end, stride, rows - y, first, w, n,
		                        out_w);
	}
}

static int gp_has(int avx2) {
	__builtin_cpu_init();
	return avx2 ? __builtin_cpu_supports("avx2") : __builtin_cpu_supports("sse4.1");
}
#else
static int gp_has(int avx2) { return 0; }
#endif

static void gp_horizontal(uint8_t *tmp, const uint8_t *src, long src_len, long stride, int bands, int rows,
                          const int32_t *first, const uint32_t *w, int n, int out_w) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (bands == 3 && gp_has(1)) {
		gp_horizontal_rgb_avx2(tmp, src, src + src_len, stride, rows, first, w, n, out_w);
		return;
	}
	if (bands == 3 && gp_has(0)) {
		gp_horizontal_rgb_sse41(tmp, src, src + src_len, stride, rows, first, w, n, out_w);
		return;
	}
#endif
	gp_horizontal_scalar(tmp, src, stride, bands, rows, first, w, n, out_w);
}

static void gp_vertical(uint8_t *dst, const uint8_t *src, long stride, int width, int shift, const int32_t *first,
                        const uint32_t *w, int n, int out_h) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (gp_has(1)) {
		gp_vertical_avx2(dst, src, stride, width, shift, first, w, n, out_h);
		return;
	}
#endif
	gp_vertical_plain(dst, src, stride, width, shift, first, w, n, out_h);
}

// gp_split splits n pixels of bands interleaved values (1 or 3) into
// bands planes of n values each, one after another.
static void gp_split(uint8_t *planes, const uint8_t *px, int bands, long n) {
	if (bands == 1) {
		memcpy(planes, px, n);
		return;
	}
	uint8_t *r = planes, *g = planes + n, *b = planes + 2 * n;
	for (long i = 0; i < n; i++) {
		r[i] = px[3 * i];
		g[i] = px[3 * i + 1];
		b[i] = px[3 * i + 2];
	}
}

// gp_resize_planar runs both passes and the split in one call (one cgo
// transition an image instead of three): rows [row_first, row_first +
// rows) of src horizontally into tmp, tmp vertically into small, small
// into planes.
static void gp_resize_planar(uint8_t *planes, uint8_t *small, uint8_t *tmp, const uint8_t *src, long src_len,
                             long stride, int bands, int row_first, int rows, const int32_t *hfirst,
                             const uint32_t *hw, int hn, int out_w, const int32_t *vfirst, const uint32_t *vw, int vn,
                             int out_h) {
	gp_horizontal(tmp, src + (long)row_first * stride, src_len - (long)row_first * stride, stride, bands, rows,
	              hfirst, hw, hn, out_w);
	gp_vertical(small, tmp, (long)out_w * bands, out_w * bands, row_first, vfirst, vw, vn, out_h);
	gp_split(planes, small, bands, (long)out_w * out_h);
}

static const char *gp_resample_backend(void) {
	if (gp_has(1)) return "C (AVX2)";
	if (gp_has(0)) return "C (SSE4.1 rows)";
	return "C";
}
