/*
 * VM slots across reloads, on the main lcore: which slot each VM of a new generation gets,
 * and when the slot of a VM a reload removed may be given to another.
 *
 * Everything the fast path and the control loop keep of a VM is indexed by its slot: its
 * flows, bindings, queries in flight, held bytes, waiting approvals and fragments (each
 * worker's tables, the one binding table), its counters, budget cells and name budget,
 * and the names it resolved and was refused (control/). A new VM given a slot must start
 * with none of the old one's. The scheme, the simplest that is safe:
 *
 * - A slot a published generation no longer has is DRAINING. Its VM is in no generation a
 *   worker can hold (dp_publish() waits for every worker to leave the old one), so no frame
 *   is classified to it again and nothing new of it is made, except from what of it still
 *   exists (a flow's frames, a query's answer binding).
 * - Each main loop turn counts what of it still exists, in every worker and the binding
 *   table, binding records in flight included. It ends on its own: no frame is
 *   classified to the slot any more, and the sweeps end what belongs to a VM the running
 *   generation does not have (each worker's flow aging, the main lcore's binding sweep);
 *   queries and fragments time out. Nothing is purged from under a worker: its tables stay
 *   its own.
 * - Once all is gone the slot waits for a grace period (every worker through a quiescent
 *   point, which orders their last writes before ours), is counted again, and after one
 *   more drain of the records, purged: counters, budget cells, name budget, names and
 *   the mirror's bindings. Only then is it free, and a new VM may get it.
 *
 * So a slot is reused after a sweep of each table and the longest of those timeouts (a
 * held hello's, a query's: seconds); until then a reload that needs more slots than are
 * free is refused and says so. Slots are handed out lowest first, purged ones before ones never used, so
 * loops over the handed-out slots stay short.
 */
#ifndef DP_VMSLOT_H
#define DP_VMSLOT_H

#include <stdbool.h>
#include <stdint.h>

struct dp_ctx;
struct dp_gen;
struct ctl_names;
struct ctl_mirror;

enum dp_vmslot_state {
	DP_VMSLOT_FREE,		/* never handed out, or purged: a new VM may have it */
	DP_VMSLOT_LIVE,		/* a VM of the running generation has it */
	DP_VMSLOT_DRAINING,	/* its VM was removed; some of its state still exists */
	DP_VMSLOT_QUIET,	/* none found: waiting for the grace period (token) */
	DP_VMSLOT_GRACED,	/* grace period over: purged at the next tick if still none */
};

struct dp_vmslots {
	uint16_t max_vms;
	uint8_t *state;		/* max_vms of enum dp_vmslot_state */
	uint64_t *token;	/* DP_VMSLOT_QUIET: the grace period's qsbr token */
	uint32_t draining;	/* slots neither free nor live */
	uint64_t purged;	/* slots purged and free again, ever */
};

/* The control loop's tables purged with a slot (NULL: none). */
struct dp_vmslot_ctl {
	struct ctl_names *names, *tried;
	struct ctl_mirror *mirror;
	struct dp_flowlog_out *flowlog;	/* NULL: no flow log */
};

/* 0, or -ENOMEM. */
int dp_vmslots_init(struct dp_vmslots *s, uint16_t max_vms);
void dp_vmslots_fini(struct dp_vmslots *s);

/* May a new VM of a generation being built have slot? */
static inline bool
dp_vmslots_free(const struct dp_vmslots *s, uint16_t slot)
{
	return s != NULL && slot < s->max_vms && s->state[slot] == DP_VMSLOT_FREE;
}

/* g went live, prev (may be NULL) retired: its slots are live, those it dropped draining. */
void dp_vmslots_commit(struct dp_vmslots *s, const struct dp_gen *prev, const struct dp_gen *g);

/*
 * The main loop's step, after it drained the workers' records: draining slots counted,
 * and the ones found empty twice around a grace period purged and freed. Returns how
 * many were freed.
 */
unsigned int dp_vmslots_tick(struct dp_ctx *ctx, const struct dp_vmslot_ctl *ctl);

#endif
