/*
 * The vectorised one's-complement sum for long buffers (sni/csum.h), picked once at start
 * by what the CPU has: Debian builds for a baseline x86-64, so AVX2 is asked for at run
 * time rather than assumed at build time.
 *
 * Each 32-bit lane keeps the low and the high 16-bit word of its column apart, in two
 * accumulators, so nothing carries between words: a lane gains at most 0xffff a step, so
 * it cannot wrap within CSUM_LANE_STEPS steps; longer buffers go in chunks of that.
 */
#include <stdbool.h>

#include "csum_int.h"
#include "sni/csum.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CSUM_X86 1
#endif

#define CSUM_LANE_STEPS	32768	/* 32768 * 2 * 0xffff < 2^32 */

/* the words of the last bytes, fewer than a vector (so fewer than CSUM_VEC_MIN) */
static inline uint64_t
csum_tail(const uint8_t *p, size_t n, uint64_t acc)
{
	return csum_sum(p, n, acc);
}

#ifdef CSUM_X86
/*
 * The steps of a chunk: as many 32- or 64-byte steps as n holds, but never so many that
 * a lane could wrap.
 */
static inline size_t
csum_chunk(size_t n, size_t step)
{
	return n / step < CSUM_LANE_STEPS ? n / step : CSUM_LANE_STEPS;
}

/* the two 64-bit lanes' sum (each below 2^36: no carry is lost) */
__attribute__((target("sse2"))) static inline uint64_t
csum_lanes128(__m128i v)
{
	return (uint64_t)_mm_cvtsi128_si64(v) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
}

/* the 32-bit lanes of lo and hi widened to 64 and added, four to a lane */
__attribute__((target("sse2"))) static inline __m128i
csum_widen128(__m128i lo, __m128i hi)
{
	const __m128i low32 = _mm_set1_epi64x(0xffffffff);

	return _mm_add_epi64(_mm_add_epi64(_mm_and_si128(lo, low32), _mm_srli_epi64(lo, 32)),
	    _mm_add_epi64(_mm_and_si128(hi, low32), _mm_srli_epi64(hi, 32)));
}

__attribute__((target("sse2"))) uint64_t
csum_sum_sse2(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;
	const __m128i low = _mm_set1_epi32(0xffff);

	while (n >= 32) {
		__m128i lo = _mm_setzero_si128(), hi = _mm_setzero_si128();
		const uint8_t *end = p + csum_chunk(n, 32) * 32;

		n -= (size_t)(end - p);
		for (; p < end; p += 32) {
			__m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)p);
			__m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));

			lo = _mm_add_epi32(lo, _mm_and_si128(v0, low));
			hi = _mm_add_epi32(hi, _mm_srli_epi32(v0, 16));
			lo = _mm_add_epi32(lo, _mm_and_si128(v1, low));
			hi = _mm_add_epi32(hi, _mm_srli_epi32(v1, 16));
		}
		acc = csum_add(acc, csum_lanes128(csum_widen128(lo, hi)));
	}
	return csum_tail(p, n, acc);
}

__attribute__((target("avx2"))) uint64_t
csum_sum_avx2(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;
	const __m256i low = _mm256_set1_epi32(0xffff);

	while (n >= 64) {
		__m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
		const uint8_t *end = p + csum_chunk(n, 64) * 64;

		n -= (size_t)(end - p);
		for (; p < end; p += 64) {
			__m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
			__m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));

			lo = _mm256_add_epi32(lo, _mm256_and_si256(v0, low));
			hi = _mm256_add_epi32(hi, _mm256_srli_epi32(v0, 16));
			lo = _mm256_add_epi32(lo, _mm256_and_si256(v1, low));
			hi = _mm256_add_epi32(hi, _mm256_srli_epi32(v1, 16));
		}
		acc = csum_add(acc, csum_lanes128(_mm_add_epi64(
		    csum_widen128(_mm256_castsi256_si128(lo), _mm256_castsi256_si128(hi)),
		    csum_widen128(_mm256_extracti128_si256(lo, 1), _mm256_extracti128_si256(hi, 1)))));
	}
	return csum_sum_sse2(p, n, acc);	/* fewer than 64 bytes left */
}

static uint64_t (*csum_long)(const void *, size_t, uint64_t) = csum_sum_sse2;

__attribute__((constructor)) static void
csum_pick(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		csum_long = csum_sum_avx2;
}

bool
csum_has_avx2(void)
{
	return csum_long == csum_sum_avx2;
}
#else
static uint64_t
csum_long(const void *buf, size_t n, uint64_t acc)
{
	const uint8_t *p = buf;

	for (; n >= 8; p += 8, n -= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		acc = csum_add(acc, w);
	}
	return csum_tail(p, n, acc);
}
#endif

uint64_t
csum_sum_long(const void *buf, size_t n, uint64_t acc)
{
	return csum_long(buf, n, acc);
}
