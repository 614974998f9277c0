/*
 * Binding table: an rte_hash in lock-free reader mode over a preallocated entry array.
 *
 * Readers (every worker, per new connection) never block. Writers are workers handling
 * DNS answers and the main lcore's sweeper; creating or deleting a key takes b->lock, so
 * two workers learning the same address at once cannot both allocate an entry for it.
 * That lock is on the DNS-answer path only, never on a data packet. Updating an existing
 * entry takes the entry's own lock, and readers check its sequence count so that they
 * never act on half-written names.
 */
#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_hash.h"
#include "dp_gen.h"
#include "dp_mem.h"

struct dp_bind_key {
	uint16_t vm;
	uint8_t family;
	uint8_t zero;
	uint8_t addr[16];
};

struct dp_bind_name {
	uint64_t hash;
	uint32_t gen;			/* the generation whose policy computed ports */
	uint64_t expires;
	struct pol_ports ports;
};

struct dp_binding {
	rte_spinlock_t lock;		/* writers */
	atomic_uint seq;		/* odd while a writer is inside */
	atomic_uint_fast64_t expires;	/* the latest of the names' */
	uint16_t vm;
	uint8_t nnames;
	/*
	 * The budgets of every name learned for the address under generation budgets_gen,
	 * evicted ones included: a VM resolving more names of a shared address than an entry
	 * keeps must not push a budgeted one out, and the address out of its budget.
	 */
	uint8_t budgets;
	uint32_t budgets_gen;
	struct dp_bind_name names[DP_BIND_NAMES];
};

/* One consistent copy of a binding's names and budgets. */
struct dp_bind_view {
	unsigned int n;
	uint8_t budgets;
	uint32_t budgets_gen;
	struct dp_bind_name names[DP_BIND_NAMES];
};

struct dp_binds {
	struct rte_hash *h;
	struct rte_ring *free;		/* entry indexes not in use */
	struct dp_binding *e;
	uint32_t cap;
	uint16_t nvms;
	rte_spinlock_t lock;		/* key creation and deletion */
	atomic_uint_fast64_t *count;	/* per VM */
};

uint64_t
dp_name_hash(const char *name, size_t len)
{
	return dp_hash_bytes(name, len);
}

static void
dp_bind_key_make(struct dp_bind_key *k, uint16_t vm, const struct pol_addr *addr)
{
	memset(k, 0, sizeof(*k));
	k->vm = vm;
	k->family = addr->family;
	if (addr->family == 4)		/* copies of constant size: inline, no call */
		memcpy(k->addr, addr->a, 4);
	else
		memcpy(k->addr, addr->a, 16);
}

/* Called by the hash's RCU defer queue once no reader can still hold the entry. */
static void
dp_binds_reclaim(void *p, void *key_data)
{
	struct dp_binds *b = p;

	rte_ring_enqueue(b->free, key_data);
}

