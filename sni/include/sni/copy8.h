/*
 * A name's few bytes copied eight at a time, for the hot path's DNS names: no call to
 * memcpy() for a length it cannot know, and nothing read or written past either's n bytes.
 */
#ifndef SNI_COPY8_H
#define SNI_COPY8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sni/ascii8.h"

/*
 * The n bytes at from copied to to, with lower their ASCII letters lowered: a word at a
 * time, and for a tail the last eight again (the bytes both words hold are written twice,
 * the same). Shorter than a word, byte by byte. The two may not overlap. With lower, true
 * when a letter was upper case (a tail's bytes looked at twice: any is one); the copy's
 * own test, a register's OR a word, where a second walk of the name would cost as much.
 */
static inline bool
copy8_upper(uint8_t *to, const uint8_t *from, size_t n, bool lower)
{
	uint64_t w, up = 0, u;
	size_t i = 0;

	if (n < 8) {
		for (; i < n; i++) {
			uint8_t c = from[i];
			bool big = lower && c >= 'A' && c <= 'Z';

			up |= big;
			to[i] = big ? (uint8_t)(c | 0x20) : c;
		}
		return up != 0;
	}
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, from + i, 8);
		u = lower ? ascii_upper8(w) : 0;
		up |= u;
		w |= u >> 2;
		memcpy(to + i, &w, 8);
	}
	if (i < n) {
		memcpy(&w, from + n - 8, 8);
		u = lower ? ascii_upper8(w) : 0;
		up |= u;
		w |= u >> 2;
		memcpy(to + n - 8, &w, 8);
	}
	return up != 0;
}

static inline void
copy8(uint8_t *to, const uint8_t *from, size_t n, bool lower)
{
	(void)copy8_upper(to, from, n, lower);
}

/*
 * copy8() without lowering, sixteen bytes at a time from sixteen on: half the steps for
 * the names of twenty-odd bytes an event carries. Nothing read or written past n bytes.
 */
static inline void
copy16(uint8_t *to, const uint8_t *from, size_t n)
{
	size_t i;

	if (n < 16) {
		copy8(to, from, n, false);
		return;
	}
	for (i = 0; i + 16 <= n; i += 16)
		memcpy(to + i, from + i, 16);
	if (i < n)
		memcpy(to + n - 16, from + n - 16, 16);
}

#if defined(__SSE2__)
/*
 * Sixteen bytes at from lowered to to: the high bit of each that was an upper-case letter
 * (in the sixteen bits returned). 'A'..'Z' moved to the bottom of the signed range is
 * what compares below it.
 */
static inline uint32_t
copy16_lower_block(uint8_t *to, const uint8_t *from)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)from);
	__m128i big = _mm_cmplt_epi8(_mm_add_epi8(x, _mm_set1_epi8((char)(-'A' - 128))),
	    _mm_set1_epi8((char)('Z' - 'A' + 1 - 128)));

	_mm_storeu_si128((__m128i *)(void *)to,
	    _mm_or_si128(x, _mm_and_si128(big, _mm_set1_epi8(0x20))));
	return (uint32_t)_mm_movemask_epi8(big);
}
#endif

/*
 * copy8_upper() with lower: the n bytes at from copied to to, lowered, and whether any was
 * an upper-case letter; sixteen bytes at a time where SSE2 is (the tail as the last
 * sixteen, some lowered again), else and below sixteen bytes copy8_upper()'s words. The
 * names of twenty-odd bytes a DNS message asks for take two steps, where words took three
 * and a tail. Nothing read or written past either's n bytes.
 */
static inline bool
copy16_lower(uint8_t *to, const uint8_t *from, size_t n)
{
#if defined(__SSE2__)
	if (n >= 16) {
		uint32_t big = 0;
		size_t i = 0;

		for (; i + 16 < n; i += 16)
			big |= copy16_lower_block(to + i, from + i);
		return (big | copy16_lower_block(to + n - 16, from + n - 16)) != 0;
	}
#endif
	return copy8_upper(to, from, n, true);
}

#endif
