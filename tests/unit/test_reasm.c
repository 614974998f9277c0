/*
 * reasm: segments are described as (offset from isn, bytes of a reference stream), so a
 * table row reads like the packet trace it stands for. After every step the test checks
 * the invariants reasm.h promises (t_reasm.h). Here: data in order, out of order, again
 * and in conflict, and across the wrap; the window's edges (before isn, full, scattered,
 * taken again, consumed): test_reasm_window.c.
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
test_status_str(void **state)
{
	(void)state;
	assert_string_equal(reasm_status_str(REASM_OK), "ok");
	assert_string_equal(reasm_status_str(REASM_CONFLICT), "conflict");
	assert_string_equal(reasm_status_str(REASM_FULL), "full");
	assert_string_equal(reasm_status_str(REASM_SCATTERED), "scattered");
	assert_string_equal(reasm_status_str((enum reasm_status)42), "unknown");
}

static void
test_in_order(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 1000);
	assert_int_equal(reasm_contiguous(&f.r), 0);
	for (uint32_t off = 0; off < 60; off += 10) {
		assert_int_equal(send_seg(&f, off, 10), REASM_OK);
		assert_int_equal(reasm_contiguous(&f.r), off + 10);
		expect_ranges(&f, (const uint32_t[]){ 0, off + 10 }, 1);
	}
	assert_memory_equal(f.buf, stream, 60);
}

static void
test_zero_length(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 5);
	assert_int_equal(reasm_add(&f.r, 5, NULL, 0), REASM_OK);
	assert_int_equal(reasm_add(&f.r, 5 + 1000, NULL, 0), REASM_OK);
	assert_int_equal(reasm_add(&f.r, 4, NULL, 0), REASM_OK);
	assert_int_equal(f.r.nb_ranges, 0);
}

/* Every order of four segments, the last of them a part of another. */
static void
test_reordered_permutations(void **state)
{
	static const uint32_t segs[4][2] = { { 0, 12 }, { 12, 8 }, { 20, 15 }, { 16, 4 } };
	unsigned int perms = 0;

	(void)state;
	for (unsigned int code = 0; code < 256; code++) {
		unsigned int order[4], used = 0;
		struct flow f;

		for (unsigned int i = 0; i < 4; i++) {	/* code as four base-4 digits */
			order[i] = code >> (2 * i) & 3;
			used |= 1u << order[i];
		}
		if (used != 0xf)
			continue;
		perms++;
		flow_init(&f, 0xdeadbeef);
		for (unsigned int i = 0; i < 4; i++) {
			assert_int_equal(send_seg(&f, segs[order[i]][0], segs[order[i]][1]),
			    REASM_OK);
			check_invariants(&f);
		}
		assert_int_equal(reasm_contiguous(&f.r), 35);
		expect_ranges(&f, (const uint32_t[]){ 0, 35 }, 1);
	}
	assert_int_equal(perms, 24);
}

static void
test_holes_coalesce(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 77);
	assert_int_equal(send_seg(&f, 10, 5), REASM_OK);
	assert_int_equal(send_seg(&f, 30, 5), REASM_OK);
	assert_int_equal(reasm_contiguous(&f.r), 0);
	expect_ranges(&f, (const uint32_t[]){ 10, 15, 30, 35 }, 2);
	assert_int_equal(send_seg(&f, 15, 15), REASM_OK);	/* adjacent both sides */
	expect_ranges(&f, (const uint32_t[]){ 10, 35 }, 1);
	assert_int_equal(send_seg(&f, 0, 10), REASM_OK);
	expect_ranges(&f, (const uint32_t[]){ 0, 35 }, 1);
	assert_int_equal(reasm_contiguous(&f.r), 35);
}

static void
test_retransmit_identical(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 1);
	assert_int_equal(send_seg(&f, 0, 20), REASM_OK);
	assert_int_equal(send_seg(&f, 0, 20), REASM_OK);
	assert_int_equal(send_seg(&f, 5, 10), REASM_OK);
	assert_int_equal(send_seg(&f, 10, 20), REASM_OK);	/* overlaps and extends */
	assert_int_equal(send_seg(&f, 40, 5), REASM_OK);
	assert_int_equal(send_seg(&f, 25, 20), REASM_OK);	/* spans a hole into a range */
	expect_ranges(&f, (const uint32_t[]){ 0, 45 }, 1);
}

