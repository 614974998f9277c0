/*
 * reasm: segments are described as (offset from isn, bytes of a reference stream), so a
 * table row reads like the packet trace it stands for. After every step the test checks
 * the invariants reasm.h promises: ranges sorted, disjoint, not adjacent, inside cap, and
 * every held byte equal to the stream.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "sni/reasm.h"

#define CAP	64

/* The stream the client sends: byte i is stream[i]. */
static uint8_t stream[4 * CAP];

static void
stream_init(void)
{
	for (size_t i = 0; i < sizeof(stream); i++)
		stream[i] = (uint8_t)(i * 7 + 3);
}

struct flow {
	struct reasm r;
	uint8_t buf[CAP];
};

static void
flow_init(struct flow *f, uint32_t isn)
{
	stream_init();
	memset(f->buf, 0xee, sizeof(f->buf));
	reasm_init(&f->r, isn, f->buf, CAP);
}

/* Stream bytes [off, off + len) sent at their own sequence number. */
static enum reasm_status
send_seg(struct flow *f, uint32_t off, size_t len)
{
	return reasm_add(&f->r, f->r.isn + off, stream + off, len);
}

static void
check_invariants(const struct flow *f)
{
	const struct reasm *r = &f->r;

	assert_true(r->nb_ranges <= REASM_RANGES_MAX);
	for (uint32_t i = 0; i < r->nb_ranges; i++) {
		assert_true(r->ranges[i].start < r->ranges[i].end);
		assert_true(r->ranges[i].end <= r->cap);
		if (i > 0)
			assert_true(r->ranges[i - 1].end < r->ranges[i].start);
		assert_memory_equal(f->buf + r->ranges[i].start, stream + r->ranges[i].start,
		    r->ranges[i].end - r->ranges[i].start);
	}
}

static void
expect_ranges(const struct flow *f, const uint32_t *want, uint32_t nb)
{
	check_invariants(f);
	assert_int_equal(f->r.nb_ranges, nb);
	for (uint32_t i = 0; i < nb; i++) {
		assert_int_equal(f->r.ranges[i].start, want[2 * i]);
		assert_int_equal(f->r.ranges[i].end, want[2 * i + 1]);
	}
}

/* The held state, field by field (struct padding is not part of it). */
static void
assert_same_state(const struct reasm *a, const struct reasm *b)
{
	assert_ptr_equal(a->buf, b->buf);
	assert_int_equal(a->cap, b->cap);
	assert_int_equal(a->isn, b->isn);
	assert_int_equal(a->nb_ranges, b->nb_ranges);
	for (uint32_t i = 0; i < a->nb_ranges; i++) {
		assert_int_equal(a->ranges[i].start, b->ranges[i].start);
		assert_int_equal(a->ranges[i].end, b->ranges[i].end);
	}
}

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
		cmocka_unit_test(test_status_str),
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_reordered_permutations),
		cmocka_unit_test(test_holes_coalesce),
		cmocka_unit_test(test_retransmit_identical),
		cmocka_unit_test(test_retransmit_different),
		cmocka_unit_test(test_partial_overlap_different),
		cmocka_unit_test(test_wraparound),
		cmocka_unit_test(test_before_isn),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_scattered),
		cmocka_unit_test(test_init_again),
		cmocka_unit_test(test_consume),
		cmocka_unit_test(test_add_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
