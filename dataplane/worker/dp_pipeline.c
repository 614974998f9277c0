/*
 * The per-frame decision (SPEC s4): identity, DNS, admission, flows.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include <rte_ethdev.h>

#include "dp_bind.h"
#include "dp_dns.h"
#include "dp_evt.h"
#include "dp_flow.h"
#include "dp_frag.h"
#include "dp_gen.h"
#include "dp_hold.h"
#include "dp_nd.h"
#include "dp_pipeline.h"
#include "sni/frame.h"
#include "dp_rx.h"
#include "dp_tls.h"

#define ETH_P_ARP	0x0806
#define ETH_P_IPV4	0x0800
#define DNS_PORT	53
#define QUIC_PORT	443

/*
 * A datagram namegate reassembled (l2_len marks its link header) that is longer than the
 * port's MTU leaves cut into fragments again: the receiver reassembles exactly the bytes
 * that were judged, whatever the sender's fragments said.
 */
static void
dp_tx_refragment(struct dp_worker *w, unsigned int port, struct rte_mbuf *m)
{
	struct rte_mbuf *pieces[IPFRAG_FRAGS_MAX];
	int n;

	n = dp_frag_split(w->frags, m, (uint16_t)m->l2_len, w->ctx->mtu[port], w->ctx->pool,
	    pieces, IPFRAG_FRAGS_MAX);
	rte_pktmbuf_free(m);
	if (n < 0) {
		w->drops[n == -ENOMEM ? DP_DROP_NO_MBUF : DP_DROP_FRAG_BAD]++;
		return;
	}
	for (int i = 0; i < n; i++)
		dp_tx(w, port, pieces[i]);
}

void
dp_tx(struct dp_worker *w, unsigned int port, struct rte_mbuf *m)
{
	struct dp_txbuf *t = &w->tx[port];

	if (unlikely(m->l2_len != 0) &&
	    rte_pktmbuf_pkt_len(m) - m->l2_len > w->ctx->mtu[port]) {
		dp_tx_refragment(w, port, m);
		return;
	}

	w->port_pkts[port][1]++;
	w->port_bytes[port][1] += rte_pktmbuf_pkt_len(m);
	t->pkts[t->n++] = m;
	if (t->n == DP_BURST)
		dp_tx_flush(w);
}

void
dp_tx_flush(struct dp_worker *w)
{
	for (unsigned int port = 0; port < DP_PORTS; port++) {
		struct dp_txbuf *t = &w->tx[port];
		uint16_t sent;

		if (t->n == 0)
			continue;
		sent = rte_eth_tx_burst(w->ctx->port[port], (uint16_t)w->id, t->pkts, t->n);
		if (sent < t->n) {
			w->drops[DP_DROP_TX_FULL] += t->n - sent;
			w->port_pkts[port][1] -= t->n - sent;
			rte_pktmbuf_free_bulk(&t->pkts[sent], t->n - sent);
		}
		t->n = 0;
	}
}

/*
 * To the kernel through the exception path (its bridge and nftables table decide), or,
 * without one, dropped: fail closed.
 */
static void
dp_slow(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, unsigned int tap, bool from_vm)
{
	if (!w->ctx->slow_path) {
		dp_drop(w, m, DP_DROP_SLOW_PATH);
		return;
	}
	if (from_vm) {
		w->vm_stats[vm].egress_pkts[DP_ALLOWED]++;	/* as far as the fast path goes */
		w->vm_stats[vm].egress_bytes[DP_ALLOWED] += rte_pktmbuf_pkt_len(m);
	}
	dp_tx(w, tap, m);
}

void
dp_pipeline_slow(struct dp_worker *w, struct rte_mbuf *m, unsigned int from)
{
	/* what the kernel let through goes on out of the port on the other side */
	w->port_pkts[from][0]++;
	w->port_bytes[from][0] += rte_pktmbuf_pkt_len(m);
	dp_tx(w, from == DP_PORT_SLOW_UP ? DP_PORT_UPLINK : DP_PORT_VM, m);
}

void
dp_block(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, enum dp_reason r)
{
	struct dp_vm_stats *s = &w->vm_stats[vm];

	s->egress_pkts[DP_BLOCKED]++;
	s->egress_bytes[DP_BLOCKED] += rte_pktmbuf_pkt_len(m);
	s->blocked[r]++;
	rte_pktmbuf_free(m);
}

