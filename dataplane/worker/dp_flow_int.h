/*
 * The per-worker flow table's layout, private to its two halves: dp_flow.c (open, close,
 * aging: the hot path) and dp_flows_make.c (making it, its hooks, and what the control
 * side reads of it).
 */
#ifndef DP_FLOW_INT_H
#define DP_FLOW_INT_H

#include <stddef.h>
#include <stdint.h>

#include "dp_flow.h"
#include "dp_flow_look.h"
#include "dp_flow_tab.h"
#include "dp_slots.h"

struct dp_flows {
	struct dp_flows_head h;		/* the entries and their accounts: first (dp_flow.h) */
	struct dp_ft ft;
	uint32_t *at;			/* each open entry's slot's place in the index
					 * (dp_ft_place_bit()): its close drops it there
					 * unless a move took it on */
	struct dp_slots slots;
	uint32_t cap;
	uint32_t cursor;		/* aging */
	uint32_t reclaim_credit;	/* entries opens may still examine: dp_flows_age refills */
	uint16_t nvms;
	uint32_t *per_vm;
	void (*release)(struct dp_flow *, void *);
	void *release_arg;
	void (*closed)(const struct dp_flow *, struct dp_flow_acct *, void *);
	void (*passed)(struct dp_flow *, struct dp_flow_acct *, void *);
	void *report_arg;
	uint8_t closed_ha;		/* bit ha set: a flow of that enum dp_flow_ha is reported
					 * closed (all: closed_every; none: no closed) */
};
_Static_assert(offsetof(struct dp_flows, h) == offsetof(struct dp_flows_look, h) &&
    offsetof(struct dp_flows, ft) == offsetof(struct dp_flows_look, ft),
    "the burst's lookup reads the table through struct dp_flows_look");

#endif
