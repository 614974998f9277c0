/*
 * reasm at its window's edges, segments described as in test_reasm.c (offset from isn,
 * bytes of the reference stream, t_reasm.h): bytes before isn, past the buffer, in more
 * ranges than it holds; a stream initialised again; the window slid by consuming; a fresh
 * stream's first bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "sni/reasm.h"
#include "t_reasm.h"

static void
test_before_isn(void **state)
{
	struct flow f;
	uint8_t seg[20];

	(void)state;
	flow_init(&f, 500);
	memset(seg, 0x55, sizeof(seg));
	assert_int_equal(reasm_add(&f.r, 480, seg, 20), REASM_OK);	/* wholly before */
	assert_int_equal(reasm_add(&f.r, 499, seg, 1), REASM_OK);	/* the SYN's seq */
	assert_int_equal(f.r.nb_ranges, 0);
	memcpy(seg + 8, stream, 12);
	assert_int_equal(reasm_add(&f.r, 492, seg, 20), REASM_OK);	/* straddles isn */
	expect_ranges(&f, (const uint32_t[]){ 0, 12 }, 1);
	/* Half the sequence space away counts as behind (RFC 1982), never as far ahead. */
	assert_int_equal(reasm_add(&f.r, 500 + 0x80000000u, seg, 20), REASM_OK);
	assert_int_equal(reasm_add(&f.r, 500 + 0x7fffffffu, seg, 20), REASM_FULL);
	expect_ranges(&f, (const uint32_t[]){ 0, 12 }, 1);
}

static void
test_full(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 9);
	assert_int_equal(send_seg(&f, 0, 50), REASM_OK);
	assert_int_equal(send_seg(&f, 50, 30), REASM_FULL);	/* 14 of 30 taken */
	assert_int_equal(reasm_contiguous(&f.r), CAP);
	assert_memory_equal(f.buf, stream, CAP);
	assert_int_equal(send_seg(&f, CAP, 1), REASM_FULL);	/* nothing inside */
	assert_int_equal(send_seg(&f, CAP + 100, 10), REASM_FULL);
	assert_int_equal(send_seg(&f, 60, 4), REASM_OK);	/* ends at cap exactly */
	expect_ranges(&f, (const uint32_t[]){ 0, CAP }, 1);

	/* The part inside is still checked for conflicts first. */
	{
		uint8_t seg[20];

		memcpy(seg, stream + 54, sizeof(seg));
		seg[0] ^= 1;
		assert_int_equal(reasm_add(&f.r, f.r.isn + 54, seg, sizeof(seg)),
		    REASM_CONFLICT);
	}
	/* A huge length does not wrap the end offset. */
	flow_init(&f, 9);
	assert_int_equal(reasm_add(&f.r, 9 + 10, stream + 10, SIZE_MAX), REASM_FULL);
	expect_ranges(&f, (const uint32_t[]){ 10, CAP }, 1);
	flow_init(&f, 9);
	reasm_init(&f.r, 9, f.buf, 0);
	assert_int_equal(send_seg(&f, 0, 1), REASM_FULL);
	assert_int_equal(f.r.nb_ranges, 0);
}

/*
 * reasm_init() on a stream already used (a hold's, taken again) leaves its old ranges in
 * place: the new stream must read as a fresh one, its old bytes and ranges never seen.
 */
static void
test_init_again(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 500);
	for (uint32_t i = 0; i < REASM_RANGES_MAX; i++)
		assert_int_equal(send_seg(&f, 1 + 3 * i, 1), REASM_OK);
	reasm_init(&f.r, 7000, f.buf, CAP / 2);
	assert_int_equal(f.r.isn, 7000);
	assert_int_equal(reasm_contiguous(&f.r), 0);
	assert_int_equal(send_seg(&f, 3, 2), REASM_OK);	/* a hole before it: not in order */
	assert_int_equal(reasm_contiguous(&f.r), 0);
	expect_ranges(&f, (const uint32_t[]){ 3, 5 }, 1);
	assert_int_equal(send_seg(&f, 0, 3), REASM_OK);
	expect_ranges(&f, (const uint32_t[]){ 0, 5 }, 1);
	assert_int_equal(send_seg(&f, 5, CAP), REASM_FULL);	/* the new, smaller buffer */
	expect_ranges(&f, (const uint32_t[]){ 0, CAP / 2 }, 1);
}