void
dp_drop(struct dp_worker *w, struct rte_mbuf *m, enum dp_drop d)
{
	w->drops[d]++;
	rte_pktmbuf_free(m);
}

void
dp_egress(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, enum dp_verdict v)
{
	struct dp_vm_stats *s = &w->vm_stats[vm];

	s->egress_pkts[v]++;
	s->egress_bytes[v] += rte_pktmbuf_pkt_len(m);
	dp_tx(w, DP_PORT_UPLINK, m);
}

void
dp_ingress(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm)
{
	struct dp_vm_stats *s = &w->vm_stats[vm];

	s->ingress_pkts++;
	s->ingress_bytes += rte_pktmbuf_pkt_len(m);
	dp_tx(w, DP_PORT_VM, m);
}

bool
dp_reply_send(struct dp_worker *w, unsigned int port, struct rte_mbuf *m, const struct pkt *p,
    int (*fn)(const uint8_t *, size_t, const struct pkt *, uint8_t *, size_t))
{
	struct rte_mbuf *r = rte_pktmbuf_alloc(w->ctx->pool);
	int n;

	if (r == NULL) {
		w->drops[DP_DROP_NO_MBUF]++;
		return false;
	}
	n = fn(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), p,
	    rte_pktmbuf_mtod(r, uint8_t *), rte_pktmbuf_tailroom(r));
	if (n <= 0) {
		rte_pktmbuf_free(r);
		return false;
	}
	r->data_len = (uint16_t)n;
	r->pkt_len = (uint32_t)n;
	dp_tx(w, port, r);
	return true;
}

/*
 * A connection the VM may not open: in audit mode it passes and counts as would_block;
 * otherwise it is blocked, and with on_block: reset the VM hears so at once (TCP RST, or
 * ICMP port unreachable for UDP) instead of waiting for a timeout.
 */
static bool
dp_refuse(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    enum dp_reason r)
{
	const struct dp_gen *g = w->gen;

	dp_evt_block(w, vm, p, r, g->vms[vm].audit, NULL, 0);
	if (g->vms[vm].audit) {
		w->vm_stats[vm].blocked[r]++;
		return false;
	}
	if (g->on_block_reset)
		dp_reply_send(w, DP_PORT_VM, m, p,
		    p->proto == PKT_PROTO_TCP ? frame_tcp_rst : frame_icmp_unreach);
	dp_block(w, m, vm, r);
	return true;
}

static void
dp_flow_key_vm(struct dp_flow_key *k, uint16_t vm, const struct pkt *p)
{
	memset(k, 0, sizeof(*k));
	k->vm = vm;
	k->family = p->family;
	k->proto = p->proto;
	k->vm_port = p->sport;
	k->peer_port = p->dport;
	memcpy(k->peer, p->dst, p->family == 4 ? 4 : 16);
}

/* a is after b in sequence space (RFC 1982) */
static inline bool
dp_seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/*
 * What each side's segments say of the other's stream. From the peer: its SYN-ACK sets
 * the window scale (in force only if both SYNs offered it, RFC 7323 s2.2), and each ACK
 * moves RCV.NXT and the window, but never past what the VM has sent (an ACK for bytes not
 * sent is not one the client's stack takes, and could come from anyone).
 */
