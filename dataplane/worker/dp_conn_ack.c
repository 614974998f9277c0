/*
 * The server's segments that take no call: its ACK of a flow's judged bytes, on the lean
 * path (dp_burst.c), the one frame of nearly every connection toward the VM that is not
 * steady only because the flow still keeps what was judged of its first bytes; and its
 * plain segments on the general path (its SYN-ACK, its FIN). What
 * dp_conn_uplink_general() would do to each (test_dp_conn_plain holds them to one answer).
 */
#include <string.h>

#include "dp_conn.h"
#include "dp_conn_int.h"
#include "dp_tls.h"

bool
dp_conn_uplink_judged(struct dp_worker *w, uint64_t steady, struct dp_flow *f, uint8_t flags,
    uint32_t ack, uint16_t win)
{
	uint64_t word;

	/*
	 * steady but for its judged bytes: its generation's, no module's, in no budget, no
	 * flow log; and no HA peer, which hears when the server has the hello (dp_ha_note())
	 */
	memcpy(&word, &f->gen, sizeof(word));
	if (((word ^ steady) << 16) != 0 || w->ctx->ha)
		return false;
	dp_conn_uplink_steady(w, f, true, flags, ack, win);
	dp_tls_peer_ack(w, f);	/* all of them acknowledged: let them go */
	return true;
}

/*
 * Is p, toward the VM on its flow f, a plain segment: one that dp_conn_uplink_general()
 * would only track (the flow log's counts included) and send on, or to DNS over TCP's
 * judge? Its flow judged by the current generation and in no budget, no judged bytes to
 * let go and no HTTP reader, no HA peer to tell, and a datagram or a TCP segment that
 * resets nothing (a FIN only closes its side). Its flow stage takes no call, so no stack
 * frame.
 */
static inline bool
dp_conn_uplink_plain(const struct dp_worker *w, const struct pkt *p, const struct dp_flow *f)
{
	return f->gen == w->gen->id && f->budgets == 0 && f->judged == 0 &&
	    f->tls != DP_TLS_HTTP && !(p->tcp_flags & PKT_TCP_RST) && !w->ctx->ha;
}

struct dp_fate
dp_conn_uplink_any(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    struct dp_flow *f, struct dp_flow **fp)
{
	if (f == NULL || !dp_conn_uplink_plain(w, p, f))
		return dp_conn_uplink_general(w, p, k, f, fp);
	*fp = f;
	dp_flow_track(w, f, p, false);
	if (dp_conn_server_first(f, p))
		f->tls = DP_TLS_NONE;
	return f->tls == DP_TLS_DNS ? dp_fate(DP_FATE_STREAM) : dp_fate(DP_FATE_INGRESS);
}
