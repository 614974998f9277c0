/*
 * Publish: a configuration built into a generation, every name resolved judged under
 * it, swapped in, and the one before retired once every worker has moved (the swap and
 * retire of STYLE s5's unwinding order; control/reload does the parse and validate).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_gen.h"
#include "dp_gen_build.h"
#include "ctl_names.h"
#include "dp_publish.h"
#include "dp_vmslot.h"
#include "policy/load.h"

struct dp_publish_walk {
	struct dp_gen *g;
	const struct pol_config *cfg;
	uint32_t lost;		/* names the table refused */
	int rc;			/* the first refusal */
};

/* What the new policy allows for a name a VM resolved under the old one. */
static void
dp_publish_name(uint16_t slot, const char *name, size_t len, void *arg)
{
	struct dp_publish_walk *r = arg;
	const struct dp_vm *v = &r->g->vms[slot];
	struct pol_ports ports;
	int rc;

	if (slot >= r->g->nvms || !v->present)
		return;
	/* a name no longer allowed gets an empty summary: nothing passes through it */
	pol_match_name_ports(r->cfg->set, v->policy, name, len, &ports);
	ports.budget = dp_budget_of_name(r->g, slot, name, len);
	/* on for a closing: a name refused is not allowed, the rest may still fit */
	if ((rc = dp_gen_names_add(r->g, slot, dp_name_hash(name, len), &ports)) != 0) {
		r->lost++;
		if (r->rc == 0)
			r->rc = rc;
	}
}

/*
 * The room a generation's names table gets. Test builds only: NAMEGATE_TEST_GEN_NAMES caps
 * it, as if the table could hold no more, since headroom makes a real refusal unlikely.
 */
static uint32_t
dp_publish_names_room(uint32_t want)
{
#ifdef NG_TEST_HOOKS
	const char *s = getenv("NAMEGATE_TEST_GEN_NAMES");
	unsigned long cap;

	if (s != NULL && *s != '\0' && (cap = strtoul(s, NULL, 10)) < want)
		return (uint32_t)cap;
#endif
	return want;
}

/*
 * Every name resolved so far, judged under g. 0, or the first refusal with r->lost names
 * left out of g's table: what passed through them is cut under g (fail closed).
 */
static int
dp_publish_names(struct dp_gen *g, const struct pol_config *cfg, const struct ctl_names *names,
    struct dp_publish_walk *r)
{
	*r = (struct dp_publish_walk){ .g = g, .cfg = cfg };
	if ((r->rc = dp_gen_names_init(g, dp_publish_names_room(ctl_names_count(names) + 1))) != 0)
		r->lost = ctl_names_count(names);
	else
		ctl_names_walk(names, dp_publish_name, r);
	return r->rc;
}

/* Why cfg's VMs found no slot: max_vms as started, and the slots removed VMs still hold. */
static void
dp_publish_no_slot(const struct dp_ctx *ctx, const struct dp_gen *prev,
    const struct pol_config *cfg, FILE *err)
{
	uint32_t draining = ctx->vmslots != NULL ? ctx->vmslots->draining : 0;

	fprintf(err, "namegate: out of VM slots: %zu VMs, max_vms %u as started (it changes only "
	    "on restart)", cfg->nvms, prev->max_vms);
	if (draining > 0)
		fprintf(err, ", %u slot%s held by removed VMs until their flows, bindings and "
		    "queries are gone", draining, draining == 1 ? "" : "s");
	fprintf(err, "; generation %u stays in force\n", prev->id);
}

int
dp_publish(struct dp_ctx *ctx, const struct pol_config *cfg, const struct ctl_names *names,
    bool closing, FILE *err)
{
	const struct dp_gen *prev = atomic_load_explicit(&ctx->gen, memory_order_acquire);
	struct dp_publish_walk walk;
	struct dp_gen *g;

	if ((g = dp_gen_create(cfg, prev->id + 1, ctx->nworkers, prev, ctx->vmslots)) == NULL) {
		if (rte_errno == E2BIG)
			dp_publish_no_slot(ctx, prev, cfg, err);
		else
			fprintf(err, "namegate: out of memory; generation %u stays in force\n",
			    prev->id);
		return -ENOMEM;
	}
	if (dp_publish_names(g, cfg, names, &walk) != 0) {
		if (!closing) {
			fprintf(err, "namegate: name table: %s; generation %u stays in force\n",
			    strerror(-walk.rc), prev->id);
			dp_gen_free(g);
			return walk.rc;
		}
		/* closing never waits on room: the names left out are cut, as not allowed */
		fprintf(err, "namegate: name table: %s; generation %u in force without %u of "
		    "the names resolved: flows through them are cut\n", strerror(-walk.rc),
		    g->id, walk.lost);
	}
	atomic_store_explicit(&ctx->gen, g, memory_order_release);
	/* every worker has moved to g once each has passed a quiescent point */
	rte_rcu_qsbr_synchronize(ctx->qsbr, RTE_QSBR_THRID_INVALID);
	if (ctx->vmslots != NULL)	/* the slots g dropped drain from now on */
		dp_vmslots_commit(ctx->vmslots, prev, g);
	dp_gen_free((struct dp_gen *)(uintptr_t)prev);
	return 0;
}
