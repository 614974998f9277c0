/*
 * sni/csum.h's one's-complement sums against fc_ref_sum() (frame_check.c, byte by byte,
 * sharing no code with csum.c): the inline sum and each vectorised kernel, at every length
 * to 600 bytes and every alignment, lengths around the vectors' widths, a buffer of all
 * ones long enough to need the kernels' chunks (where a lane could wrap), sums
 * continued from an accumulator, the short straight-line sum word for word, the test
 * of a received sum (csum_ok()) against the fold, and the chained adds against
 * csum_add(). The long sums are also held exactly (zero told from 0xffff) at random
 * lengths to 9000 from every alignment, on random bytes, all ones and all zeros, around
 * the length where AVX2's 32-bit total could wrap, and with the buffer's first or last
 * byte against an unmapped page.
 */
#include <setjmp.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "csum_int.h"
#include "frame_check.h"
#include "sni/csum.h"

static uint64_t rng = 0x243f6a8885a308d3ull;

/* the fold as the wire would read it: csum_fold sums host-order words */
static uint16_t
wire(uint16_t host)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (uint16_t)(host << 8 | host >> 8);
#else
	return host;
#endif
}

/* the same sum: one's complement has two zeros, which only all-zero data tells apart */
static void
assert_same_sum(uint16_t got_host, uint16_t want)
{
	uint16_t got = wire(got_host);

	if (got != want)
		assert_true((got == 0xffff && want == 0) || (got == 0 && want == 0xffff));
}

typedef uint64_t (*sum_fn)(const void *, size_t, uint64_t);

static uint64_t
sum_inline(const void *buf, size_t n, uint64_t acc)
{
	return csum_sum(buf, n, acc);
}

static void
check_kernel(sum_fn sum, size_t max_len)
{
	uint8_t buf[2048 + 64];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)fc_rnd(&rng);
	for (size_t align = 0; align < 33; align++)
		for (size_t len = 0; len <= max_len; len++)
			assert_same_sum(csum_fold(sum(buf + align, len, 0)),
			    fc_ref_sum(buf + align, len, 0));
	/* widths around the vectors' and the inline loop's steps, at the buffer's end */
	for (size_t len = 1000; len <= 2048; len += 31)
		assert_same_sum(csum_fold(sum(buf + 64 - (len & 31), len, 0)),
		    fc_ref_sum(buf + 64 - (len & 31), len, 0));
}

static void
test_inline_sum(void **state)
{
	(void)state;
	check_kernel(sum_inline, CSUM_VEC_MIN - 1);
}

static void
test_long_sum(void **state)
{
	(void)state;
	check_kernel(csum_sum_long, 600);
	check_kernel(sum_inline, 600);		/* the inline sum hands long ones over */
}

static void
test_sse2_sum(void **state)
{
	(void)state;
	check_kernel(csum_sum_sse2, 600);
}

static void
test_avx2_sum(void **state)
{
	(void)state;
	if (!csum_has_avx2()) {
		/* this machine picked SSE2: nothing else to hold it to */
		assert_true(csum_has_avx2() == false);
		return;
	}
	check_kernel(csum_sum_avx2, 600);
}

/*
 * All ones is the most a lane gains a step, all zeros (less 32768 a word once flipped) the
 * most it loses: 3 MiB of either passes every kernel's chunk.
 */
static void
test_lanes_never_wrap(void **state)
{
	size_t n = 3u << 20;
	uint8_t *buf = malloc(n + 1);
	sum_fn kernels[3] = { csum_sum_long, csum_sum_sse2,
	    csum_has_avx2() ? csum_sum_avx2 : csum_sum_sse2 };

	(void)state;
	assert_non_null(buf);
	memset(buf, 0xff, n + 1);
	buf[n - 7] = 0x12;		/* not all ones, so a lost carry shows */
	for (int k = 0; k < 3; k++)
		assert_same_sum(csum_fold(kernels[k](buf, n - 1, 0)), fc_ref_sum(buf, n - 1, 0));
	memset(buf, 0, n + 1);
	buf[n - 7] = 0x12;
	for (int k = 0; k < 3; k++)
		assert_same_sum(csum_fold(kernels[k](buf, n - 1, 0)), fc_ref_sum(buf, n - 1, 0));
	free(buf);
}

/* every vectorised sum this CPU runs, and the inline one that hands long ones over */
static size_t
long_kernels(sum_fn k[4])
{
	size_t n = 0;

	k[n++] = sum_inline;
	k[n++] = csum_sum_long;
	k[n++] = csum_sum_sse2;
	if (csum_has_avx2())
		k[n++] = csum_sum_avx2;
	return n;
}

/* each kernel's sum of the n bytes at b is exactly the reference's, zero told from 0xffff */
static void
assert_exact_sums(const uint8_t *b, size_t n)
{
	sum_fn k[4];
	size_t nk = long_kernels(k);
	uint16_t want = fc_ref_sum(b, n, 0);

	for (size_t i = 0; i < nk; i++)
		if (wire(csum_fold(k[i](b, n, 0))) != want)
			fail_msg("kernel %zu, %zu bytes at %p: 0x%04x, want 0x%04x", i, n,
			    (const void *)b, wire(csum_fold(k[i](b, n, 0))), want);
}

