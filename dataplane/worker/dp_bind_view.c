/*
 * The binding table's readers (dp_bind.h): every worker, when a connection opens, and
 * when a hello or a Host names the peer. A lookup never blocks: it judges the entry's
 * names where they are, under its sequence count, and again if a writer came between.
 */
#include <stdatomic.h>

#include "dp_bind_allow.h"
#include "dp_bind_int.h"
#include "dp_budget.h"
#include "dp_gen.h"

/* e's names, at most DP_BIND_NAMES whatever a torn count says */
static inline unsigned int
dp_bind_nnames(const struct dp_binding *e)
{
	return e->nnames < DP_BIND_NAMES ? e->nnames : DP_BIND_NAMES;
}

/*
 * vm's live binding of the address family, a (its 16 bytes), or NULL when there is none
 * or it expired. Inlined: each connection's opening comes here, and the call cost it its
 * spills.
 */
static inline __attribute__((always_inline)) const struct dp_binding *
dp_bind_live_of(struct dp_binds *b, uint16_t vm, uint8_t family, const uint8_t *a,
    uint64_t now)
{
	struct dp_bind_key k;
	const struct dp_binding *e;

	dp_bind_key_of(&k, vm, family, a);
	e = dp_bind_find(b, &k, dp_bind_hash(b, &k));
	return e != NULL && atomic_load_explicit(&e->expires, memory_order_relaxed) > now ?
	    e : NULL;
}

static inline __attribute__((always_inline)) const struct dp_binding *
dp_bind_live(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr, uint64_t now)
{
	return dp_bind_live_of(b, vm, addr->family, addr->a, now);
}

/* What generation g says of name nm: its ports (NULL: no longer allowed). */
static const struct pol_ports *
dp_bind_ports(const struct dp_bind_name *nm, uint16_t vm, const struct dp_gen *g)
{
	/* learned under an older policy: what the current one says of the name */
	return nm->gen == g->id ? &nm->ports : dp_gen_name_ports(g, vm, nm->hash);
}

/*
 * The budgets of every name of e, under g, whatever its ports (inside a pass): the bytes
 * go to the address, whichever name the VM used. The binding is keyed by (VM, address)
 * and holds its names, so the union costs no lookup beyond the one that admits the flow;
 * the entry's own set adds the names it no longer keeps.
 */
static uint8_t
dp_bind_names_budgets(const struct dp_binding *e, uint16_t vm, const struct dp_gen *g,
    uint64_t now)
{
	uint8_t set = e->budgets_gen == g->id ? e->budgets : 0;

	for (unsigned int i = 0, n = dp_bind_nnames(e); i < n; i++) {
		const struct pol_ports *ports = dp_bind_ports(&e->names[i], vm, g);

		if (e->names[i].expires > now && ports != NULL)
			set |= dp_budget_bit(ports->budget);
	}
	return set;
}

/* The same, where a VM without budgets pays one comparison and no call. */
static inline uint8_t
dp_bind_entry_budgets(const struct dp_binding *e, uint16_t vm, const struct dp_gen *g,
    uint64_t now)
{
	return g->vms[vm].budgets == 0 ? 0 : dp_bind_names_budgets(e, vm, g, now);
}

/*
 * dp_bind_allows() in full: names learned under an older generation (judged by g's name
 * table) and VMs with budgets. Apart, so that the common pass below makes no call.
 */
static __attribute__((noinline)) struct dp_bind_allow
dp_bind_allows_any(const struct dp_binding *e, uint16_t vm, uint16_t port, uint64_t now,
    const struct dp_gen *g)
{
	unsigned int s, i, n;
	uint64_t hash = 0;
	uint8_t set = 0;

	do {
		s = dp_bind_read_begin(e);
		for (i = 0, n = dp_bind_nnames(e); i < n; i++) {
			const struct dp_bind_name *nm = &e->names[i];
			const struct pol_ports *ports = dp_bind_ports(nm, vm, g);

			if (nm->expires > now && ports != NULL && pol_ports_allow(ports, port)) {
				hash = nm->hash;
				set = dp_bind_entry_budgets(e, vm, g, now);
				break;
			}
		}
	} while (!dp_bind_read_ok(e, s));
	if (i == n)
		return (struct dp_bind_allow){ .allowed = false };
	return (struct dp_bind_allow){ .name_hash = hash, .budgets = set, .allowed = true };
}

/* What the common pass makes of a binding */
enum dp_bind_pass { DP_BIND_NO, DP_BIND_YES, DP_BIND_ANY };

/*
 * The common pass over e (inside a read): the first live name that allows port, in *i,
 * when each name before it was learned under g; DP_BIND_ANY when one was not, which
 * dp_bind_allows_any() judges. A name of g has the ports g's policy gave it: no call.
 */
static inline enum dp_bind_pass
dp_bind_pass_common(const struct dp_binding *e, uint32_t gen, uint16_t port, uint64_t now,
    unsigned int *i)
{
	for (unsigned int k = 0, n = dp_bind_nnames(e); k < n; k++) {
		const struct dp_bind_name *nm = &e->names[k];

		if (nm->gen != gen)
			return DP_BIND_ANY;
		if (nm->expires > now && pol_ports_allow(&nm->ports, port)) {
			*i = k;
			return DP_BIND_YES;
		}
	}
	return DP_BIND_NO;
}

struct dp_bind_allow
dp_bind_allows_far(struct dp_binds *b, uint16_t vm, uint8_t family, const uint8_t *a,
    uint16_t port, uint64_t now, const struct dp_gen *g)
{
	const struct dp_binding *e = dp_bind_live_of(b, vm, family, a, now);
	enum dp_bind_pass r;
	unsigned int s, i = 0;
	uint64_t hash;

	if (e == NULL)
		return (struct dp_bind_allow){ .allowed = false };
	if (g->vms[vm].budgets != 0)
		return dp_bind_allows_any(e, vm, port, now, g);
	do {
		s = dp_bind_read_begin(e);
		r = dp_bind_pass_common(e, g->id, port, now, &i);
		hash = e->names[i].hash;
	} while (!dp_bind_read_ok(e, s));
	if (r != DP_BIND_YES)
		return r == DP_BIND_ANY ? dp_bind_allows_any(e, vm, port, now, g) :
		    (struct dp_bind_allow){ .allowed = false };
	return (struct dp_bind_allow){ .name_hash = hash, .allowed = true };
}

struct dp_bind_allow
dp_bind_allows(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr, uint16_t port,
    uint64_t now, const struct dp_gen *g)
{
	return dp_bind_allows_inline(b, vm, addr->family, addr->a, port, now, g);
}

uint8_t
dp_bind_budgets(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr, uint64_t now,
    const struct dp_gen *g)
{
	const struct dp_binding *e = dp_bind_live(b, vm, addr, now);
	unsigned int s;
	uint8_t set;

	if (e == NULL)
		return 0;
	do {
		s = dp_bind_read_begin(e);
		set = dp_bind_entry_budgets(e, vm, g, now);
	} while (!dp_bind_read_ok(e, s));
	return set;
}

bool
dp_bind_has_name(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr,
    uint64_t name_hash, uint64_t now)
{
	const struct dp_binding *e = dp_bind_live(b, vm, addr, now);
	unsigned int s;
	bool has;

	if (e == NULL)
		return false;
	do {
		s = dp_bind_read_begin(e);
		has = false;
		for (unsigned int i = 0, n = dp_bind_nnames(e); i < n && !has; i++)
			has = e->names[i].hash == name_hash && e->names[i].expires > now;
	} while (!dp_bind_read_ok(e, s));
	return has;
}

