/*
 * The binding table's readers (dp_bind.h): every worker, when a connection opens, and
 * when a hello or a Host names the peer. A lookup never blocks: it copies the entry's
 * names under its sequence count and judges the copy.
 */
#include <stdatomic.h>
#include <string.h>

#include <rte_pause.h>

#include "dp_bind_int.h"
#include "dp_budget.h"
#include "dp_gen.h"

/* One consistent copy of a binding's names and budgets. */
struct dp_bind_view {
	unsigned int n;
	uint8_t budgets;
	uint32_t budgets_gen;
	struct dp_bind_name names[DP_BIND_NAMES];
};

/*
 * Copy e as one consistent snapshot (seqcount read side). Returns how many names, or 0
 * (and nothing copied) when the binding has expired. Inlined with dp_bind_view().
 */
static inline __attribute__((always_inline)) unsigned int
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
		for (unsigned int i = 0; i < n; i++)	/* whole names: no call, no third line */
			out->names[i] = e->names[i];
		out->budgets = e->budgets;
		out->budgets_gen = e->budgets_gen;
		atomic_thread_fence(memory_order_acquire);
	} while (atomic_load_explicit(&e->seq, memory_order_relaxed) != s);
	out->n = n;
	return n;
}

/*
 * vm's binding of addr as a snapshot in *v; false when there is none, or it expired.
 * Inlined: each connection's opening comes here, and the call cost it its spills.
 */
static inline __attribute__((always_inline)) bool
dp_bind_view(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr, uint64_t now,
    struct dp_bind_view *v)
{
	struct dp_bind_key k;
	struct dp_binding *e;

	dp_bind_key_make(&k, vm, addr);
	return (e = dp_bind_find(b, &k, dp_bind_hash(b, &k))) != NULL &&
	    dp_bind_snapshot(e, v, now) > 0;
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
dp_bind_view_names_budgets(const struct dp_bind_view *v, uint16_t vm, const struct dp_gen *g,
    uint64_t now)
{
	uint8_t set = v->budgets_gen == g->id ? v->budgets : 0;

	for (unsigned int i = 0; i < v->n; i++) {
		const struct pol_ports *ports = dp_bind_ports(v, i, vm, g);

		if (v->names[i].expires > now && ports != NULL)
			set |= dp_budget_bit(ports->budget);
	}
	return set;
}

/* The same, where a VM without budgets pays one comparison and no call. */
static inline uint8_t
dp_bind_view_budgets(const struct dp_bind_view *v, uint16_t vm, const struct dp_gen *g,
    uint64_t now)
{
	return g->vms[vm].budgets == 0 ? 0 : dp_bind_view_names_budgets(v, vm, g, now);
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