static void
dp_flow_track(struct dp_flow *f, const struct pkt *p, bool from_vm, uint64_t now)
{
	uint32_t end;

	f->last_seen = now;
	if (p->proto != PKT_PROTO_TCP) {
		if (!from_vm)
			f->state = DP_FLOW_ESTABLISHED;
		return;
	}
	if (p->tcp_flags & (PKT_TCP_FIN | PKT_TCP_RST))
		f->state = DP_FLOW_CLOSING;
	if (from_vm) {
		end = p->seq + (uint32_t)p->payload_len + ((p->tcp_flags & PKT_TCP_SYN) != 0) +
		    ((p->tcp_flags & PKT_TCP_FIN) != 0);
		if (dp_seq_after(end, f->vm_nxt))
			f->vm_nxt = end;
		return;
	}
	/* a SYN-ACK acknowledges the SYN, and with TCP Fast Open some of its data too */
	if ((p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == (PKT_TCP_SYN | PKT_TCP_ACK) &&
	    !f->peer_synced && !dp_seq_after(f->isn, p->ack) && !dp_seq_after(p->ack, f->vm_nxt)) {
		if (f->state == DP_FLOW_SYN_SENT)
			f->state = DP_FLOW_ESTABLISHED;
		f->peer_synced = true;
		f->peer_isn = p->seq + 1;
		f->peer_wscale = f->vm_wscale != PKT_WSCALE_NONE &&
		    p->tcp_wscale != PKT_WSCALE_NONE ? p->tcp_wscale : 0;
		f->peer_ack = p->ack;
		f->peer_wnd = p->tcp_win;	/* a SYN's window is never scaled */
		return;
	}
	if (!(p->tcp_flags & PKT_TCP_ACK) || !f->peer_synced || dp_seq_after(p->ack, f->vm_nxt))
		return;
	if (dp_seq_after(p->ack, f->peer_ack))
		f->peer_ack = p->ack;
	f->peer_wnd = (uint32_t)p->tcp_win << f->peer_wscale;
}

/*
 * An RST: what the connection holds goes back to the pool at once, so that a VM resetting
 * its connections does not sit on buffers. The flow keeps its state: the RST may be one
 * the receiver ignores (RFC 5961), and what comes after is judged as before (a pending
 * hello takes a fresh buffer; judged bytes without their copy cannot be rewritten).
 */
static void
dp_flow_unhold(struct dp_worker *w, struct dp_flow *f)
{
	dp_hold_put(w, &f->hold);
	dp_hold_put(w, &f->peer_hold);
	if (f->tls == DP_TLS_VERIFY)
		f->tls = DP_TLS_NONE;	/* judged stays: overlaps now cut unless acknowledged */
}

/* A TCP flow's sequence space starts at its SYN. */
static void
dp_flow_tcp_start(struct dp_flow *f, const struct pkt *p)
{
	if (p->proto != PKT_PROTO_TCP)
		return;
	f->isn = p->seq + 1;
	f->vm_nxt = f->isn + (uint32_t)p->payload_len;	/* a Fast Open SYN's data */
	f->peer_ack = f->isn;
	f->vm_wscale = p->tcp_wscale;
}

/*
 * A SYN on a 4-tuple that has a flow is a new connection unless it repeats the SYN that
 * opened it: after a FIN or RST, or with another ISN, it must be admitted and judged anew.
 */
static bool
dp_flow_reopened(const struct dp_flow *f, const struct pkt *p)
{
	return p->proto == PKT_PROTO_TCP &&
	    (p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK | PKT_TCP_RST)) == PKT_TCP_SYN &&
	    (f->state == DP_FLOW_CLOSING || p->seq + 1 != f->isn);
}

/*
 * May VM vm open a connection to p's destination, and on what grounds? (SPEC s4 step 4)
 * For DP_ADMIT_BINDING, *name_hash is the name whose binding allowed it.
 */
static enum dp_admission
dp_admit(struct dp_worker *w, const struct pkt *p, uint16_t vm, uint64_t *name_hash)
{
	const struct dp_gen *g = w->gen;
	struct dp_addr dst = { .family = p->family };

	if (p->dport == DNS_PORT && dp_gen_is_resolver(g, p->family, p->dst))
		return DP_ADMIT_DNS;	/* DNS over TCP: filtered message by message */
	if (pol_match_addr(g->set, g->vms[vm].policy, p->dst, p->family == 4 ? 4 : 16,
	    p->proto, p->dport, NULL) == POL_ALLOW)
		return DP_ADMIT_ADDR;
	memcpy(dst.a, p->dst, p->family == 4 ? 4 : 16);
	return dp_bind_allows(w->ctx->binds, vm, &dst, p->dport, w->now, g, name_hash) ?
	    DP_ADMIT_BINDING : DP_ADMIT_NO;
}

/*
 * A flow opened under an older policy: may it go on? On the grounds it opened on, judged
 * with the current generation (SPEC s4: what the new policy no longer allows is cut).
 */
