/*
 * The reasm tests' stream and flows: see t_reasm.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "t_reasm.h"

uint8_t stream[4 * CAP];

static void
stream_init(void)
{
	for (size_t i = 0; i < sizeof(stream); i++)
		stream[i] = (uint8_t)(i * 7 + 3);
}

void
flow_init(struct flow *f, uint32_t isn)
{
	stream_init();
	memset(f->buf, 0xee, sizeof(f->buf));
	reasm_init(&f->r, isn, f->buf, CAP);
}

/* Stream bytes [off, off + len) sent at their own sequence number. */
enum reasm_status
send_seg(struct flow *f, uint32_t off, size_t len)
{
	return reasm_add(&f->r, f->r.isn + off, stream + off, len);
}

void
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

void
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
void
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