static void
test_scattered(void **state)
{
	struct flow f;
	struct reasm saved;

	(void)state;
	flow_init(&f, 31337);
	for (uint32_t i = 0; i < REASM_RANGES_MAX; i++)
		assert_int_equal(send_seg(&f, 2 + 4 * i, 2), REASM_OK);
	assert_int_equal(f.r.nb_ranges, REASM_RANGES_MAX);
	saved = f.r;
	assert_int_equal(send_seg(&f, 2 + 4 * REASM_RANGES_MAX, 2), REASM_SCATTERED);
	assert_int_equal(send_seg(&f, 0, 1), REASM_SCATTERED);
	assert_same_state(&f.r, &saved);
	assert_int_equal(f.buf[0], 0xee);
	/* Filling or touching a hole needs no new range and still works. */
	assert_int_equal(send_seg(&f, 0, 2), REASM_OK);
	assert_int_equal(send_seg(&f, 4 + 4 * REASM_RANGES_MAX, 2), REASM_SCATTERED);
	assert_int_equal(send_seg(&f, 4, 2), REASM_OK);
	assert_int_equal(f.r.nb_ranges, REASM_RANGES_MAX - 1);
	assert_int_equal(send_seg(&f, 4 + 4 * REASM_RANGES_MAX, 2), REASM_OK);
	assert_int_equal(send_seg(&f, 0, 4 + 4 * REASM_RANGES_MAX + 2), REASM_OK);
	expect_ranges(&f, (const uint32_t[]){ 0, 6 + 4 * REASM_RANGES_MAX }, 1);
}

/* Consuming slides the window: stream offset n becomes 0, out-of-order bytes move too. */
static void
test_consume(void **state)
{
	const uint32_t isn = 0xfffffff0;	/* the slide crosses 2^32 as well */
	struct flow f;
	struct reasm saved;

	(void)state;
	flow_init(&f, isn);
	assert_int_equal(reasm_add(&f.r, isn, stream, 20), REASM_OK);
	assert_int_equal(reasm_add(&f.r, isn + 30, stream + 30, 10), REASM_OK);
	saved = f.r;
	assert_false(reasm_consume(&f.r, 21));		/* more than is held in order */
	assert_same_state(&f.r, &saved);
	assert_true(reasm_consume(&f.r, 0));
	assert_same_state(&f.r, &saved);

	assert_true(reasm_consume(&f.r, 12));
	assert_int_equal(f.r.isn, isn + 12);
	assert_int_equal(reasm_contiguous(&f.r), 8);
	assert_memory_equal(f.buf, stream + 12, 8);
	assert_int_equal(f.r.nb_ranges, 2);
	assert_int_equal(f.r.ranges[1].start, 18);
	assert_int_equal(f.r.ranges[1].end, 28);
	assert_memory_equal(f.buf + 18, stream + 30, 10);

	/* the hole fills at its old sequence numbers; a changed byte is still a conflict */
	assert_int_equal(reasm_add(&f.r, isn + 20, stream + 20, 10), REASM_OK);
	assert_int_equal(reasm_contiguous(&f.r), 28);
	assert_int_equal(reasm_add(&f.r, isn + 11, (const uint8_t *)"\x01\x02", 2),
	    REASM_CONFLICT);

	/* everything consumed: the stream goes on past the old buffer end */
	assert_true(reasm_consume(&f.r, 28));
	assert_int_equal(f.r.nb_ranges, 0);
	assert_int_equal(reasm_add(&f.r, isn + 40, stream + 40, CAP), REASM_OK);
	assert_int_equal(reasm_contiguous(&f.r), CAP);
	assert_memory_equal(f.buf, stream + 40, CAP);
	assert_int_equal(reasm_add(&f.r, isn + 40 + CAP, stream + 40 + CAP, 1), REASM_FULL);
}

/* A fresh stream's first bytes: empty, within the buffer, past it. */
static void
test_add_first(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 77);
	assert_int_equal(reasm_add_first(&f.r, stream, 0), REASM_OK);
	assert_int_equal(f.r.nb_ranges, 0);
	assert_int_equal(reasm_add_first(&f.r, stream, 20), REASM_OK);
	expect_ranges(&f, (const uint32_t[]){ 0, 20 }, 1);
	flow_init(&f, 77);
	assert_int_equal(reasm_add_first(&f.r, stream, CAP + 1), REASM_FULL);
	expect_ranges(&f, (const uint32_t[]){ 0, CAP }, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_before_isn),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_scattered),
		cmocka_unit_test(test_init_again),
		cmocka_unit_test(test_consume),
		cmocka_unit_test(test_add_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