static bool
dp_flow_still_allowed(struct dp_worker *w, const struct dp_flow *f)
{
	const struct dp_gen *g = w->gen;
	const struct dp_vm *v = &g->vms[f->key.vm];
	const struct pol_ports *ports;

	if (!v->present)
		return false;
	switch (f->how) {
	case DP_ADMIT_DNS:
		return dp_gen_is_resolver(g, f->key.family, f->key.peer);
	case DP_ADMIT_ADDR:
		return pol_match_addr(g->set, v->policy, f->key.peer, f->key.family == 4 ? 4 : 16,
		    f->key.proto, f->key.peer_port, NULL) == POL_ALLOW;
	case DP_ADMIT_BINDING:
		ports = dp_gen_name_ports(g, f->key.vm, f->name_hash);
		return ports != NULL && pol_ports_allow(ports, f->key.peer_port);
	default:
		return v->audit;	/* passed as would_block: only while the VM is audited */
	}
}

/* A flow the current policy no longer allows: cut it, RST to this packet's sender. */
static void
dp_flow_revoke(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f, bool from_vm)
{
	if (p->proto == PKT_PROTO_TCP && !(p->tcp_flags & PKT_TCP_RST))
		dp_reply_send(w, from_vm ? DP_PORT_VM : DP_PORT_UPLINK, m, p, frame_tcp_rst);
	dp_flow_end(w, f);
	dp_block(w, m, vm, DP_REASON_NO_BINDING);
}

/* UDP 443 is QUIC: ICMP port unreachable makes clients fall back to TCP at once. */
static bool
dp_quic_blocked(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm)
{
	dp_evt_block(w, vm, p, DP_REASON_QUIC, w->gen->vms[vm].audit, NULL, 0);
	if (w->gen->vms[vm].audit) {
		w->vm_stats[vm].blocked[DP_REASON_QUIC]++;
		return false;
	}
	dp_reply_send(w, DP_PORT_VM, m, p, frame_icmp_unreach);
	dp_block(w, m, vm, DP_REASON_QUIC);
	return true;
}

/*
 * The data of a SYN on a flow whose first bytes nobody judges (TCP Fast Open): never
 * forwarded unseen. The server gets the SYN alone and the client sends the data again
 * once the connection is up.
 */
static void
dp_syn_data_strip(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm)
{
	if (dp_reply_send(w, DP_PORT_UPLINK, m, p, frame_tcp_strip))
		w->vm_stats[vm].egress_pkts[DP_ALLOWED]++;
	rte_pktmbuf_free(m);
}

