/*
 * The reference stream test_reasm.c and test_reasm_window.c feed reasm, a flow holding it
 * in a buffer of CAP bytes, and the invariants reasm.h promises, checked after every step:
 * ranges sorted, disjoint, not adjacent, inside cap, and every held byte equal to the
 * stream.
 */
#ifndef T_REASM_H
#define T_REASM_H

#include <stddef.h>
#include <stdint.h>

#include "sni/reasm.h"

#define CAP	64

/* The stream the client sends: byte i is stream[i]. */
extern uint8_t stream[4 * CAP];

struct flow {
	struct reasm r;
	uint8_t buf[CAP];
};

/* f's stream from isn on, its buffer all 0xee, stream[] filled. */
void flow_init(struct flow *f, uint32_t isn);

/* Stream bytes [off, off + len) sent at their own sequence number. */
enum reasm_status send_seg(struct flow *f, uint32_t off, size_t len);

void check_invariants(const struct flow *f);

/* The invariants, and f's ranges the nb pairs of start and end in want. */
void expect_ranges(const struct flow *f, const uint32_t *want, uint32_t nb);

/* The held state, field by field (struct padding is not part of it). */
void assert_same_state(const struct reasm *a, const struct reasm *b);

#endif
