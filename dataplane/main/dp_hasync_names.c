/*
 * The DNS name budgets' questions, kept for the pair's resync (namegate(8), HA PAIR). The
 * workers remember a VM's questions by a keyed hash of their own, which the peer cannot
 * use; the main lcore sees each admitted question whole (its own workers' DP_EVT_NAME,
 * the peer's NAMES records), so it keeps the last ones here, in a ring, for a window of
 * dns.max_names_per_suffix's per seconds. A (re)connecting peer gets them again: it
 * charges each as asked now (a worker that has seen the name counts it once), which errs
 * toward counting more, never less. The VMs share the places fairly (dp_names_ring.h): one
 * asking without end pushes out its own oldest, counted, never another VM's.
 */
#include "ctl_ha_sync.h"
#include "ctl_ha_wire.h"
#include "dp.h"
#include "dp_control.h"
#include "dp_hasync.h"
#include "dp_names_ring.h"
#include "policy/load.h"

int
dp_hasync_names_start(struct dp_hasync *d)
{
	d->names = dp_names_ring_new(DP_HASYNC_NAMES, d->ctl->ctx->max_vms);
	return d->names != NULL ? 0 : -1;
}

void
dp_hasync_names_free(struct dp_hasync *d)
{
	dp_names_ring_free(d->names);
	d->names = NULL;
}

/* The name budget's window in force: a question older than this counts no more. */
static uint64_t
dp_hasync_names_per(const struct dp_hasync *d)
{
	return (*d->ctl->cfgp)->dns_names_per;
}

/* Seconds since start, from 1: 0 marks an empty slot. */
static uint64_t
dp_hasync_names_now(const struct dp_hasync *d)
{
	return dp_now(d->ctl->ctx) + 1;
}

void
dp_hasync_names_keep(struct dp_hasync *d, uint16_t slot, const struct ctl_ha_rec *r)
{
	if (dp_names_ring_keep(d->names, slot, dp_hasync_names_now(d), dp_hasync_names_per(d),
	    r) == 1)
		d->names_lost++;	/* still inside its window: the resync will miss it */
}

uint32_t
dp_hasync_names_resync(struct dp_hasync *d, uint32_t at, uint32_t room)
{
	uint64_t now = dp_hasync_names_now(d), per = dp_hasync_names_per(d);

	if (d->names == NULL)
		return 0;
	for (; at < dp_names_ring_size(d->names) && room > 0; at++) {
		const struct dp_names_entry *n = dp_names_ring_live(d->names, at, now, per);
		struct ctl_ha_rec r;

		if (n == NULL)
			continue;	/* free, or its window is over */
		r = (struct ctl_ha_rec){ .type = CTL_HA_REC_NAMES, .vm = n->vm,
			.vm_len = n->vm_len, .name = n->name, .name_len = n->name_len,
			.qtype = n->qtype, .suffix_len = n->suffix_len };
		if (ctl_ha_sync_send(d->sync, &r))
			d->resync_sent++;
		room--;
	}
	return at < dp_names_ring_size(d->names) ? at : 0;
}