/* A frame from vm on a flow it has: go on under the flow's verdict. */
static void
dp_vm_flow(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	const struct dp_gen *g = w->gen;

	if (f->gen != g->id) {
		if (!dp_flow_still_allowed(w, f)) {
			dp_flow_revoke(w, m, p, vm, f, true);
			return;
		}
		f->gen = g->id;
	}
	dp_flow_track(f, p, true, w->now);
	if (p->proto == PKT_PROTO_TCP && (p->tcp_flags & PKT_TCP_RST))
		dp_flow_unhold(w, f);
	if (f->tls == DP_TLS_DNS) {
		dp_dns_tcp_client(w, m, p, vm, f);
		return;
	}
	if (p->payload_len > 0) {
		if (f->tls == DP_TLS_PENDING) {
			if (p->proto == PKT_PROTO_TCP)
				dp_tls_client(w, m, p, vm, f);
			else
				dp_quic_client(w, m, p, vm, f);
			return;
		}
		if (f->judged != 0 && !dp_tls_verify(w, m, p, vm, f))
			return;
	}
	dp_egress(w, m, vm, f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
}

static void
dp_vm_l4(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm)
{
	const struct dp_gen *g = w->gen;
	enum dp_admission how;
	struct dp_flow_key k;
	struct dp_flow *f;
	uint64_t name_hash = 0;
	bool opening, tls;

	if (p->dport == DNS_PORT && p->proto == PKT_PROTO_UDP) {
		if (dp_gen_is_resolver(g, p->family, p->dst))
			dp_dns_query_udp(w, m, p, vm);
		else if (!dp_refuse(w, m, p, vm, DP_REASON_DNS_DENIED))
			dp_egress(w, m, vm, DP_WOULD_BLOCK);
		return;
	}
	if (p->proto == PKT_PROTO_UDP && p->dport == QUIC_PORT && !g->quic_inspect &&
	    dp_quic_blocked(w, m, p, vm))
		return;
	dp_flow_key_vm(&k, vm, p);
	if ((f = dp_flow_lookup(w->flows, &k)) != NULL) {
		if (!dp_flow_reopened(f, p)) {
			dp_vm_flow(w, m, p, vm, f);
			return;
		}
		dp_flow_end(w, f);	/* its verdict was that connection's, not this one's */
	}
	opening = p->proto == PKT_PROTO_UDP ||
	    (p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK | PKT_TCP_RST)) == PKT_TCP_SYN;
	if (!opening) {
		/* mid-stream TCP of no known flow: nothing may pass, and the VM should know */
		if (!dp_refuse(w, m, p, vm, DP_REASON_UNSOLICITED))
			dp_egress(w, m, vm, DP_WOULD_BLOCK);
		return;
	}
	if (p->dport == DNS_PORT && !dp_gen_is_resolver(g, p->family, p->dst)) {
		if (!dp_refuse(w, m, p, vm, DP_REASON_DNS_DENIED))
			goto open_would_block;
		return;
	}
	if ((how = dp_admit(w, p, vm, &name_hash)) == DP_ADMIT_NO) {
		if (!dp_refuse(w, m, p, vm, DP_REASON_NO_BINDING))
			goto open_would_block;
		return;
	}
	if ((f = dp_flow_open(w->flows, &k, g->max_flows_per_vm, w->now)) == NULL) {
		/* no room to remember it: blocked even in audit mode (fail closed) */
		dp_evt_block(w, vm, p, DP_REASON_FLOW_LIMIT, false, NULL, 0);
		if (g->on_block_reset)
			dp_reply_send(w, DP_PORT_VM, m, p, p->proto == PKT_PROTO_TCP ?
			    frame_tcp_rst : frame_icmp_unreach);
		dp_block(w, m, vm, DP_REASON_FLOW_LIMIT);
		return;
	}
	f->gen = g->id;
	f->how = (uint8_t)how;
	f->name_hash = name_hash;
	dp_flow_tcp_start(f, p);
	/* a TLS port needs a ClientHello first; what rides on the SYN is its first bytes */
	tls = p->proto == PKT_PROTO_TCP && how == DP_ADMIT_BINDING &&
	    dp_gen_is_tls_port(g, p->dport);
	if (tls) {
		f->tls = DP_TLS_PENDING;
		if (p->payload_len > 0) {
			dp_tls_client(w, m, p, vm, f);
			return;
		}
	} else if (p->proto == PKT_PROTO_TCP && how == DP_ADMIT_DNS) {
		f->tls = DP_TLS_DNS;
		if (p->payload_len > 0) {
			dp_dns_tcp_client(w, m, p, vm, f);
			return;
		}
	} else if (p->proto == PKT_PROTO_TCP && p->payload_len > 0) {
		dp_syn_data_strip(w, m, p, vm);
		return;
	} else if (p->proto == PKT_PROTO_UDP && p->dport == QUIC_PORT &&
	    how == DP_ADMIT_BINDING) {
		/* quic: inspect (block never gets here): this first datagram is judged too */
		f->tls = DP_TLS_PENDING;
		dp_quic_client(w, m, p, vm, f);
		return;
	}
	dp_egress(w, m, vm, DP_ALLOWED);
	return;
open_would_block:
	if ((f = dp_flow_open(w->flows, &k, g->max_flows_per_vm, w->now)) != NULL) {
		f->would_block = true;
		f->gen = g->id;
		f->how = DP_ADMIT_NO;
		dp_flow_tcp_start(f, p);
	}
	dp_egress(w, m, vm, DP_WOULD_BLOCK);
}

/*
 * As many tags as v's configuration has: its own VLAN's, or none (a priority tag, VLAN 0,
 * counts as none). A tag inside would be read by whatever is behind the next switch.
 */
static bool
dp_vlan_tags_ok(const struct pkt *p, const struct dp_vm *v)
{
	if (v->vlan != 0)
		return p->nb_vlans == 1;
	return p->nb_vlans == 0 || (p->nb_vlans == 1 && p->vlan == 0);
}

/* A frame that is not what its VM (or no VM) may send: logged and blocked. */
static void
dp_spoofed(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, const struct pkt *p)
{
	dp_evt_block(w, vm, p, DP_REASON_SPOOFED, false, NULL, 0);
	dp_block(w, m, vm, DP_REASON_SPOOFED);
}