/*
 * Random lengths to 9000 from every alignment to 64, on random bytes, all ones (each word
 * the most it can be) and all zeros (the sum that must stay 0, not 0xffff).
 */
static void
test_long_exact(void **state)
{
	static uint8_t buf[9000 + 64];

	(void)state;
	for (int fill = 0; fill < 3; fill++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = fill == 0 ? (uint8_t)fc_rnd(&rng) : fill == 1 ? 0xff : 0;
		for (size_t t = 0; t < 2000; t++)
			assert_exact_sums(buf + t % 64, fc_rnd(&rng) % 9001);
		for (size_t len = 8990; len <= 9000; len++)
			assert_exact_sums(buf + 64 - (len & 63), len);
	}
}

/*
 * AVX2's lanes add up modulo 2^32, right while the words' sum fits: at CSUM_AVX2_MAX all
 * ones come within a word of 2^32, and longer buffers go in passes of that. Lengths around
 * it and its multiples, of all ones, all zeros and ones with a few zero words.
 */
static void
test_long_bound(void **state)
{
	size_t cap = 3 * CSUM_AVX2_MAX + 64;
	uint8_t *buf = malloc(cap);

	(void)state;
	assert_non_null(buf);
	for (int fill = 0; fill < 3; fill++) {
		memset(buf, fill == 1 ? 0 : 0xff, cap);
		if (fill == 2)
			for (size_t i = 5; i < cap; i += 4099)
				buf[i] = 0;
		for (size_t m = 1; m <= 2; m++)
			for (size_t d = 0; d <= 66; d++) {
				assert_exact_sums(buf, m * CSUM_AVX2_MAX - 33 + d);
				assert_exact_sums(buf + 1, m * CSUM_AVX2_MAX - 33 + d);
			}
	}
	free(buf);
}

/*
 * No sum reads outside its buffer: each length to 700 and some longer ones, ending at an
 * unmapped page and starting just after one, from each alignment to 32 (a read past either
 * end faults).
 */
static void
test_long_in_bounds(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), span = 4 * page;
	uint8_t *map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	uint8_t *lo, *hi;

	(void)state;
	assert_true(map != MAP_FAILED && span - 2 * page >= 3000);
	assert_int_equal(mprotect(map, page, PROT_NONE), 0);
	assert_int_equal(mprotect(map + span - page, page, PROT_NONE), 0);
	lo = map + page;
	hi = map + span - page;
	for (size_t i = 0; i < span - 2 * page; i++)
		lo[i] = (uint8_t)fc_rnd(&rng);
	for (size_t len = 0; len <= 3000; len += len < 700 ? 1 : 97)
		for (size_t a = 0; a < 32; a++) {
			assert_exact_sums(hi - len - a, len);
			assert_exact_sums(lo + a, len);
		}
	assert_int_equal(munmap(map, span), 0);
}

/* acc plus n bytes at b two at a time, as host-order words (the odd last one zero-padded) */
static uint64_t
word_sum(const uint8_t *b, size_t n, uint64_t acc)
{
	for (size_t i = 0; i < n; i += 2) {
		uint8_t pair[2] = { b[i], i + 1 < n ? b[i + 1] : 0 };
		uint16_t w;

		memcpy(&w, pair, 2);
		acc = csum_add(acc, w);
	}
	return acc;
}

/*
 * csum_sum_short(), the straight-line sum of a short segment and its one-load tail, folds
 * to exactly what the word-by-word sum does, from any accumulator, at every length it
 * takes and every alignment: on random bytes and on all ones (every add carries). Each
 * buffer is its own allocation, so a sanitizer sees a read past its end.
 */
static void
test_short_sum(void **state)
{
	const uint64_t accs[4] = { 0, 1, UINT64_MAX - 1, 0x8000ffff0000fffful };

	(void)state;
	for (int ones = 0; ones < 2; ones++)
		for (size_t len = 8; len < CSUM_VEC_MIN; len++)
			for (size_t align = 0; align < 16; align++) {
				uint8_t *buf = malloc(align + len);

				assert_non_null(buf);
				for (size_t i = 0; i < align + len; i++)
					buf[i] = ones ? 0xff : (uint8_t)fc_rnd(&rng);
				for (int a = 0; a < 4; a++)
					assert_int_equal(csum_fold(csum_sum_short(buf + align, len,
					    accs[a])), csum_fold(word_sum(buf + align, len, accs[a])));
				assert_same_sum(csum_fold(csum_sum_short(buf + align, len, 0)),
				    fc_ref_sum(buf + align, len, 0));
				free(buf);
			}
}

