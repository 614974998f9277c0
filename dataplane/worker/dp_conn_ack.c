/*
 * The server's plain segments on the general path (its SYN-ACK, its FIN), which take no
 * call: what dp_conn_uplink_general() would do to each (test_dp_conn_plain holds them to
 * one answer). Its ACK of a flow's judged bytes on the lean path: dp_conn_uplink_judged()
 * (dp_conn_lean.h).
 */
#include <string.h>

#include "dp_conn.h"
#include "dp_conn_int.h"
#include "dp_tls.h"

/*
 * Is p, toward the VM on its flow f, a plain segment: one that dp_conn_uplink_general()
 * would only track (the flow log's counts included) and send on, or to DNS over TCP's
 * judge, letting judged bytes go once the server has them all? Its flow judged by the
 * current generation and in no budget, no HTTP reader, no HA peer to tell, and a datagram
 * or a TCP segment that resets nothing (a FIN only closes its side) and is not a SYN-ACK
 * after the first (dp_flow_synack_disputed()).
 */
static inline bool
dp_conn_uplink_plain(const struct dp_worker *w, const struct pkt *p, const struct dp_flow *f)
{
	return f->gen == w->gen->id && f->budgets == 0 && f->tls != DP_TLS_HTTP &&
	    !(p->tcp_flags & PKT_TCP_RST) && !((p->tcp_flags & PKT_TCP_SYN) && f->peer_synced) &&
	    !w->ctx->ha;
}

/* A plain segment tracked on f. */
static inline __attribute__((always_inline)) void
dp_conn_uplink_track(struct dp_worker *w, const struct pkt *p, struct dp_flow *f)
{
	dp_flow_track(w, f, p, false);
	if (dp_conn_server_first(f, p))
		f->tls = DP_TLS_NONE;
}

/* Its fate once tracked, by the tls mode f is left in (DNS over TCP: its judge's). */
static inline struct dp_fate
dp_conn_uplink_fate(const struct dp_flow *f)
{
	return f->tls == DP_TLS_DNS ? dp_fate(DP_FATE_STREAM) : dp_fate(DP_FATE_INGRESS);
}

/*
 * A plain segment on a flow that keeps judged bytes (or waits for a second hello): tracked,
 * then they go once the server has them all. Apart, so that the plain segments without
 * them, most of them, take no call and no stack frame.
 */
static __attribute__((noinline)) struct dp_fate
dp_conn_uplink_plain_judged(struct dp_worker *w, const struct pkt *p, struct dp_flow *f)
{
	dp_conn_uplink_track(w, p, f);
	/* DNS over TCP's judged bytes let go: its judge's no more */
	if (p->proto == PKT_PROTO_TCP) {
		dp_tls_peer_ack(w, f, p->tcp_flags, p->seq, dp_seq_len(p), p->ack);
		dp_tls_server_first(w, f, p->tcp_flags, p->seq, p->payload,
		    (uint32_t)p->payload_len, p->ack);
	}
	return dp_conn_uplink_fate(f);
}

struct dp_fate
dp_conn_uplink_any(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    struct dp_flow *f, struct dp_flow **fp)
{
	if (f == NULL || !dp_conn_uplink_plain(w, p, f))
		return dp_conn_uplink_general(w, p, k, f, fp);
	*fp = f;
	if (f->judged != 0 || unlikely(f->hello_phase == DP_HELLO_RETRY))
		return dp_conn_uplink_plain_judged(w, p, f);
	dp_conn_uplink_track(w, p, f);
	return dp_conn_uplink_fate(f);
}