/*
 * A fragment from or to vm: held (a copy) until its datagram is whole, which then takes
 * the path an unfragmented one would, decoded and checksummed whole. Returns the
 * datagram when m completed it, or NULL (m consumed, counted if dropped).
 */
static struct rte_mbuf *
dp_reassemble(struct dp_worker *w, struct rte_mbuf *m, struct pkt *p, enum pkt_status *st,
    uint16_t vm)
{
	enum ipfrag_status fs;
	struct rte_mbuf *whole;

	whole = dp_frag_add(w->frags, m, p->l3_off, vm, w->now, &fs);
	switch (fs) {
	case IPFRAG_NEED_MORE:
		rte_pktmbuf_free(m);
		return NULL;
	case IPFRAG_COMPLETE:
		rte_pktmbuf_free(m);
		if (whole == NULL) {
			w->drops[DP_DROP_NO_MBUF]++;
			return NULL;
		}
		break;
	case IPFRAG_OWNER_LIMIT:
		dp_evt_block(w, vm, p, DP_REASON_VM_LIMIT, false, NULL, 0);
		dp_block(w, m, vm, DP_REASON_VM_LIMIT);
		return NULL;
	case IPFRAG_TABLE_FULL:
		dp_drop(w, m, DP_DROP_TABLE_FULL);
		return NULL;
	default:			/* overlapping, oversized, malformed: fail closed */
		dp_drop(w, m, DP_DROP_FRAG_BAD);
		return NULL;
	}
	whole->l2_len = p->l3_off;	/* refragmented on the way out if need be */
	if ((*st = pkt_decode(rte_pktmbuf_mtod(whole, const uint8_t *),
	    rte_pktmbuf_data_len(whole), p)) == PKT_MALFORMED) {
		dp_drop(w, whole, DP_DROP_MALFORMED);
		return NULL;
	}
	if (*st == PKT_OK && !p->src_route && !dp_rx_l4_csum_ok(whole, p)) {
		dp_drop(w, whole, DP_DROP_BAD_CSUM);
		return NULL;
	}
	return whole;
}

void
dp_pipeline_vm(struct dp_worker *w, struct rte_mbuf *m)
{
	const struct dp_gen *g = w->gen;
	enum pkt_status st;
	const struct dp_vm *v;
	struct pkt p;
	int vm;

	if (!dp_rx_decode(w, m, DP_PORT_VM, &p, &st))
		return;
	/* by the outer tag; a frame with more tags than its VM has could hop VLANs */
	if ((vm = dp_gen_vm_by_mac(g, p.vlan, p.src_mac)) < 0) {
		dp_spoofed(w, m, DP_VM_UNKNOWN, &p);
		return;
	}
	v = &g->vms[vm];
	if (!dp_vlan_tags_ok(&p, v)) {
		dp_spoofed(w, m, (uint16_t)vm, &p);
		return;
	}
	if (p.ethertype == ETH_P_ARP) {
		if (dp_nd_arp_from_vm_ok(rte_pktmbuf_mtod(m, const uint8_t *) + p.l3_off,
		    rte_pktmbuf_data_len(m) - p.l3_off, v))
			dp_egress(w, m, (uint16_t)vm, DP_ALLOWED);
		else
			dp_spoofed(w, m, (uint16_t)vm, &p);
		return;
	}
	if (p.family == 0) {
		dp_drop(w, m, DP_DROP_NOT_IP);
		return;
	}
	if (p.family == 6 && p.proto == IPPROTO_ICMPV6 && dp_nd_from_vm_ok(&p, v)) {
		dp_egress(w, m, (uint16_t)vm, DP_ALLOWED);
		return;
	}
	if (dp_nd_typed(&p)) {		/* ND-shaped in no shape ND has: a way out */
		dp_spoofed(w, m, (uint16_t)vm, &p);
		return;
	}
	if ((p.family == 4 && !(v->has4 && memcmp(p.src, v->ip4, 4) == 0)) ||
	    (p.family == 6 && !(v->has6 && memcmp(p.src, v->ip6, 16) == 0))) {
		dp_spoofed(w, m, (uint16_t)vm, &p);
		return;
	}
	if (p.fragment && (m = dp_reassemble(w, m, &p, &st, (uint16_t)vm)) == NULL)
		return;
	if (p.src_route) {
		/* the packet would go on from its destination to wherever the VM wrote */
		dp_evt_block(w, (uint16_t)vm, &p, DP_REASON_SOURCE_ROUTE, false, NULL, 0);
		dp_block(w, m, (uint16_t)vm, DP_REASON_SOURCE_ROUTE);
		return;
	}
	if (st != PKT_OK) {
		/* ICMP, fragments, other protocols: the kernel judges them (SPEC s4 step 8) */
		dp_slow(w, m, (uint16_t)vm, DP_PORT_SLOW_VM, true);
		return;
	}
	dp_vm_l4(w, m, &p, (uint16_t)vm);
}

