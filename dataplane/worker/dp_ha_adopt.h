/*
 * The HA pair's flows seen from a worker (namegate(8), HA PAIR): a flow is reported to
 * the peer once its verdict is final, and its end; after a takeover a mid-stream TCP
 * segment with no flow adopts the record the peer reported, judged again by the current
 * policy. Only a box with ha: calls these, and only off the steady path: a flow's state
 * changes and a lookup that missed.
 */
#ifndef DP_HA_ADOPT_H
#define DP_HA_ADOPT_H

#include <stdbool.h>

#include "dp.h"
#include "dp_flow.h"
#include "sni/pkt.h"

/*
 * A flow the peer knows is reported again this often while it lives (aging passes it
 * every few seconds), with its sequence state then: the peer's record lasts
 * DP_HA_FLOW_TTL (dp_ha_flows.h) unless reported again.
 */
#define DP_HA_REFRESH_SECONDS	600

/*
 * Is f's verdict final: a TCP flow both ends opened, allowed for good (by its address, or
 * by a name whose hello the server has acknowledged whole: nothing of it is judged again,
 * held or compared), not an audited VM's would-be block? Everything else (a hello still
 * pending or compared, HTTP and DNS judged for life, UDP) is never reported nor adopted.
 */
static inline bool
dp_ha_final(const struct dp_flow *f)
{
	return f->key.proto == PKT_PROTO_TCP && f->state == DP_FLOW_ESTABLISHED &&
	    f->peer_synced && f->tls == DP_TLS_NONE && f->judged == 0 && f->hold == 0 &&
	    f->peer_hold == 0 && !f->would_block &&
	    (f->how == DP_ADMIT_ADDR || f->how == DP_ADMIT_BINDING);
}

/*
 * f's report to the peer: its verdict final (and again as it is now: adopted, refreshed),
 * or its end once it is closing.
 */
void dp_ha_report(struct dp_worker *w, struct dp_flow *f);

/* f changed state: reported to the peer if its verdict just became final, or it closes. */
static inline void
dp_ha_note(struct dp_worker *w, struct dp_flow *f)
{
	if (f->ha != DP_FLOW_HA_ENDED && (f->ha == DP_FLOW_HA_SYNCED ?
	    f->state == DP_FLOW_CLOSING : dp_ha_final(f)))
		dp_ha_report(w, f);
}

/* Aging passes f: reported again if the peer knows it and its last report is old. */
static inline void
dp_ha_refresh(struct dp_worker *w, struct dp_flow *f)
{
	if (f->ha == DP_FLOW_HA_SYNCED && w->now - f->ha_at >= DP_HA_REFRESH_SECONDS)
		dp_ha_report(w, f);
}

/* Was the peer told of f, so that its end must follow (dp_ha_end())? */
static inline bool
dp_ha_told(const struct dp_flow *f)
{
	return f->ha == DP_FLOW_HA_SYNCED;
}

/* f is closing or closed: its end to the peer, if the peer was told of it. */
void dp_ha_end(struct dp_worker *w, const struct dp_flow *f);

/*
 * A TCP segment p (from_vm: from the VM) on key k with no flow: the flow adopted from the
 * peer's record, opened as established under the current generation, or NULL (counted
 * by reason) when p opens nothing: not mid-stream, no record, or the record no longer
 * allowed.
 */
struct dp_flow *dp_ha_adopt(struct dp_worker *w, const struct pkt *p,
    const struct dp_flow_key *k, bool from_vm);

#endif
