/*
 * QUIC from the VMs (SPEC s4.6): a flow's datagrams held until the ClientHello in their
 * Initials is judged, and after the verdict, every datagram that could open another
 * connection judged the same way, on any port.
 */
#include "dp_hold.h"
#include "dp_quic.h"
#include "dp_quic_flow.h"
#include "dp_tls.h"

/*
 * The flow's hello is allowed (or, audited, would have been cut): from now on each of its
 * long headers is read for a new one, and the connection it opened goes on meanwhile.
 */
static void
dp_quic_judged(struct dp_flow *f)
{
	f->tls = DP_TLS_QUIC;
	f->quic_judged = true;
}

/* No room to hold the datagrams: fail closed, and the client falls back to TCP at once. */
static inline struct dp_fate
dp_quic_no_room(void)
{
	struct dp_fate fate = dp_fate_block(DP_REASON_VM_LIMIT, DP_FATE_REPLY_ICMP);

	fate.end = true;
	return fate;
}

/* The verdict on what the held Initials say (qs, hello): the fate of the datagram held last. */
static struct dp_fate
dp_quic_verdict(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f, uint16_t vm,
    enum dp_quic_status qs, const struct tls_hello *hello)
{
	struct dp_fate fate;
	enum dp_reason r;

	if (qs == DP_QUIC_FOUND || qs == DP_QUIC_ABSENT)
		r = dp_tls_judge(w, f, vm, qs == DP_QUIC_FOUND ? SNI_FOUND : SNI_ABSENT, hello);
	else	/* not an Initial we can read first: nothing to judge, so no */
		r = DP_REASON_NOT_TLS;
	if (r == DP_REASON_ALLOWED) {
		dp_tls_release(w, h, f);
		dp_quic_judged(f);
		return dp_fate(DP_FATE_HELD);
	}
	fate = dp_tls_refuse(w, h, f, r, qs == DP_QUIC_FOUND ? (const char *)hello->sni.p : NULL,
	    qs == DP_QUIC_FOUND ? hello->sni.len : 0, DP_FATE_HELD);
	if (w->gen->vms[vm].audit)
		dp_quic_judged(f);	/* released as would_block: the flow lives on */
	return fate;
}

struct dp_fate
dp_quic_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	struct tls_hello hello;
	enum dp_quic_status qs;
	struct dp_hold *h;

	/*
	 * Another hello judged on a flow that has a connection: its short headers (that
	 * connection's, and no server opens one for them) go on while the hello is held.
	 */
	if (f->quic_judged && (p->payload_len == 0 || (p->payload[0] & 0x80) == 0))
		return dp_fate_pass(f->would_block);
	if ((h = dp_hold_at(w, f->hold)) == NULL) {
		if ((h = dp_hold_take(w, f, &f->hold, 0, false)) == NULL)
			return dp_quic_no_room();
		dp_quic_hello_init(&h->q, h->buf, sizeof(h->buf));
	}
	/* datagrams keep the order they came in: their order is the client's */
	if (!dp_hold_push(w, h, m, h->nsegs, h->nsegs + 1u))
		return dp_tls_refuse(w, h, f, DP_REASON_NOT_TLS, NULL, 0, DP_FATE_FREE);
	qs = dp_quic_hello_feed(w->holds->quic, &h->q, p->payload, p->payload_len, &hello);
	if (qs == DP_QUIC_NEED_MORE)
		return dp_fate(DP_FATE_HELD);
	return dp_quic_verdict(w, h, f, vm, qs, &hello);
}

/*
 * A hello on a flow that was allowed already, or on UDP that was not QUIC so far: judged
 * as a flow's first, from a fresh hold (the server reads it as a new connection's first).
 * With `quic: block`, QUIC on a port other than 443 is refused as there.
 */
static struct dp_fate
dp_quic_hello_again(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	const struct dp_vm *v = &w->gen->vms[vm];
	struct dp_fate fate;

	if (!w->gen->quic_inspect) {
		fate = dp_fate_refuse(v, DP_REASON_QUIC, DP_FATE_REPLY_ICMP);
		fate.end = !v->audit;
		return fate;
	}
	f->tls = DP_TLS_PENDING;
	return dp_quic_client(w, m, p, vm, f);
}

struct dp_fate
dp_quic_flow_vm(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	switch (dp_quic_dgram_class(w->holds->quic, p->payload, p->payload_len)) {
	case DP_QUIC_DGRAM_HELLO:
		return dp_quic_hello_again(w, m, p, vm, f);
	case DP_QUIC_DGRAM_UNREADABLE:
		/* dropped, the flow kept: what namegate cannot read never reaches a server */
		return dp_fate_refuse(&w->gen->vms[vm], DP_REASON_QUIC, DP_FATE_REPLY_NONE);
	default:
		return dp_fate_pass(f->would_block);
	}
}
