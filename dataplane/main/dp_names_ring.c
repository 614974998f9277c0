/*
 * The questions' pool (dp_names_ring.h): entries linked into one list per VM slot, oldest
 * first, and a free list, through the same next field.
 */
#include <stdlib.h>
#include <string.h>

#include "dp_names_ring.h"

#define DP_NAMES_NONE	UINT32_MAX

struct dp_names_ring {
	struct dp_names_entry *pool;
	uint32_t size;
	uint16_t max_vms;
	uint32_t *head, *tail, *held;	/* by slot: its oldest, its youngest, how many */
	uint32_t free;
	uint16_t most;			/* the slot last found holding most */
};

struct dp_names_ring *
dp_names_ring_new(uint32_t size, uint16_t max_vms)
{
	struct dp_names_ring *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->pool = calloc(size, sizeof(q->pool[0]));
	q->head = malloc(max_vms * sizeof(q->head[0]));
	q->tail = malloc(max_vms * sizeof(q->tail[0]));
	q->held = calloc(max_vms, sizeof(q->held[0]));
	if (q->pool == NULL || q->head == NULL || q->tail == NULL || q->held == NULL) {
		dp_names_ring_free(q);
		return NULL;
	}
	q->size = size;
	q->max_vms = max_vms;
	for (uint16_t s = 0; s < max_vms; s++)
		q->head[s] = q->tail[s] = DP_NAMES_NONE;
	q->free = DP_NAMES_NONE;
	for (uint32_t i = size; i-- > 0;) {
		q->pool[i].next = q->free;
		q->free = i;
	}
	return q;
}

void
dp_names_ring_free(struct dp_names_ring *q)
{
	if (q == NULL)
		return;
	free(q->pool);
	free(q->head);
	free(q->tail);
	free(q->held);
	free(q);
}

static uint32_t
dp_names_pop_oldest(struct dp_names_ring *q, uint16_t slot)
{
	uint32_t e = q->head[slot];

	q->head[slot] = q->pool[e].next;
	if (q->head[slot] == DP_NAMES_NONE)
		q->tail[slot] = DP_NAMES_NONE;
	q->held[slot]--;
	return e;
}

static void
dp_names_release(struct dp_names_ring *q, uint32_t e)
{
	q->pool[e].at = 0;
	q->pool[e].next = q->free;
	q->free = e;
}

static uint32_t
dp_names_take_free(struct dp_names_ring *q)
{
	uint32_t e = q->free;

	q->free = q->pool[e].next;
	return e;
}

/* slot's questions whose window is over, back to the free list: they are its oldest. */
static void
dp_names_expire(struct dp_names_ring *q, uint16_t slot, uint64_t now, uint64_t per)
{
	while (q->head[slot] != DP_NAMES_NONE && now - q->pool[q->head[slot]].at >= per)
		dp_names_release(q, dp_names_pop_oldest(q, slot));
}

/*
 * The place for slot's next question; *lost set when a live one gave it up: when all are
 * taken, the oldest of the slot holding most (slot's own when that is slot). most is kept
 * from the last time it was looked for, and looked for again only when it no longer holds
 * more than slot (or, being slot, holds none): so a VM asking without end gives up its own
 * at no cost, and a quiet VM takes from it with none either.
 */
static uint32_t
dp_names_place(struct dp_names_ring *q, uint16_t slot, uint64_t now, uint64_t per, int *lost)
{
	dp_names_expire(q, slot, now, per);
	if (q->free != DP_NAMES_NONE)
		return dp_names_take_free(q);
	if (q->most == slot ? q->held[slot] == 0 : q->held[q->most] <= q->held[slot]) {
		q->most = slot;
		for (uint16_t s = 0; s < q->max_vms; s++) {
			dp_names_expire(q, s, now, per);
			if (q->held[s] > q->held[q->most])
				q->most = s;
		}
	} else {
		dp_names_expire(q, q->most, now, per);
	}
	if (q->free != DP_NAMES_NONE)
		return dp_names_take_free(q);
	*lost = 1;
	return dp_names_pop_oldest(q, q->most);
}

int
dp_names_ring_keep(struct dp_names_ring *q, uint16_t slot, uint64_t now, uint64_t per,
    const struct ctl_ha_rec *r)
{
	struct dp_names_entry *n;
	int lost = 0;
	uint32_t e;

	if (q == NULL || slot >= q->max_vms || q->size == 0 || r->vm_len > CTL_HA_VM_MAX ||
	    r->name_len > CTL_HA_NAME_MAX)
		return -1;
	e = dp_names_place(q, slot, now, per, &lost);
	n = &q->pool[e];
	*n = (struct dp_names_entry){ .at = now, .next = DP_NAMES_NONE, .slot = slot,
		.qtype = r->qtype, .vm_len = r->vm_len, .name_len = r->name_len,
		.suffix_len = r->suffix_len };
	memcpy(n->vm, r->vm, r->vm_len);
	memcpy(n->name, r->name, r->name_len);
	if (q->tail[slot] != DP_NAMES_NONE)
		q->pool[q->tail[slot]].next = e;
	else
		q->head[slot] = e;
	q->tail[slot] = e;
	q->held[slot]++;
	return lost;
}

const struct dp_names_entry *
dp_names_ring_live(const struct dp_names_ring *q, uint32_t i, uint64_t now, uint64_t per)
{
	const struct dp_names_entry *n = &q->pool[i];

	return n->at != 0 && now - n->at < per ? n : NULL;
}

uint32_t
dp_names_ring_size(const struct dp_names_ring *q)
{
	return q->size;
}

uint32_t
dp_names_ring_held(const struct dp_names_ring *q, uint16_t slot)
{
	return slot < q->max_vms ? q->held[slot] : 0;
}