/* A conflict leaves buffer and ranges as they were, and the flow still takes good data. */
static void
expect_conflict(struct flow *f, uint32_t off, size_t len, size_t flip)
{
	uint8_t bad[CAP], before[CAP];
	struct reasm saved = f->r;

	memcpy(before, f->buf, sizeof(before));
	memcpy(bad, stream + off, len);
	bad[flip] ^= 0x01;
	assert_int_equal(reasm_add(&f->r, f->r.isn + off, bad, len), REASM_CONFLICT);
	assert_memory_equal(f->buf, before, sizeof(before));
	assert_same_state(&f->r, &saved);
}

static void
test_retransmit_different(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 4000000000u);
	assert_int_equal(send_seg(&f, 0, 20), REASM_OK);
	expect_conflict(&f, 0, 20, 0);
	expect_conflict(&f, 0, 20, 19);
	expect_conflict(&f, 5, 10, 4);
	assert_int_equal(reasm_contiguous(&f.r), 20);
	assert_memory_equal(f.buf, stream, 20);
	assert_int_equal(send_seg(&f, 20, 10), REASM_OK);
	assert_int_equal(reasm_contiguous(&f.r), 30);
}

static void
test_partial_overlap_different(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 100);
	assert_int_equal(send_seg(&f, 10, 10), REASM_OK);
	assert_int_equal(send_seg(&f, 30, 10), REASM_OK);
	expect_conflict(&f, 5, 10, 9);		/* left edge: differs in the held part */
	expect_conflict(&f, 15, 10, 0);		/* right edge */
	expect_conflict(&f, 0, 45, 35);		/* spans both, differs in the second */
	expect_conflict(&f, 19, 12, 0);		/* the last held byte of one range */
	expect_ranges(&f, (const uint32_t[]){ 10, 20, 30, 40 }, 2);
	/* Different bytes only where nothing is held yet are just new data. */
	{
		uint8_t seg[10];

		memcpy(seg, stream + 20, 10);
		assert_int_equal(reasm_add(&f.r, f.r.isn + 20, seg, 10), REASM_OK);
	}
	expect_ranges(&f, (const uint32_t[]){ 10, 40 }, 1);
}

/* A stream that starts 10 bytes below 2^32 and runs across the wrap. */
static void
test_wraparound(void **state)
{
	struct flow f;

	(void)state;
	flow_init(&f, 0xfffffff6u);
	assert_int_equal(send_seg(&f, 20, 10), REASM_OK);	/* seq 10: after the wrap */
	assert_int_equal(reasm_add(&f.r, 0xfffffff6u, stream, 10), REASM_OK);
	assert_int_equal(reasm_add(&f.r, 0u, stream + 10, 10), REASM_OK);
	assert_int_equal(reasm_contiguous(&f.r), 30);
	assert_memory_equal(f.buf, stream, 30);
	assert_int_equal(reasm_add(&f.r, 0xfffffff0u, stream, 0), REASM_OK);
	/* Seq 0xfffffff0 is 6 before isn: only its last 4 bytes are stream bytes. */
	{
		uint8_t seg[10];

		memset(seg, 0xaa, 6);
		memcpy(seg + 6, stream, 4);
		assert_int_equal(reasm_add(&f.r, 0xfffffff0u, seg, 10), REASM_OK);
		seg[9] ^= 1;
		assert_int_equal(reasm_add(&f.r, 0xfffffff0u, seg, 10), REASM_CONFLICT);
	}
	check_invariants(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_str),
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_reordered_permutations),
		cmocka_unit_test(test_holes_coalesce),
		cmocka_unit_test(test_retransmit_identical),
		cmocka_unit_test(test_retransmit_different),
		cmocka_unit_test(test_partial_overlap_different),
		cmocka_unit_test(test_wraparound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