void
dp_pipeline_uplink(struct dp_worker *w, struct rte_mbuf *m)
{
	const struct dp_gen *g = w->gen;
	enum pkt_status st;
	struct dp_flow_key k;
	struct dp_flow *f;
	struct pkt p;
	int vm;

	if (!dp_rx_decode(w, m, DP_PORT_UPLINK, &p, &st))
		return;
	vm = dp_gen_vm_by_mac(g, p.vlan, p.dst_mac);
	if (vm >= 0 && !dp_vlan_tags_ok(&p, &g->vms[vm])) {
		dp_drop(w, m, DP_DROP_NOT_IP);	/* a tag inside the VM's own: not for it */
		return;
	}
	/* The router's ARP and neighbour discovery reach the VMs, broadcast or not. */
	if (p.ethertype == ETH_P_ARP || (p.proto == IPPROTO_ICMPV6 && p.family == 6 &&
	    dp_nd_to_vm_ok(&p, vm >= 0 ? &g->vms[vm] : NULL))) {
		if (vm >= 0)
			dp_ingress(w, m, (uint16_t)vm);
		else
			dp_tx(w, DP_PORT_VM, m);
		return;
	}
	if (dp_nd_typed(&p)) {
		dp_drop(w, m, DP_DROP_ND_INVALID);	/* routed ND: no neighbour sent it */
		return;
	}
	if (vm < 0 || p.family == 0) {
		dp_drop(w, m, DP_DROP_NOT_IP);
		return;
	}
	if (p.fragment && (m = dp_reassemble(w, m, &p, &st, (uint16_t)vm)) == NULL)
		return;
	if (p.src_route) {		/* a VM's stack drops these too (accept_source_route 0) */
		w->vm_stats[vm].blocked[DP_REASON_SOURCE_ROUTE]++;
		rte_pktmbuf_free(m);
		return;
	}
	if (st != PKT_OK) {
		dp_slow(w, m, (uint16_t)vm, DP_PORT_SLOW_UP, false);
		return;
	}
	if (p.proto == PKT_PROTO_UDP && p.sport == DNS_PORT &&
	    dp_gen_is_resolver(g, p.family, p.src)) {
		dp_dns_answer_udp(w, m, &p, (uint16_t)vm);
		return;
	}
	memset(&k, 0, sizeof(k));
	k.vm = (uint16_t)vm;
	k.family = p.family;
	k.proto = p.proto;
	k.vm_port = p.dport;
	k.peer_port = p.sport;
	memcpy(k.peer, p.src, p.family == 4 ? 4 : 16);
	if ((f = dp_flow_lookup(w->flows, &k)) == NULL) {
		w->vm_stats[vm].blocked[DP_REASON_UNSOLICITED]++;
		rte_pktmbuf_free(m);
		return;
	}
	if (f->gen != g->id) {
		if (!dp_flow_still_allowed(w, f)) {
			dp_flow_revoke(w, m, &p, (uint16_t)vm, f, false);
			return;
		}
		f->gen = g->id;
	}
	dp_flow_track(f, &p, false, w->now);
	if (p.proto == PKT_PROTO_TCP && (p.tcp_flags & PKT_TCP_RST))
		dp_flow_unhold(w, f);
	if (f->judged != 0)
		dp_tls_peer_ack(w, f);
	if (f->tls == DP_TLS_DNS) {
		dp_dns_tcp_server(w, m, &p, (uint16_t)vm, f);
		return;
	}
	dp_ingress(w, m, (uint16_t)vm);
}
