/*
 * A DNS name as a host's text: the labels of a question joined by dots, and checked to be
 * a host name's (letters, digits, '-', '_'), many bytes at a time. Its callers are the
 * query's judge (dp_dns.c) and the answer's name for its bindings (dp_dns_answer.c).
 */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dp_dns_int.h"

/*
 * A byte a host name's label may hold: a letter (either case: setting 0x20 makes it lower
 * case and no other byte a letter), a digit, '-' or '_'. Letters first, the most of them.
 */
static inline bool
dp_dns_host_byte(uint8_t c)
{
	return (uint8_t)((c | 0x20) - 'a') <= 'z' - 'a' || (uint8_t)(c - '0') <= 9 ||
	    c == '-' || c == '_';
}

#define DP_ONES8	0x0101010101010101ull
#define DP_HIGH8	(DP_ONES8 * 0x80)

/*
 * The high bit of each byte of x (high bits clear) from lo to hi: adding 0x80 - lo sets a
 * byte's high bit from lo up, adding 0x7f - hi from past hi up, and none carries.
 */
static inline uint64_t
dp_dns_in8(uint64_t x, uint8_t lo, uint8_t hi)
{
	return (x + DP_ONES8 * (uint8_t)(0x80 - lo)) & ~(x + DP_ONES8 * (uint8_t)(0x7f - hi)) &
	    DP_HIGH8;
}

/*
 * Of the eight text bytes w (memory order): the high bit of each that is not a host byte
 * (dp_dns_host_byte()) or a dot, in *bad, and of each dot, returned. A byte with its high
 * bit set is bad whatever the rest say.
 */
static inline uint64_t
dp_dns_text8(uint64_t w, uint64_t *bad)
{
	uint64_t x = w & ~DP_HIGH8, dots = dp_dns_in8(x, '.', '.');

	*bad |= ~(dp_dns_in8(x | DP_ONES8 * 0x20, 'a', 'z') | dp_dns_in8(x, '0', '9') |
	    dp_dns_in8(x, '-', '.') | dp_dns_in8(x, '_', '_')) & DP_HIGH8;
	*bad |= w & DP_HIGH8;
	return dots;
}

#if defined(__SSE2__)
/* Bytes of x in [lo, hi]: x - lo, moved to the signed range, below hi - lo + 1. */
static inline __m128i
dp_dns_in16(__m128i x, int lo, int hi)
{
	return _mm_cmplt_epi8(_mm_add_epi8(x, _mm_set1_epi8((char)(-lo - 128))),
	    _mm_set1_epi8((char)(hi - lo + 1 - 128)));
}

/*
 * dp_dns_text8() of sixteen text bytes x, a bit a byte: of each not a host byte or a dot
 * in *bad, of each dot in *dots. keep: the bytes to count.
 */
static inline void
dp_dns_text16(__m128i x, uint32_t keep, uint32_t *bad, size_t *dots)
{
	__m128i dot = _mm_cmpeq_epi8(x, _mm_set1_epi8('.'));
	__m128i ok = _mm_or_si128(_mm_or_si128(dot, dp_dns_in16(_mm_or_si128(x,
	    _mm_set1_epi8(0x20)), 'a', 'z')), _mm_or_si128(dp_dns_in16(x, '0', '9'),
	    _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('-')),
	    _mm_cmpeq_epi8(x, _mm_set1_epi8('_')))));

	*bad |= ~(uint32_t)_mm_movemask_epi8(ok) & keep;
	*dots += (size_t)__builtin_popcount((uint32_t)_mm_movemask_epi8(dot) & keep);
}

/*
 * dp_dns_text16() over text of n bytes, 8 or more: sixteen at a time, the last sixteen
 * (or with fewer, the first and the last eight) counting only the bytes not counted yet.
 */
static inline uint32_t
dp_dns_text_scan(const char *text, size_t n, size_t *dots)
{
	uint32_t bad = 0;
	size_t i = 0;

	if (n < 16) {
		dp_dns_text16(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(const void *)text),
		    _mm_loadl_epi64((const __m128i *)(const void *)(text + n - 8))),
		    0xffffu & ~(((1u << (16 - n)) - 1) << 8), &bad, dots);
		return bad;
	}
	for (; i + 16 <= n; i += 16)
		dp_dns_text16(_mm_loadu_si128((const __m128i *)(const void *)(text + i)), 0xffffu,
		    &bad, dots);
	if (i < n)
		dp_dns_text16(_mm_loadu_si128((const __m128i *)(const void *)(text + n - 16)),
		    0xffffu & ~((1u << (16 - (n - i))) - 1), &bad, dots);
	return bad;
}
#endif

/*
 * The portable scan of dp_dns_host_text(): the text (n bytes, 8 or more) eight bytes at a
 * time, the tail as the last eight bytes with the ones before it shifted out. Its bad
 * bits, and in *dots how many dots.
 */
static inline uint64_t
dp_dns_text_words(const char *text, size_t n, size_t *dots)
{
	uint64_t bad = 0, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, text + i, 8);
		*dots += (size_t)__builtin_popcountll(dp_dns_text8(w, &bad));
	}
	if (i < n) {
		memcpy(&w, text + n - 8, 8);
		w = w >> (8 * (8 - (n - i))) | (DP_ONES8 * 'a' & ~0ull << (8 * (n - i)));
		*dots += (size_t)__builtin_popcountll(dp_dns_text8(w, &bad));
	}
	return bad;
}

/*
 * The text of name (uncompressed wire form, len bytes, from the parser) in out (outlen
 * bytes) when every label of it can be a host name's: letters, digits, '-' and '_'
 * (service labels) only, and a label holding a '.' or a NUL, which reads as two labels in
 * text and could look like a name under an allowed suffix that it is not, cannot. Such a
 * name prints byte for byte (dp_dns_join()). -1, out[0] NUL, when it is not one, or does
 * not fit.
 *
 * The joined text is checked many bytes at a time: every byte a host byte or a dot, and
 * no more dots than the join wrote between labels (a label's own dot is one more). A
 * name shorter than eight bytes is checked byte by byte.
 */
/* dp_dns_host_text() with the scan of eight bytes and more by words, or (SSE2) by 16. */
static inline __attribute__((always_inline)) int
dp_dns_host_text_by(const uint8_t *name, size_t len, char *out, size_t outlen, bool words)
{
	uint64_t bad = 0;
	size_t joined, dots = 0, n;

	if (len == 0 || (len < 2 ? 1 : len - 2) >= outlen)
		return -1;
	n = (size_t)dp_dns_join_count(name, len, out, &joined);
	if (len < 2)
		return (int)n;
	if (n < 8) {
		for (size_t i = 0; i < n; i++) {
			if (out[i] == '.')
				dots++;
			else if (!dp_dns_host_byte((uint8_t)out[i]))
				bad = 1;
		}
	} else {
#if defined(__SSE2__)
		bad = words ? dp_dns_text_words(out, n, &dots) : dp_dns_text_scan(out, n, &dots);
#else
		(void)words;
		bad = dp_dns_text_words(out, n, &dots);
#endif
	}
	if (bad != 0 || dots != joined) {
		out[0] = '\0';
		return -1;
	}
	return (int)n;
}

int
dp_dns_host_text(const uint8_t *name, size_t len, char *out, size_t outlen)
{
	return dp_dns_host_text_by(name, len, out, outlen, false);
}

int
dp_dns_host_text_words(const uint8_t *name, size_t len, char *out, size_t outlen)
{
	return dp_dns_host_text_by(name, len, out, outlen, true);
}
