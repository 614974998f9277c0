/*
 * VM slots across reloads: their states, and the purge of a removed VM's slot before a new
 * VM may have it. The scheme, and why it is safe, is dp_vmslot.h's.
 */
#include <errno.h>
#include <stdlib.h>

#include <rte_rcu_qsbr.h>

#include "ctl_mirror.h"
#include "ctl_names.h"
#include "dp.h"
#include "dp_bind.h"
#include "dp_flowlog_out.h"
#include "dp_vmslot.h"
#include "dp_worker.h"

int
dp_vmslots_init(struct dp_vmslots *s, uint16_t max_vms)
{
	*s = (struct dp_vmslots){ .max_vms = max_vms };
	s->state = calloc((size_t)max_vms + 1, sizeof(s->state[0]));	/* DP_VMSLOT_FREE */
	s->token = calloc((size_t)max_vms + 1, sizeof(s->token[0]));
	if (s->state == NULL || s->token == NULL) {
		dp_vmslots_fini(s);
		return -ENOMEM;
	}
	return 0;
}

void
dp_vmslots_fini(struct dp_vmslots *s)
{
	free(s->state);
	free(s->token);
	s->state = NULL;
	s->token = NULL;
}

void
dp_vmslots_commit(struct dp_vmslots *s, const struct dp_gen *prev, const struct dp_gen *g)
{
	for (uint16_t slot = 0; slot < g->nvms && slot < s->max_vms; slot++) {
		if (g->vms[slot].present) {
			s->state[slot] = DP_VMSLOT_LIVE;
		} else if (prev != NULL && slot < prev->nvms && prev->vms[slot].present) {
			s->state[slot] = DP_VMSLOT_DRAINING;
			s->draining++;
		}
	}
}

/* What of slot's VM is left in the fast path: every worker's, and its bindings. */
static uint64_t
dp_vmslot_held(const struct dp_ctx *ctx, uint16_t slot)
{
	uint64_t n = dp_binds_count(ctx->binds, slot);

	for (unsigned int k = 0; k < ctx->nworkers; k++)
		n += dp_worker_vm_held(ctx->workers[k], slot);
	return n;
}

/* 0 with slot's state gone everywhere, or -ENOMEM with the control loop's kept. */
static int
dp_vmslot_purge(struct dp_ctx *ctx, const struct dp_vmslot_ctl *ctl, uint16_t slot)
{
	/* the mirror's bindings point at the names: they go first */
	if (ctl->mirror != NULL)
		ctl_mirror_forget_slot(ctl->mirror, slot);
	if ((ctl->names != NULL && ctl_names_forget(ctl->names, slot) != 0) ||
	    (ctl->tried != NULL && ctl_names_forget(ctl->tried, slot) != 0))
		return -ENOMEM;
	for (unsigned int k = 0; k < ctx->nworkers; k++)
		dp_worker_vm_purge(ctx->workers[k], slot);
	dp_flowlog_out_forget_slot(ctl->flowlog, slot);
	return 0;
}

unsigned int
dp_vmslots_tick(struct dp_ctx *ctx, const struct dp_vmslot_ctl *ctl)
{
	struct dp_vmslots *s = ctx->vmslots;
	unsigned int freed = 0;

	if (s == NULL || s->draining == 0)
		return 0;
	for (uint16_t slot = 0; slot < s->max_vms; slot++) {
		uint8_t *st = &s->state[slot];

		if (*st == DP_VMSLOT_FREE || *st == DP_VMSLOT_LIVE)
			continue;
		if (dp_vmslot_held(ctx, slot) != 0) {
			*st = DP_VMSLOT_DRAINING;	/* counted too early: start again */
			continue;
		}
		switch (*st) {
		case DP_VMSLOT_DRAINING:
			s->token[slot] = rte_rcu_qsbr_start(ctx->qsbr);
			*st = DP_VMSLOT_QUIET;
			break;
		case DP_VMSLOT_QUIET:
			/* every worker's writes before its quiescent point are ours to see now */
			if (rte_rcu_qsbr_check(ctx->qsbr, s->token[slot], false) == 1)
				*st = DP_VMSLOT_GRACED;
			break;
		default:
			/*
			 * Graced a turn ago, and the turn's drain has taken every record the
			 * workers put on their rings before it: none of them names this slot.
			 */
			if (dp_vmslot_purge(ctx, ctl, slot) != 0)
				break;
			*st = DP_VMSLOT_FREE;
			s->draining--;
			s->purged++;
			freed++;
			break;
		}
	}
	return freed;
}
