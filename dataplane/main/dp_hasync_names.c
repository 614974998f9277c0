/*
 * The DNS name budgets' questions, kept for the pair's resync (namegate(8), HA PAIR). The
 * workers remember a VM's questions by a keyed hash of their own, which the peer cannot
 * use; the main lcore sees each admitted question whole (its own workers' DP_EVT_NAME,
 * the peer's NAMES records), so it keeps the last ones here, in a ring, for a window of
 * dns.max_names_per_suffix's per seconds. A (re)connecting peer gets them again: it
 * charges each as asked now (a worker that has seen the name counts it once), which errs
 * toward counting more, never less. A full ring loses its oldest, counted.
 */
#include <stdlib.h>
#include <string.h>

#include "ctl_ha_sync.h"
#include "ctl_ha_wire.h"
#include "dp.h"
#include "dp_control.h"
#include "dp_hasync.h"
#include "policy/load.h"

struct dp_hasync_name {
	uint64_t at;			/* dp_now() when admitted; 0: empty */
	uint16_t qtype;
	uint8_t vm_len, name_len, suffix_len;
	char vm[CTL_HA_VM_MAX];
	char name[CTL_HA_NAME_MAX];
};

struct dp_hasync_names {
	struct dp_hasync_name *ring;
	uint32_t next;			/* where the next one goes: the oldest when full */
};

int
dp_hasync_names_start(struct dp_hasync *d)
{
	if ((d->names = calloc(1, sizeof(*d->names))) == NULL ||
	    (d->names->ring = calloc(DP_HASYNC_NAMES, sizeof(d->names->ring[0]))) == NULL) {
		free(d->names);
		d->names = NULL;
		return -1;
	}
	return 0;
}

void
dp_hasync_names_free(struct dp_hasync *d)
{
	if (d->names != NULL)
		free(d->names->ring);
	free(d->names);
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
dp_hasync_names_keep(struct dp_hasync *d, const struct ctl_ha_rec *r)
{
	uint64_t now = dp_hasync_names_now(d);
	struct dp_hasync_name *n;

	if (d->names == NULL || r->vm_len > CTL_HA_VM_MAX || r->name_len > CTL_HA_NAME_MAX)
		return;
	n = &d->names->ring[d->names->next];
	if (n->at != 0 && now - n->at < dp_hasync_names_per(d))
		d->names_lost++;	/* still inside its window: the resync will miss it */
	*n = (struct dp_hasync_name){ .at = now, .qtype = r->qtype, .vm_len = r->vm_len,
		.name_len = r->name_len, .suffix_len = r->suffix_len };
	memcpy(n->vm, r->vm, r->vm_len);
	memcpy(n->name, r->name, r->name_len);
	d->names->next = (d->names->next + 1) % DP_HASYNC_NAMES;
}

uint32_t
dp_hasync_names_resync(struct dp_hasync *d, uint32_t at, uint32_t room)
{
	uint64_t now = dp_hasync_names_now(d);

	if (d->names == NULL)
		return 0;
	for (; at < DP_HASYNC_NAMES && room > 0; at++) {
		const struct dp_hasync_name *n = &d->names->ring[at];
		struct ctl_ha_rec r = { .type = CTL_HA_REC_NAMES, .vm = n->vm, .vm_len = n->vm_len,
			.name = n->name, .name_len = n->name_len, .qtype = n->qtype,
			.suffix_len = n->suffix_len };

		if (n->at == 0 || now - n->at >= dp_hasync_names_per(d))
			continue;	/* empty, or its window is over */
		if (ctl_ha_sync_send(d->sync, &r))
			d->resync_sent++;
		room--;
	}
	return at < DP_HASYNC_NAMES ? at : 0;
}
