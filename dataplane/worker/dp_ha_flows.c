/*
 * The HA pair's flows (dp_ha_flows.h): the index of dp_flow_tab.h over entries each
 * written under its own sequence count.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include <rte_malloc.h>

#include "dp_flow_tab.h"
#include "dp_ha_flows.h"
#include "dp_hash.h"
#include "dp_mem.h"
#include "dp_slots.h"

#define DP_HA_READ_TRIES	8	/* a reader's copies of an entry being written */

struct dp_ha_ent {
	_Atomic(uint32_t) seq;		/* odd while the main lcore writes the entry */
	bool in_use;
	struct dp_ha_flow r;
};

struct dp_ha_flows {
	struct dp_ft ft;
	struct dp_ha_ent *e;
	struct dp_slots slots;
	uint32_t cap, per_vm_max;
	uint16_t nvms;
	uint32_t *per_vm;
	_Atomic(uint32_t) n;
	_Atomic(uint64_t) refused[2];
};

struct dp_ha_flows *
dp_ha_flows_create(uint32_t cap, uint32_t per_vm, uint16_t nvms, int socket)
{
	struct dp_ha_flows *t;

	if (cap == 0 || (t = rte_zmalloc_socket("dp_ha_flows", sizeof(*t), 0, socket)) == NULL)
		return NULL;
	t->cap = cap;
	t->per_vm_max = per_vm;
	t->nvms = nvms;
	t->e = rte_zmalloc_socket("dp_ha_flow_entries", (size_t)cap * sizeof(t->e[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	t->per_vm = rte_zmalloc_socket("dp_ha_flow_vm", ((size_t)nvms + 1) * sizeof(uint32_t), 0,
	    socket);
	if (t->e == NULL || t->per_vm == NULL ||
	    dp_ft_init(&t->ft, cap, dp_hash_seed(), socket) != 0 ||
	    dp_slots_init(&t->slots, cap, socket) != 0) {
		dp_ha_flows_free(t);
		return NULL;
	}
	return t;
}

void
dp_ha_flows_free(struct dp_ha_flows *t)
{
	if (t == NULL)
		return;
	dp_ft_fini(&t->ft);
	dp_slots_fini(&t->slots);
	rte_free(t->per_vm);
	rte_free(t->e);
	rte_free(t);
}

uint64_t
dp_ha_flows_mem(uint32_t cap, uint16_t nvms)
{
	return dp_mem_alloc(sizeof(struct dp_ha_flows)) +
	    dp_mem_alloc((uint64_t)cap * sizeof(struct dp_ha_ent)) +
	    dp_mem_alloc(((uint64_t)nvms + 1) * sizeof(uint32_t)) +
	    dp_mem_alloc((uint64_t)dp_ft_buckets(cap) * sizeof(struct dp_ft_bucket)) +
	    dp_mem_alloc((uint64_t)cap * sizeof(uint32_t));	/* the free slots */
}

/* A copy of entry e whole, not torn by the writer: false if it kept changing. */
static bool
dp_ha_read(const struct dp_ha_ent *e, struct dp_ha_flow *out, bool *in_use)
{
	for (int i = 0; i < DP_HA_READ_TRIES; i++) {
		uint32_t s = atomic_load_explicit(&e->seq, memory_order_acquire);

		if (s & 1)
			continue;
		*in_use = e->in_use;
		memcpy(out, &e->r, sizeof(*out));
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&e->seq, memory_order_relaxed) == s)
			return true;
	}
	return false;
}

/* k's entry among bucket b's slots tagged tag, copied to *out: its index, or -1. */
static int64_t
dp_ha_find_in(const struct dp_ha_flows *t, const struct dp_ft_bucket *b, uint16_t tag,
    const struct dp_flow_key *k, struct dp_ha_flow *out)
{
	uint32_t m = dp_ft_match(b, tag);

	atomic_thread_fence(memory_order_acquire);	/* the tags before their idx */
	for (; m != 0; m &= m - 1) {
		uint32_t i = __atomic_load_n(&b->idx[__builtin_ctz(m) / 2], __ATOMIC_RELAXED);
		bool in_use;

		if (i < t->cap && dp_ha_read(&t->e[i], out, &in_use) && in_use &&
		    dp_ft_key_eq(&out->key, k))
			return i;
	}
	return -1;
}

/* k's entry (h its hash) copied to *out: its index, or -1. */
static int64_t
dp_ha_find(const struct dp_ha_flows *t, const struct dp_flow_key *k, uint32_t h,
    struct dp_ha_flow *out)
{
	const struct dp_ft *ft = &t->ft;
	uint16_t tag = dp_ft_tag(h);
	uint32_t b1 = dp_ft_first(ft, h), moved;
	int64_t i;

	do {
		moved = __atomic_load_n(&ft->moved, __ATOMIC_ACQUIRE);
		if ((i = dp_ha_find_in(t, &ft->b[b1], tag, k, out)) >= 0 ||
		    (i = dp_ha_find_in(t, &ft->b[dp_ft_alt(ft, b1, tag)], tag, k, out)) >= 0)
			return i;
		atomic_thread_fence(memory_order_acquire);
	} while (__atomic_load_n(&ft->moved, __ATOMIC_RELAXED) != moved);
	return -1;
}

bool
dp_ha_flows_get(const struct dp_ha_flows *t, const struct dp_flow_key *k,
    struct dp_ha_flow *out)
{
	return dp_ha_find(t, k, dp_hash_crc_inline(k, sizeof(*k), t->ft.seed), out) >= 0;
}

/* Entry e rewritten: odd count, the writes, even count (release: readers see them whole). */
static void
dp_ha_write(struct dp_ha_ent *e, const struct dp_ha_flow *r, bool in_use)
{
	uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);

	atomic_store_explicit(&e->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	e->in_use = in_use;
	if (r != NULL)
		e->r = *r;
	atomic_store_explicit(&e->seq, s + 2, memory_order_release);
}

int
dp_ha_flows_put(struct dp_ha_flows *t, const struct dp_ha_flow *r)
{
	uint32_t h = dp_hash_crc_inline(&r->key, sizeof(r->key), t->ft.seed), idx;
	struct dp_ha_flow old;
	int64_t i = dp_ha_find(t, &r->key, h, &old);

	if (i >= 0) {
		dp_ha_write(&t->e[i], r, true);
		return 0;
	}
	if (r->key.vm > t->nvms || t->per_vm[r->key.vm] >= t->per_vm_max) {
		atomic_fetch_add_explicit(&t->refused[1], 1, memory_order_relaxed);
		return -EDQUOT;
	}
	if (!dp_slots_peek(&t->slots, &idx)) {
		atomic_fetch_add_explicit(&t->refused[0], 1, memory_order_relaxed);
		return -ENOSPC;
	}
	dp_ha_write(&t->e[idx], r, true);	/* whole before the index points at it */
	if (dp_ft_insert(&t->ft, h, idx) != 0) {
		dp_ha_write(&t->e[idx], NULL, false);
		atomic_fetch_add_explicit(&t->refused[0], 1, memory_order_relaxed);
		return -ENOSPC;
	}
	dp_slots_get(&t->slots, &idx);
	t->per_vm[r->key.vm]++;
	atomic_fetch_add_explicit(&t->n, 1, memory_order_relaxed);
	return 0;
}

void
dp_ha_flows_del(struct dp_ha_flows *t, const struct dp_flow_key *k)
{
	uint32_t h = dp_hash_crc_inline(k, sizeof(*k), t->ft.seed);
	struct dp_ha_flow old;
	int64_t i = dp_ha_find(t, k, h, &old);

	if (i < 0)
		return;
	dp_ft_delete(&t->ft, h, (uint32_t)i);
	dp_ha_write(&t->e[i], NULL, false);
	dp_slots_put(&t->slots, (uint32_t)i);
	t->per_vm[old.key.vm]--;
	atomic_fetch_sub_explicit(&t->n, 1, memory_order_relaxed);
}

uint32_t
dp_ha_flows_expire(struct dp_ha_flows *t, uint64_t now, uint32_t n, uint32_t *cursor)
{
	uint32_t at = *cursor, gone = 0;

	for (; at < t->cap && n > 0; at++, n--)
		if (t->e[at].in_use && t->e[at].r.expires <= now) {
			struct dp_flow_key k = t->e[at].r.key;	/* the entry is rewritten */

			dp_ha_flows_del(t, &k);
			gone++;
		}
	*cursor = at < t->cap ? at : 0;
	return gone;
}

uint32_t
dp_ha_flows_walk_some(const struct dp_ha_flows *t, uint32_t at, uint32_t n,
    void (*fn)(const struct dp_ha_flow *, void *), void *arg)
{
	for (; at < t->cap && n > 0; at++) {
		if (!t->e[at].in_use)
			continue;
		fn(&t->e[at].r, arg);
		n--;
	}
	return at < t->cap ? at : 0;
}

uint32_t
dp_ha_flows_count(const struct dp_ha_flows *t)
{
	return atomic_load_explicit(&t->n, memory_order_relaxed);
}

void
dp_ha_flows_refused(const struct dp_ha_flows *t, uint64_t out[2])
{
	out[0] = atomic_load_explicit(&t->refused[0], memory_order_relaxed);
	out[1] = atomic_load_explicit(&t->refused[1], memory_order_relaxed);
}
