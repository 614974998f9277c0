/*
 * Reload: the unwinding order of STYLE s5 (parse, validate, build, swap, retire).
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
#include "ctl_grants_live.h"
#include "ctl_names.h"
#include "dp_reload.h"
#include "ctl_grants.h"
#include "policy/load.h"

struct dp_reload_walk {
	struct dp_gen *g;
	const struct pol_config *cfg;
	uint32_t lost;		/* names the table refused */
	int rc;			/* the first refusal */
};

/* What the new policy allows for a name a VM resolved under the old one. */
static void
dp_reload_name(uint16_t slot, const char *name, size_t len, void *arg)
{
	struct dp_reload_walk *r = arg;
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

static bool
dp_str_differs(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") != 0;
}

/* Settings the running process cannot change: say so, and go on with the rest. */
static void
dp_reload_restart_only(const struct pol_config *old, const struct pol_config *next, FILE *err)
{
	bool eal = old->neal != next->neal;

	for (size_t i = 0; !eal && i < old->neal; i++)
		eal = strcmp(old->eal[i], next->eal[i]) != 0;
	if (eal || dp_str_differs(old->vm_port, next->vm_port) ||
	    dp_str_differs(old->uplink_port, next->uplink_port) || old->workers != next->workers ||
	    old->max_flows != next->max_flows || old->max_bindings != next->max_bindings ||
	    old->mbufs != next->mbufs)
		fprintf(err, "namegate: reload: dataplane ports, EAL options, workers and table "
		    "sizes change only on restart; the running ones stay\n");
}

/*
 * Every name resolved so far, judged under g. 0, or the first refusal with r->lost names
 * left out of g's table: what passed through them is cut under g (fail closed).
 */
static int
dp_publish_names(struct dp_gen *g, const struct pol_config *cfg, const struct ctl_names *names,
    struct dp_reload_walk *r)
{
	*r = (struct dp_reload_walk){ .g = g, .cfg = cfg };
	if ((r->rc = dp_gen_names_init(g, dp_publish_names_room(ctl_names_count(names) + 1))) != 0)
		r->lost = ctl_names_count(names);
	else
		ctl_names_walk(names, dp_reload_name, r);
	return r->rc;
}

int
dp_publish(struct dp_ctx *ctx, const struct pol_config *cfg, const struct ctl_names *names,
    bool closing, FILE *err)
{
	const struct dp_gen *prev = atomic_load_explicit(&ctx->gen, memory_order_acquire);
	struct dp_reload_walk walk;
	struct dp_gen *g;

	if ((g = dp_gen_create(cfg, prev->id + 1, ctx->nworkers, prev)) == NULL) {
		fprintf(err, "namegate: %s; generation %u stays in force\n",
		    rte_errno == E2BIG ? "out of VM slots" : "out of memory", prev->id);
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
	dp_gen_free((struct dp_gen *)(uintptr_t)prev);
	return 0;
}

int
dp_reload(struct dp_ctx *ctx, struct pol_config **cfgp, const struct ctl_names *names,
    struct ctl_grants_live *grants, struct pol_errs *errs, FILE *err)
{
	const struct dp_gen *prev = atomic_load_explicit(&ctx->gen, memory_order_acquire);
	struct pol_config *old = *cfgp, *next;
	struct ctl_overlay ov;
	int rc;

	if ((next = pol_load_file(old->path, errs)) == NULL) {
		pol_errs_print(err, errs);
		fprintf(err, "namegate: reload of %s rejected; generation %u stays in force\n",
		    old->path, prev->id);
		return -EINVAL;
	}
	dp_reload_restart_only(old, next, err);
	/* the new file's policies, with the live grants on top: one generation, no gap */
	if ((rc = ctl_grants_live_overlay(grants, next, &ov)) < 0) {
		fprintf(err, "namegate: reload: grants: %s; generation %u stays in force\n",
		    strerror(-rc), prev->id);
		pol_config_free(next);
		return rc;
	}
	if ((rc = dp_publish(ctx, &ov.view, names, true, err)) != 0) {
		ctl_overlay_free(&ov);
		pol_config_free(next);
		return rc;
	}
	ctl_grants_live_adopt(grants, &ov);
	pol_config_free(old);
	*cfgp = next;
	fprintf(err, "namegate: reload: generation %u in force: %zu VMs%s\n",
	    atomic_load_explicit(&ctx->gen, memory_order_acquire)->id, next->nvms,
	    ctl_names_overflowed(names) ? " (name table full: flows through names it lost are "
	    "cut)" : "");
	return 0;
}
