/*
 * A stack of free indexes into a table allocated at start: how the per-worker tables
 * (flows, pending DNS queries, ClientHello holds) hand out entries without allocating.
 * One owner, no locks.
 */
#ifndef DP_SLOTS_H
#define DP_SLOTS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_malloc.h>

struct dp_slots {
	uint32_t *free;
	uint32_t n;		/* free indexes on the stack */
};

/* Every index of 0 .. cap-1 free; index 0 comes out first. 0 or -ENOMEM. */
static inline int
dp_slots_init(struct dp_slots *s, uint32_t cap, int socket)
{
	if ((s->free = rte_malloc_socket("dp_slots", (size_t)cap * sizeof(s->free[0]), 0,
	    socket)) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < cap; i++)
		s->free[i] = cap - 1 - i;
	s->n = cap;
	return 0;
}

static inline void
dp_slots_fini(struct dp_slots *s)
{
	rte_free(s->free);
	s->free = NULL;
	s->n = 0;
}

/* The index at the top of the stack, without taking it; false when none is free. */
static inline bool
dp_slots_peek(const struct dp_slots *s, uint32_t *idx)
{
	if (s->n == 0)
		return false;
	*idx = s->free[s->n - 1];
	return true;
}

/* Take the index dp_slots_peek() just gave. */
static inline void
dp_slots_take(struct dp_slots *s)
{
	s->n--;
}

static inline bool
dp_slots_get(struct dp_slots *s, uint32_t *idx)
{
	if (!dp_slots_peek(s, idx))
		return false;
	dp_slots_take(s);
	return true;
}

static inline void
dp_slots_put(struct dp_slots *s, uint32_t idx)
{
	s->free[s->n++] = idx;
}

#endif
