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

#include "sni/ascii8.h"

/*
 * The n bytes at from copied to to, with lower their ASCII letters lowered: a word at a
 * time, and for a tail the last eight again (the bytes both words hold are written twice,
 * the same). Shorter than a word, byte by byte. The two may not overlap.
 */
static inline void
copy8(uint8_t *to, const uint8_t *from, size_t n, bool lower)
{
	uint64_t w;
	size_t i = 0;

	if (n < 8) {
		for (; i < n; i++) {
			uint8_t c = from[i];

			to[i] = lower && c >= 'A' && c <= 'Z' ? (uint8_t)(c | 0x20) : c;
		}
		return;
	}
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, from + i, 8);
		w = lower ? ascii_lower8(w) : w;
		memcpy(to + i, &w, 8);
	}
	if (i < n) {
		memcpy(&w, from + n - 8, 8);
		w = lower ? ascii_lower8(w) : w;
		memcpy(to + n - 8, &w, 8);
	}
}

#endif
