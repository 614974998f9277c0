/*
 * Binding table: an array of entries under the flow table's bucket index (dp_flow_tab.h),
 * hashed with the same keyed CRC. This side creates, learns and sweeps; the lookups are
 * dp_bind_int.h's, the readers' judgements dp_bind_view.c's.
 *
 * Readers (every worker, per new connection) never block. Writers are workers handling
 * DNS answers and the main lcore's sweeper; creating or deleting a key takes b->lock, so
 * the index has one writer at a time and two workers learning the same address at once
 * cannot both allocate an entry for it. That lock is on the DNS-answer path only, never on
 * a data packet. Updating an existing entry takes the entry's own lock, and readers check
 * its sequence count so that they never act on half-written names.
 *
 * A deleted entry is retired with an RCU token (rte_rcu_qsbr_start) and reused only once
 * every worker has passed a quiescent point since: a reader that found it before it was
 * deleted may still be reading it. Free entries are a stack, so that the live ones stay
 * packed at the low indexes the sweep walks.
 */
#include <errno.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "dp_bind_int.h"
#include "dp_bind_learn.h"
#include "dp_mem.h"

/*
 * Entries a sweep slice may pass over for each binding it examines: a slice over a sparse
 * stretch of the array stays bounded, and a pass over it still ends in a few slices.
 */
#define DP_BIND_SWEEP_SPAN	16

uint64_t
dp_name_hash(const char *name, size_t len)
{
	return dp_hash_name(name, len);
}