struct dp_binds *
dp_binds_create(const char *name, uint32_t cap, uint16_t nvms, struct rte_rcu_qsbr *qsbr,
    int socket)
{
	char rname[RTE_RING_NAMESIZE];
	struct rte_hash_parameters hp = {
		.name = name,
		.entries = dp_hash_entries(cap),
		.key_len = sizeof(struct dp_bind_key),
		.hash_func = rte_jhash,
		.hash_func_init_val = dp_hash_seed(),
		.socket_id = socket,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF |
		    RTE_HASH_EXTRA_FLAGS_MULTI_WRITER_ADD,
	};
	struct rte_hash_rcu_config rcu = { 0 };
	struct dp_binds *b;

	if ((b = rte_zmalloc_socket("dp_binds", sizeof(*b), RTE_CACHE_LINE_SIZE, socket)) == NULL)
		return NULL;
	b->cap = cap;
	b->nvms = nvms;
	rte_spinlock_init(&b->lock);
	snprintf(rname, sizeof(rname), "%s_free", name);
	b->e = rte_zmalloc_socket("dp_bind_entries", (size_t)cap * sizeof(b->e[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	b->count = rte_zmalloc_socket("dp_bind_count", (size_t)(nvms + 1) * sizeof(b->count[0]),
	    RTE_CACHE_LINE_SIZE, socket);
	b->free = rte_ring_create(rname, rte_align32pow2(cap + 1), socket, 0);
	b->h = rte_hash_create(&hp);
	if (b->e == NULL || b->count == NULL || b->free == NULL || b->h == NULL)
		goto fail;
	for (uint32_t i = 0; i < cap; i++)
		rte_ring_enqueue(b->free, (void *)(uintptr_t)i);
	rcu.v = qsbr;
	rcu.mode = RTE_HASH_QSBR_MODE_DQ;
	rcu.key_data_ptr = b;
	rcu.free_key_data_func = dp_binds_reclaim;
	if (rte_hash_rcu_qsbr_add(b->h, &rcu) != 0)
		goto fail;
	return b;
fail:
	dp_binds_free(b);
	if (rte_errno == 0)
		rte_errno = ENOMEM;
	return NULL;
}

void
dp_binds_free(struct dp_binds *b)
{
	if (b == NULL)
		return;
	rte_hash_free(b->h);
	rte_ring_free(b->free);
	rte_free(b->count);
	rte_free(b->e);
	rte_free(b);
}

static struct dp_binding *
dp_bind_find(struct dp_binds *b, const struct dp_bind_key *k)
{
	void *data;

	if (rte_hash_lookup_data(b->h, k, &data) < 0)
		return NULL;
	return &b->e[(uintptr_t)data];
}

static void
dp_bind_write_begin(struct dp_binding *e)
{
	rte_spinlock_lock(&e->lock);
	atomic_fetch_add_explicit(&e->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void
dp_bind_write_end(struct dp_binding *e)
{
	atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
	rte_spinlock_unlock(&e->lock);
}

/* Put name into e (writer side, e->lock held): refresh it, add it, or evict the oldest. */
static void
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

int
dp_bind_learn(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr, uint64_t name_hash,
    const struct pol_ports *ports, uint32_t gen, uint64_t expires, uint32_t max_per_vm)
{
	struct dp_bind_key k;
	struct dp_binding *e;
	void *slot;
	int rc = 0, tries = 0;

	dp_bind_key_make(&k, vm, addr);
retry:
	if ((e = dp_bind_find(b, &k)) == NULL) {
		rte_spinlock_lock(&b->lock);
		if ((e = dp_bind_find(b, &k)) == NULL) {	/* another worker may have won */
			if (atomic_load_explicit(&b->count[vm], memory_order_relaxed) >=
			    max_per_vm) {
				rte_spinlock_unlock(&b->lock);
				return -EDQUOT;
			}
			if (rte_ring_dequeue(b->free, &slot) != 0) {
				rte_spinlock_unlock(&b->lock);
				return -ENOSPC;
			}
			e = &b->e[(uintptr_t)slot];
			rte_spinlock_init(&e->lock);
			e->vm = vm;
			e->nnames = 0;
			e->budgets = 0;		/* the slot's last owner's are not this one's */
			e->budgets_gen = gen;
			atomic_store_explicit(&e->expires, 0, memory_order_relaxed);
			dp_bind_write_begin(e);
			dp_bind_put_name(e, name_hash, ports, gen, expires);
			dp_bind_write_end(e);
			/* the entry is complete before any reader can find it */
			if ((rc = rte_hash_add_key_data(b->h, &k, slot)) != 0) {
				rte_ring_enqueue(b->free, slot);
				rte_spinlock_unlock(&b->lock);
				return -ENOSPC;
			}
			atomic_fetch_add_explicit(&b->count[vm], 1, memory_order_relaxed);
			rte_spinlock_unlock(&b->lock);
			return 0;
		}
		rte_spinlock_unlock(&b->lock);
	}
	dp_bind_write_begin(e);
	dp_bind_put_name(e, name_hash, ports, gen, expires);
	dp_bind_write_end(e);
	/* The sweeper may have deleted e, expired, just before this refresh: learn again. */
	if (dp_bind_find(b, &k) != e && ++tries < 3)
		goto retry;
	return rc;
}

/*
 * Copy e as one consistent snapshot (seqcount read side). Returns how many names, or 0
 * (and nothing copied) when the binding has expired.
 */
static unsigned int
dp_bind_snapshot(const struct dp_binding *e, struct dp_bind_view *out, uint64_t now)
{
	unsigned int s, n;

	if (atomic_load_explicit(&e->expires, memory_order_relaxed) <= now)
		return 0;
	do {
		while ((s = atomic_load_explicit(&e->seq, memory_order_acquire)) & 1)
			rte_pause();
		n = e->nnames;
		if (n > DP_BIND_NAMES)
			n = DP_BIND_NAMES;
		memcpy(out->names, e->names, n * sizeof(out->names[0]));
		out->budgets = e->budgets;
		out->budgets_gen = e->budgets_gen;
		atomic_thread_fence(memory_order_acquire);
	} while (atomic_load_explicit(&e->seq, memory_order_relaxed) != s);
	out->n = n;
	return n;
}

/* vm's binding of addr as a snapshot in *v; false when there is none, or it expired. */
static bool
dp_bind_view(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr, uint64_t now,
    struct dp_bind_view *v)
{
	struct dp_bind_key k;
	struct dp_binding *e;

	dp_bind_key_make(&k, vm, addr);
	return (e = dp_bind_find(b, &k)) != NULL && dp_bind_snapshot(e, v, now) > 0;
}

/* What generation g says of name i of v: its ports (NULL: no longer allowed). */
static const struct pol_ports *
dp_bind_ports(const struct dp_bind_view *v, unsigned int i, uint16_t vm, const struct dp_gen *g)
{
	/* learned under an older policy: what the current one says of the name */
	return v->names[i].gen == g->id ? &v->names[i].ports :
	    dp_gen_name_ports(g, vm, v->names[i].hash);
}

/*
 * The budgets of every name of v, under g, whatever its ports: the bytes go to the
 * address, whichever name the VM used. The binding is keyed by (VM, address) and holds
 * its names, so the union costs no lookup beyond the one that admits the flow; the
 * entry's own set adds the names it no longer keeps.
 */
static uint8_t
dp_bind_view_budgets(const struct dp_bind_view *v, uint16_t vm, const struct dp_gen *g,
    uint64_t now)
{
	uint8_t set = v->budgets_gen == g->id ? v->budgets : 0;

	if (g->vms[vm].budgets == 0)
		return 0;	/* a VM without budgets pays one comparison */
	for (unsigned int i = 0; i < v->n; i++) {
		const struct pol_ports *ports = dp_bind_ports(v, i, vm, g);

		if (v->names[i].expires > now && ports != NULL)
			set |= dp_budget_bit(ports->budget);
	}
	return set;
}

bool
dp_bind_allows(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr, uint16_t port,
    uint64_t now, const struct dp_gen *g, uint64_t *name_hash, uint8_t *budgets)
{
	struct dp_bind_view v;

	if (!dp_bind_view(b, vm, addr, now, &v))
		return false;
	for (unsigned int i = 0; i < v.n; i++) {
		const struct pol_ports *ports = dp_bind_ports(&v, i, vm, g);

		if (v.names[i].expires > now && ports != NULL && pol_ports_allow(ports, port)) {
			*name_hash = v.names[i].hash;
			*budgets = dp_bind_view_budgets(&v, vm, g, now);
			return true;
		}
	}
	return false;
}

uint8_t
dp_bind_budgets(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr, uint64_t now,
    const struct dp_gen *g)
{
	struct dp_bind_view v;

	return dp_bind_view(b, vm, addr, now, &v) ? dp_bind_view_budgets(&v, vm, g, now) : 0;
}

bool
dp_bind_has_name(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr,
    uint64_t name_hash, uint64_t now)
{
	struct dp_bind_view v;

	if (!dp_bind_view(b, vm, addr, now, &v))
		return false;
	for (unsigned int i = 0; i < v.n; i++)
		if (v.names[i].hash == name_hash && v.names[i].expires > now)
			return true;
	return false;
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

unsigned int
dp_binds_sweep(struct dp_binds *b, uint64_t now, const struct dp_gen *g, unsigned int budget,
    uint32_t *cursor)
{
	const void *key;
	void *data;
	unsigned int deleted = 0, seen = 0;
	int32_t pos = 0;

	while (seen++ < budget &&
	    (pos = rte_hash_iterate(b->h, &key, &data, cursor)) >= 0) {
		struct dp_binding *e = &b->e[(uintptr_t)data];
		struct dp_bind_key k;
		bool orphan;

		memcpy(&k, key, sizeof(k));
		orphan = dp_bind_orphan(g, k.vm);
		if (!orphan && atomic_load_explicit(&e->expires, memory_order_relaxed) > now)
			continue;
		rte_spinlock_lock(&b->lock);
		rte_spinlock_lock(&e->lock);
		/* freed by dp_binds_reclaim() once the workers have moved on */
		if ((orphan || atomic_load_explicit(&e->expires, memory_order_relaxed) <= now) &&
		    rte_hash_del_key(b->h, &k) >= 0) {
			atomic_fetch_sub_explicit(&b->count[k.vm], 1, memory_order_relaxed);
			deleted++;
		}
		rte_spinlock_unlock(&e->lock);
		rte_spinlock_unlock(&b->lock);
	}
	if (pos < 0)
		*cursor = 0;		/* a full pass done: start over next time */
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
	    dp_mem_ring(cap + 1, sizeof(void *)) +
	    dp_mem_hash(dp_hash_entries(cap), sizeof(struct dp_bind_key),
	    DP_MEM_HASH_SHARED_RCU);
}
