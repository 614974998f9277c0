/*
 * The HA pair's flows (namegate(8), HA PAIR): the TCP flows whose verdict is final, as the
 * pair knows them, kept apart from the workers' live flow tables. The peer's arrive over
 * the sync stream; this box's own are kept too, for the bulk resync a (re)connecting peer
 * gets. After a takeover, a worker that meets a mid-stream segment with no flow looks its
 * key up here (dp_ha_adopt.h), and nothing else ever reads it.
 *
 * One writer, the main lcore; workers read beside it without a lock: the index is
 * dp_flow_tab.h's (a slot's entry stored before its tag, moves counted), and each entry is
 * written under a sequence count a reader checks around its copy, so it never takes a
 * half-written record, nor one whose entry was reused for another key while it read
 * (the key is compared on the copy). Fixed size, allocated at start.
 */
#ifndef DP_HA_FLOWS_H
#define DP_HA_FLOWS_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_flow.h"

/*
 * A record lasts this long unless reported again (the workers report a live one every
 * DP_HA_REFRESH_SECONDS): one whose end never came (the stream was down, a ring full) goes.
 */
#define DP_HA_FLOW_TTL		3600

/* What the peer needs to carry a flow on (struct dp_flow's fields of the same names). */
struct dp_ha_flow {
	struct dp_flow_key key;		/* vm: this box's slot of the VM */
	uint64_t name_hash;		/* this box's dp_name_hash() of its name; 0: none */
	uint32_t isn, vm_nxt, peer_ack, peer_wnd, peer_isn;
	uint8_t how;			/* enum dp_admission: DP_ADMIT_ADDR or DP_ADMIT_BINDING */
	uint8_t name_bound;
	uint8_t vm_wscale, peer_wscale;
	/*
	 * A peer's record by name, judged when it came in (the worker has the name's hash
	 * alone, and a generation knows the names its VMs had resolved when it was built):
	 * gen, the generation whose policy allowed the name on the port (0: none did), and
	 * name_budget, the name's budget there (1 + index, 0: none). Under another generation
	 * the name is judged by that generation's names, as a reload judges a flow.
	 */
	uint32_t gen;
	uint8_t name_budget;
	uint64_t expires;		/* seconds since start (dp_now()) when it lapses */
};

struct dp_ha_flows;

/*
 * A table for cap flows, at most per_vm of them any one VM's, nvms VM slots. NULL when
 * memory is short.
 */
struct dp_ha_flows *dp_ha_flows_create(uint32_t cap, uint32_t per_vm, uint16_t nvms,
    int socket);
void dp_ha_flows_free(struct dp_ha_flows *t);
/* The EAL memory dp_ha_flows_create() takes (dp_mem.h). */
uint64_t dp_ha_flows_mem(uint32_t cap, uint16_t nvms);

/*
 * Main lcore: r kept (replacing what r's key had). 0; -ENOSPC when the table is full,
 * -EDQUOT when r's VM holds its share: counted either way, and the record is lost.
 */
int dp_ha_flows_put(struct dp_ha_flows *t, const struct dp_ha_flow *r);

/* Main lcore: k's record gone, if it had one. */
void dp_ha_flows_del(struct dp_ha_flows *t, const struct dp_flow_key *k);

/*
 * Main lcore: up to n entries from *cursor examined, those lapsed by now dropped; *cursor
 * moves on (0: a pass ended). Returns how many were dropped.
 */
uint32_t dp_ha_flows_expire(struct dp_ha_flows *t, uint64_t now, uint32_t n,
    uint32_t *cursor);

/*
 * Main lcore: fn for up to n records from place at (0: the first), returning where the
 * next call goes on from, 0 once the walk is done.
 */
uint32_t dp_ha_flows_walk_some(const struct dp_ha_flows *t, uint32_t at, uint32_t n,
    void (*fn)(const struct dp_ha_flow *, void *), void *arg);

/* Any thread: k's record copied to *out; false when there is none. */
bool dp_ha_flows_get(const struct dp_ha_flows *t, const struct dp_flow_key *k,
    struct dp_ha_flow *out);

/* Records held; and those lost: [0] the table was full, [1] their VM held its share. */
uint32_t dp_ha_flows_count(const struct dp_ha_flows *t);
void dp_ha_flows_refused(const struct dp_ha_flows *t, uint64_t out[2]);

#endif