struct dp_binds *
dp_binds_create(const char *name, uint32_t cap, uint16_t nvms, struct rte_rcu_qsbr *qsbr,
    int socket)
{
	struct dp_binds *b;

	if ((b = rte_zmalloc_socket("dp_binds", sizeof(*b), RTE_CACHE_LINE_SIZE, socket)) == NULL)
		goto fail;
	b->cap = cap;
	b->nvms = nvms;
	b->qsbr = qsbr;
	rte_spinlock_init(&b->lock);
	b->e = rte_zmalloc_socket(name, (size_t)cap * sizeof(b->e[0]),
	    _Alignof(struct dp_binding), socket);
	b->count = rte_zmalloc_socket("dp_bind_count", (size_t)(nvms + 1) * sizeof(b->count[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	b->free = rte_malloc_socket("dp_bind_free", (size_t)cap * sizeof(b->free[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	b->retired = rte_malloc_socket("dp_bind_retired", (size_t)cap * sizeof(b->retired[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	if (b->e == NULL || b->count == NULL || b->free == NULL || b->retired == NULL ||
	    dp_ft_init(&b->ft, cap, dp_hash_seed(), socket) != 0)
		goto fail;
	for (uint32_t i = 0; i < cap; i++)	/* entry 0 on top */
		b->free[i] = cap - 1 - i;
	b->nfree = cap;
	return b;
fail:
	dp_binds_free(b);
	rte_errno = ENOMEM;
	return NULL;
}

void
dp_binds_free(struct dp_binds *b)
{
	if (b == NULL)
		return;
	dp_ft_fini(&b->ft);
	rte_free(b->retired);
	rte_free(b->free);
	rte_free(b->count);
	rte_free(b->e);
	rte_free(b);
}

/* Deleted entries whose readers have all moved on back to the free stack (b->lock). */
static void
dp_bind_reclaim(struct dp_binds *b)
{
	while (b->nretired > 0) {
		uint32_t i = b->retired[b->retired_at];

		if (b->qsbr != NULL && rte_rcu_qsbr_check(b->qsbr, b->e[i].retired, false) != 1)
			break;		/* nor any later one: their tokens are newer */
		b->free[b->nfree++] = i;
		b->retired_at = b->retired_at + 1 < b->cap ? b->retired_at + 1 : 0;
		b->nretired--;
	}
}

/* A free entry's index (b->lock), or UINT32_MAX. */
static uint32_t
dp_bind_alloc(struct dp_binds *b)
{
	uint32_t i;

	if (b->nfree == 0)
		dp_bind_reclaim(b);
	if (b->nfree == 0)
		return UINT32_MAX;
	i = b->free[--b->nfree];
	if (i >= b->used)
		__atomic_store_n(&b->used, i + 1, __ATOMIC_RELEASE);
	return i;
}

/* Take e out of the index (b->lock and e->lock held): no reader finds it again. */
static void
dp_bind_unlink(struct dp_binds *b, struct dp_binding *e)
{
	uint32_t i = (uint32_t)(e - b->e);

	dp_ft_delete(&b->ft, dp_bind_hash(b, &e->key), i);
	atomic_store_explicit(&e->live, false, memory_order_relaxed);
	atomic_fetch_sub_explicit(&b->count[e->key.vm], 1, memory_order_relaxed);
	e->retired = b->qsbr != NULL ? rte_rcu_qsbr_start(b->qsbr) : 0;
	/* a deleted entry is neither free nor live: the ring never holds more than cap */
	b->retired[((uint64_t)b->retired_at + b->nretired++) % b->cap] = i;
}

/* A new binding of k (h its hash) with its first name (b->lock held). 0 or -errno. */
static int
dp_bind_create(struct dp_binds *b, const struct dp_bind_key *k, uint32_t h, uint64_t name_hash,
    const struct pol_ports *ports, uint32_t gen, uint64_t expires, uint32_t max_per_vm)
{
	struct dp_binding *e;
	uint32_t i;

	if (atomic_load_explicit(&b->count[k->vm], memory_order_relaxed) >= max_per_vm)
		return -EDQUOT;
	if ((i = dp_bind_alloc(b)) == UINT32_MAX)
		return -ENOSPC;
	e = &b->e[i];
	rte_spinlock_init(&e->lock);
	e->key = *k;
	e->nnames = 0;
	e->budgets = 0;		/* the entry's last owner's are not this one's */
	e->budgets_gen = gen;
	atomic_store_explicit(&e->expires, 0, memory_order_relaxed);
	dp_bind_write_begin(e);
	dp_bind_put_name(e, name_hash, ports, gen, expires);
	dp_bind_write_end(e);
	/* the entry is complete before any reader can find it: the index stores with release */
	if (dp_ft_insert(&b->ft, h, i) != 0) {
		b->free[b->nfree++] = i;	/* no reader ever saw it */
		return -ENOSPC;
	}
	atomic_store_explicit(&e->live, true, memory_order_relaxed);
	atomic_fetch_add_explicit(&b->count[k->vm], 1, memory_order_relaxed);
	return 0;
}

/*
 * dp_bind_learn_in()'s new key: created under b->lock, unless another worker created it
 * first (that entry returned, for the caller to refresh). NULL when created, *rc 0 or why not.
 */
struct dp_binding *
dp_bind_learn_new(struct dp_binds *b, const struct dp_bind_key *k, uint32_t h,
    uint64_t name_hash, const struct pol_ports *ports, uint32_t gen, uint64_t expires,
    uint32_t max_per_vm, int *rc)
{
	struct dp_binding *e;

	rte_spinlock_lock(&b->lock);
	if ((e = dp_bind_find(b, k, h)) == NULL)	/* another worker may have won */
		*rc = dp_bind_create(b, k, h, name_hash, ports, gen, expires, max_per_vm);
	rte_spinlock_unlock(&b->lock);
	return e;
}

int
dp_bind_learn(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr, uint64_t name_hash,
    const struct pol_ports *ports, uint32_t gen, uint64_t expires, uint32_t max_per_vm)
{
	return dp_bind_learn_in(b, vm, addr, name_hash, ports, gen, expires, max_per_vm);
}

/*
 * A binding of a VM generation g no longer has: no frame is classified to that VM again,
 * so nothing reads it, and its slot waits for it (dp_vmslot.h) until its TTL would end.
 */
static inline bool
dp_bind_orphan(const struct dp_gen *g, uint16_t vm)
{
	return g != NULL && vm <= g->max_vms && !g->vms[vm].present;
}

/*
 * Only the sweeper deletes, so a live entry's key holds still for it without a lock;
 * learners create under b->lock, and each deletion takes it.
 */
unsigned int
dp_binds_sweep(struct dp_binds *b, uint64_t now, const struct dp_gen *g, unsigned int budget,
    uint32_t *cursor)
{
	uint32_t end = __atomic_load_n(&b->used, __ATOMIC_ACQUIRE), i = *cursor;
	uint64_t span = (uint64_t)budget * DP_BIND_SWEEP_SPAN;
	unsigned int deleted = 0, seen = 0;

	for (; i < end && seen < budget && span > 0; i++, span--) {
		struct dp_binding *e = &b->e[i];
		bool orphan;

		if (!atomic_load_explicit(&e->live, memory_order_acquire))
			continue;
		seen++;
		orphan = dp_bind_orphan(g, e->key.vm);
		if (!orphan && atomic_load_explicit(&e->expires, memory_order_relaxed) > now)
			continue;
		rte_spinlock_lock(&b->lock);
		rte_spinlock_lock(&e->lock);
		/* a learner may have refreshed it meanwhile */
		if (orphan || atomic_load_explicit(&e->expires, memory_order_relaxed) <= now) {
			dp_bind_unlink(b, e);
			deleted++;
		}
		rte_spinlock_unlock(&e->lock);
		rte_spinlock_unlock(&b->lock);
	}
	*cursor = i < end ? i : 0;	/* a full pass done: start over next time */
	return deleted;
}

uint64_t
dp_binds_count(const struct dp_binds *b, uint16_t vm)
{
	return vm <= b->nvms ? atomic_load_explicit(&b->count[vm], memory_order_relaxed) : 0;
}

uint64_t
dp_binds_mem(uint32_t cap, uint16_t nvms)
{
	struct dp_binds *b = NULL;

	return dp_mem_alloc(sizeof(*b)) + dp_mem_alloc((uint64_t)cap * sizeof(b->e[0])) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * sizeof(b->count[0])) +
	    2 * dp_mem_alloc((uint64_t)cap * sizeof(uint32_t)) +
	    dp_mem_alloc((uint64_t)dp_ft_buckets(cap) * sizeof(struct dp_ft_bucket));
}