/* A sum continued from an accumulator is the sum of the whole. */
static void
test_continued(void **state)
{
	uint8_t buf[1500];

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)fc_rnd(&rng);
	for (size_t cut = 0; cut <= sizeof(buf); cut += 2)
		assert_same_sum(csum_fold(csum_sum(buf + cut, sizeof(buf) - cut,
		    csum_sum(buf, cut, 0))), fc_ref_sum(buf, sizeof(buf), 0));
	/* end-around carry: the largest accumulator plus one wraps to one, never to zero */
	assert_int_equal(csum_add(UINT64_MAX, 1), 1);
	assert_int_equal(csum_fold(UINT64_MAX), 0xffff);
	assert_int_equal(csum_fold(0), 0);
}

/* csum_ok(acc) says what csum_fold(acc) == 0xffff does */
static void
assert_ok_is_fold(uint64_t acc)
{
	if (csum_ok(acc) != (csum_fold(acc) == 0xffff))
		fail_msg("csum_ok(0x%016llx) is %d", (unsigned long long)acc, csum_ok(acc));
}

/*
 * csum_ok() against the fold: around zero and the top, every multiple of 65535 up to
 * 2^32 and its neighbours, random multiples, random words times 65535 (wrapping), random
 * words, and every word whose 16-bit halves sum to 0xffff or 0x1fffe with two of them
 * zero.
 */
static void
test_ok_is_fold(void **state)
{
	unsigned int ok = 0;

	(void)state;
	for (uint64_t d = 0; d < 70000; d++) {
		assert_ok_is_fold(d);
		assert_ok_is_fold(UINT64_MAX - d);
	}
	for (uint64_t k = 0; k <= (UINT64_C(1) << 32) / 65535 + 1; k++)
		for (uint64_t d = 0; d < 3; d++) {
			assert_ok_is_fold(k * 65535 + d - 1);
			assert_ok_is_fold((k * 65535) << 32 | d);
			assert_ok_is_fold(k * 65535 * 0x100000001ull);
		}
	for (int i = 0; i < 4000000; i++) {
		uint64_t r = (uint64_t)fc_rnd(&rng) << 32 | fc_rnd(&rng);

		assert_ok_is_fold(r);
		assert_ok_is_fold(r * 65535);
		assert_ok_is_fold(r / 65535 * 65535);
		ok += csum_ok(r / 65535 * 65535);
	}
	for (unsigned int a = 0; a < 4; a++)
		for (unsigned int b = 0; b < 4; b++)
			for (uint64_t w = 0; w <= 0xffff; w++) {
				assert_ok_is_fold(w << (16 * a) | (0xffff - w) << (16 * b));
				assert_ok_is_fold(w << (16 * a) | (uint64_t)0xffff << (16 * b));
			}
	assert_true(ok > 3900000);	/* nearly every multiple is a nonzero one */
	assert_true(csum_ok(UINT64_MAX) && csum_ok(65535) && !csum_ok(0) && !csum_ok(65534));
}

/*
 * csum_add3() and csum_add4w(), one carry chain each, against nested csum_add()s, value
 * for value: words at and around zero and the top (every carry out, and a carry into a
 * sum of all ones), and random words.
 */
static void
test_add_chains(void **state)
{
	static const uint64_t edge[] = { 0, 1, 2, 0x8000000000000000ull, UINT64_MAX / 2,
	    UINT64_MAX - 1, UINT64_MAX };
	const size_t n = sizeof(edge) / sizeof(edge[0]);

	(void)state;
	for (size_t a = 0; a < n; a++)
		for (size_t b = 0; b < n; b++)
			for (size_t c = 0; c < n; c++)
				for (size_t d = 0; d < n; d++) {
					uint64_t abc = csum_add(csum_add(edge[a], edge[b]), edge[c]);

					assert_true(csum_add3(edge[a], edge[b], edge[c]) == abc);
					assert_true(csum_add4w(edge[a], edge[b], edge[c], edge[d]) ==
					    csum_add(abc, edge[d]));
				}
	for (int i = 0; i < 1000000; i++) {
		uint64_t w[4];

		for (int k = 0; k < 4; k++)
			w[k] = (uint64_t)fc_rnd(&rng) << 32 | fc_rnd(&rng);
		assert_true(csum_add3(w[0], w[1], w[2]) ==
		    csum_add(csum_add(w[0], w[1]), w[2]));
		assert_true(csum_add4w(w[0], w[1], w[2], w[3]) ==
		    csum_add(csum_add(csum_add(w[0], w[1]), w[2]), w[3]));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inline_sum),
		cmocka_unit_test(test_long_sum),
		cmocka_unit_test(test_sse2_sum),
		cmocka_unit_test(test_avx2_sum),
		cmocka_unit_test(test_lanes_never_wrap),
		cmocka_unit_test(test_long_exact),
		cmocka_unit_test(test_long_bound),
		cmocka_unit_test(test_long_in_bounds),
		cmocka_unit_test(test_continued),
		cmocka_unit_test(test_short_sum),
		cmocka_unit_test(test_ok_is_fold),
		cmocka_unit_test(test_add_chains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
