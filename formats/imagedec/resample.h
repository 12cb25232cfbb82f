// The resize's two passes in C for the native build (resample_native.go).
// They compute exactly the integer sums of Pillow's 8-bit resampler that
// resample.go computes in Go: 22-bit fixed-point weights, never negative
// for the bilinear filter, so unsigned 32-bit sums that cannot overflow
// (a pixel's weights add up to 1 << 22). Every output pixel of a pass
// reads the same number of inputs n (the weights are padded with zeros).
#include <stdint.h>
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

static const char *gp_resample_backend(void) {
	if (gp_has(1)) return "C (SSE4.1 rows, AVX2 columns)";
	if (gp_has(0)) return "C (SSE4.1 rows)";
	return "C";
}
