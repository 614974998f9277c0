/*
 * A DNS answer's address learned into the binding table (dp_bind.c), inline: every address
 * of every answer comes here (dp_dns_answer.c), and most are bound already, refreshed with
 * no call; a new key is created under the table's lock (dp_bind_learn_new()).
 */
#ifndef DP_BIND_LEARN_H
#define DP_BIND_LEARN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_spinlock.h>

#include "dp_bind_int.h"
#include "dp_budget.h"

static inline void
dp_bind_write_begin(struct dp_binding *e)
{
	rte_spinlock_lock(&e->lock);
	atomic_fetch_add_explicit(&e->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static inline void
dp_bind_write_end(struct dp_binding *e)
{
	atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
	rte_spinlock_unlock(&e->lock);
}

/*
 * Put name into e (writer side, e->lock held): refresh it, add it, or evict the oldest.
 * Inline: every address of every DNS answer comes here, and a call costs a fifth of it.
 */
static inline __attribute__((always_inline)) void
dp_bind_put_name(struct dp_binding *e, uint64_t hash, const struct pol_ports *ports,
    uint32_t gen, uint64_t expires)
{
	unsigned int slot = 0;

	for (unsigned int i = 0; i < e->nnames; i++) {
		if (e->names[i].hash == hash) {
			slot = i;
			goto put;
		}
		if (e->names[i].expires < e->names[slot].expires)
			slot = i;
	}
	if (e->nnames < DP_BIND_NAMES)
		slot = e->nnames++;
put:
	if (e->names[slot].hash == hash && e->names[slot].expires > expires)
		expires = e->names[slot].expires;	/* a shorter answer never shortens */
	e->names[slot] = (struct dp_bind_name){ .hash = hash, .gen = gen, .expires = expires,
		.ports = *ports };
	if (expires > atomic_load_explicit(&e->expires, memory_order_relaxed))
		atomic_store_explicit(&e->expires, expires, memory_order_relaxed);
	if (e->budgets_gen != gen) {	/* indexes of another generation's budgets */
		e->budgets = 0;
		e->budgets_gen = gen;
	}
	e->budgets |= dp_budget_bit(ports->budget);
}

struct dp_binding *dp_bind_learn_new(struct dp_binds *b, const struct dp_bind_key *k,
    uint32_t h, uint64_t name_hash, const struct pol_ports *ports, uint32_t gen,
    uint64_t expires, uint32_t max_per_vm, int *rc);

/* dp_bind_learn() (dp_bind.h), inline for the DNS answer's path. */
static inline __attribute__((always_inline)) int
dp_bind_learn_in(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr,
    uint64_t name_hash, const struct pol_ports *ports, uint32_t gen, uint64_t expires,
    uint32_t max_per_vm)
{
	struct dp_bind_key k;
	struct dp_binding *e;
	uint32_t h;
	int rc, tries = 0;
	bool gone;

	dp_bind_key_make(&k, vm, addr);
	h = dp_bind_hash(b, &k);
retry:
	if ((e = dp_bind_find(b, &k, h)) == NULL &&
	    (e = dp_bind_learn_new(b, &k, h, name_hash, ports, gen, expires, max_per_vm,
	    &rc)) == NULL)
		return rc;
	dp_bind_write_begin(e);
	/*
	 * The sweeper may have deleted e, expired, just before this refresh: learn again. It
	 * deletes under e->lock, so e is still in the index if it is live here; after this
	 * refresh it is expired no more, and a deleted entry is not reused before this
	 * worker's next quiescent point, so e is no other key's.
	 */
	gone = !atomic_load_explicit(&e->live, memory_order_relaxed);
	dp_bind_put_name(e, name_hash, ports, gen, expires);
	dp_bind_write_end(e);
	if (gone && ++tries < 3)
		goto retry;
	return 0;
}

#endif
