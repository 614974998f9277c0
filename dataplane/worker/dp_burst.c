/*
 * A burst of frames from one port, in stages (the shape of DPDK's l3fwd): every frame is
 * decoded, checksummed, told whose it is and decided as far as the stateless stages go,
 * and the key of each that is left hashed and its bucket fetched; then the flows of all
 * those are looked up together, their lines fetched side by side instead of one cache
 * miss after another; then each frame, in the order it
 * came, meets its connection (and the module that judges a stream's bytes, which returns a
 * fate too) and its fate is acted on (dp_out.c). State changes
 * happen only in the last stage and in arrival order, so a burst decides exactly what the
 * same frames one at a time would: each lookup is finished when its frame is reached
 * (dp_burst_flow), after what earlier frames opened or closed. A TCP segment of the
 * commonest shape goes through with its key and what a steady flow reads of it, no struct pkt
 * (dp_lean.h), and is decoded in full only if its flow turns out not to be steady (or it
 * opens or ends one) and its flow stage needs more than that (dp_conn_lean.h).
 */
#include "dp_bind_fetch.h"
#include "dp_budget_dst.h"
#include "dp_burst.h"
#include "dp_burst_int.h"
#include "dp_conn.h"
#include "dp_conn_lean.h"
#include "dp_decide.h"
#include "dp_dns.h"
#include "dp_dns_tcp_mod.h"
#include "dp_flow_look.h"
#include "dp_gen.h"
#include "dp_out_flow.h"
#include "dp_http.h"
#include "dp_lean.h"
#include "dp_out.h"
#include "dp_quic_flow.h"
#include "dp_rx.h"
#include "dp_tls.h"

#define DP_BURST_PREFETCH	3

/*
 * The frame decoded and checksummed, and whose it is: the VM of its source MAC from the
 * VM port, of its destination MAC from the uplink (*slot negative and fr->vm the unknown
 * VM's counters when none). What dp_rx_decode() made of it.
 */
static __rte_always_inline enum dp_rx_got
dp_burst_in(struct dp_worker *w, struct dp_burst_frame *fr, unsigned int port, int *slot)
{
	struct pkt *p = &fr->p;
	enum dp_rx_got got = dp_rx_decode(w, fr->m, p, &fr->st);

	if (got == DP_RX_DROPPED)
		return got;
	/* a frame that decoded has its 14-byte Ethernet header: 8 bytes from either MAC */
	*slot = dp_gen_vm_by_mac(w->gen, p->vlan, port == DP_PORT_VM ? p->src_mac : p->dst_mac);
	fr->vm = *slot < 0 ? DP_VM_UNKNOWN(w->gen) : (uint16_t)*slot;
	return got;
}

/* The stateless stages of a frame from the VM port; false when nothing is left to do. */
static __rte_always_inline bool
dp_burst_vm_decide(struct dp_worker *w, struct dp_burst_frame *fr)
{
	const struct dp_gen *g = w->gen;
	enum dp_rx_got got;
	int slot;

	if ((got = dp_burst_in(w, fr, DP_PORT_VM, &slot)) == DP_RX_DROPPED)
		return false;
	if (likely(got == DP_RX_PLAIN)) {
		fr->fate = dp_decide_vm_plain(g, &fr->p, slot);
		return true;
	}
	fr->fate = dp_decide_vm_frame(g, &fr->p, slot,
	    rte_pktmbuf_mtod(fr->m, const uint8_t *) + fr->p.l3_off,
	    rte_pktmbuf_data_len(fr->m) - fr->p.l3_off);
	if (fr->fate.act == DP_FATE_REASSEMBLE && !dp_burst_whole(w, fr))
		return false;
	if (fr->fate.act == DP_FATE_CONTINUE)
		fr->fate = dp_decide_vm_datagram(g, &fr->p, fr->st, fr->vm);
	return true;
}

/* The stateless stages of a frame from the uplink. */
static __rte_always_inline bool
dp_burst_uplink_decide(struct dp_worker *w, struct dp_burst_frame *fr)
{
	const struct dp_gen *g = w->gen;
	enum dp_rx_got got;
	int slot;

	if ((got = dp_burst_in(w, fr, DP_PORT_UPLINK, &slot)) == DP_RX_DROPPED)
		return false;
	if (likely(got == DP_RX_PLAIN)) {
		fr->fate = dp_decide_uplink_plain(g, &fr->p, slot);
		return true;
	}
	fr->fate = dp_decide_uplink_frame(g, &fr->p, slot);
	if (fr->fate.act == DP_FATE_REASSEMBLE && !dp_burst_whole(w, fr))
		return false;
	if (fr->fate.act == DP_FATE_CONTINUE)
		fr->fate = dp_decide_uplink_datagram(g, &fr->p, fr->st);
	return true;
}

/*
 * The first stages for a whole burst: every frame decided as far as it can be without
 * its flow, and the flows of those that need one looked up together. Inline in each of
 * dp_burst_decide_vm() and _uplink(), where from_vm is a constant.
 */
static __rte_always_inline void
dp_burst_decide(struct dp_worker *w, struct dp_burst *b, struct rte_mbuf **pkts, uint16_t n,
    bool from_vm)
{
	unsigned int port = from_vm ? DP_PORT_VM : DP_PORT_UPLINK;
	struct dp_flow_lookup *l = b->look;	/* the next key's (an index cost a spill) */
	struct rte_mbuf **end = pkts + n;
	struct dp_burst_frame *fr = b->fr;
	const struct dp_gen *g = w->gen;	/* swapped between bursts only (dp_worker.c) */
	/* the index's fields the first pass of each lookup reads, out of the loop */
	const struct dp_ft ft_copy = *dp_flow_look_ft(w->flows), *ft = &ft_copy;
	uint64_t bytes = 0;

	/*
	 * the frames counted from -n up to 0 from the burst's end: the increment is the
	 * loop's test, and whether a frame has one DP_BURST_PREFETCH further to prefetch is
	 * a compare with a constant, where a pointer to the last such frame was kept in memory
	 */
	for (ptrdiff_t i = -(ptrdiff_t)n; i != 0; i++, fr++) {
		bool kept;
		int slot;

		/*
		 * the frame's mbuf read before the prefetch, whose address computation took the
		 * register the VM's loop loads its end into: the end loaded once, not twice
		 */
		fr->m = end[i];
		/* likely, all but a burst's last few: out of line, each frame paid a jump back */
		if (likely(i < -DP_BURST_PREFETCH))
			rte_prefetch0(rte_pktmbuf_mtod(end[i + DP_BURST_PREFETCH], void *));
		bytes += rte_pktmbuf_pkt_len(fr->m);
		/*
		 * the key hashed from the words it is stored from, its bucket fetched: neither
		 * read back in a pass of their own; the hash into the lookup, not a register
		 * kept across the checksums' sum
		 */
		slot = dp_lean_hashed(g, fr->m, &l->key, &fr->ln, from_vm, ft, &l->hash);
		if (slot >= 0) {	/* its fate CONTINUE, never stored */
			fr->vm = (uint16_t)slot;
			dp_flow_lookup_begin(ft, l, l->hash);
			l++;
			continue;
		}
		kept = from_vm ? dp_burst_vm_decide(w, fr) : dp_burst_uplink_decide(w, fr);
		/*
		 * not lean (dp_burst_frame_lean()), whatever a check that failed late left
		 * there; after the stages, where it cost the general way's frames nothing
		 */
		fr->ln.th_off = 0;
		if (!kept) {
			fr->m = NULL;
			continue;
		}
		if (fr->fate.act != DP_FATE_CONTINUE)
			continue;
		dp_conn_key(&l->key, fr->vm, &fr->p, from_vm);
		dp_flow_lookup_begin(ft, l, dp_ft_hash(ft, &l->key));
		l++;
	}
	/* the port's receive counts once a burst, in a register until then */
	w->port_pkts[port][0] += n;
	w->port_bytes[port][0] += bytes;
	/*
	 * the lookups' other passes; to the next key's, not a count of keys: a count took a
	 * divide and the end again. The VM's keys on no flow are its openings, whose binding
	 * lookups (dp_conn_syn.h, dp_conn.c) read lines fetched for all of them now.
	 */
	if (from_vm) {
		const struct dp_flow_key *absent[DP_BURST];
		unsigned int nabsent = dp_flow_lookup_rest(w->flows, b->look, l, absent);

		if (nabsent != 0)
			dp_bind_fetch(w->ctx->binds, absent, nabsent);
	} else {
		dp_flow_lookup_rest(w->flows, b->look, l, NULL);
	}
	b->steady = dp_conn_steady_key(w);
}

static void
dp_burst_decide_vm(struct dp_worker *w, struct dp_burst *b, struct rte_mbuf **pkts, uint16_t n)
{
	dp_burst_decide(w, b, pkts, n, true);
}

static void
dp_burst_decide_uplink(struct dp_worker *w, struct dp_burst *b, struct rte_mbuf **pkts,
    uint16_t n)
{
	dp_burst_decide(w, b, pkts, n, false);
}

__attribute__((noinline)) struct dp_flow *
dp_burst_flow_find(struct dp_worker *w, const struct dp_flow_lookup *l)
{
	return dp_flow_lookup_hashed(w->flows, &l->key, l->hash);
}

/* The bytes of a stream a module judges, from the VM: the module's fate for them. */
static struct dp_fate
dp_vm_stream(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f)
{
	if (f->tls == DP_TLS_DNS)
		return dp_dns_tcp_client(w, m, p, vm, f);
	if (f->tls == DP_TLS_HTTP)
		return dp_http_client(w, m, p, vm, f);
	if ((f->tls == DP_TLS_PENDING || f->tls == DP_TLS_SNIFF) && p->proto == PKT_PROTO_TCP)
		return dp_tls_client(w, m, p, vm, f);
	if (f->tls == DP_TLS_PENDING)
		return dp_quic_client(w, m, p, vm, f);
	if (p->proto == PKT_PROTO_UDP)
		return dp_quic_flow_vm(w, m, p, vm, f);
	return dp_tls_verify(w, p, f);	/* judged bytes, sent again */
}

/*
 * The connection stage of frame fr, from the VM or the uplink, whose fate so far is fate
 * (CONTINUE) and whose key's lookup is l: its fate. What is steady went on before
 * (dp_burst_plain_steady(), dp_burst_lean()), and the general stage decides it alike.
 */
static __rte_always_inline struct dp_fate
dp_burst_conn(struct dp_worker *w, struct dp_burst_frame *fr,
    const struct dp_flow_lookup *l, bool from_vm, struct dp_fate fate, struct dp_flow *found,
    struct dp_flow **f)
{
	/* a resolver's segment is shifted into the VM's numbers first (dp_dns_tcp_mod.h) */
	if (!from_vm && unlikely(found != NULL && found->tls == DP_TLS_DNS))
		return dp_dns_tcp_arrive(w, fr->m, &fr->p, &l->key, found, f);
	if (!from_vm)
		return dp_conn_uplink_any(w, &fr->p, &l->key, found, f);
	dp_fate_note(w, &fr->p, fr->vm, fate);	/* audited QUIC goes on to be admitted */
	return dp_conn_vm_any(w, &fr->p, &l->key, l->hash, found, f);
}

/*
 * A frame on flow f, from the VM (from_vm) or toward it, that is of f's steady state
 * (dp_conn_steady()): what dp_conn_vm() or dp_conn_uplink() does to f, and the frame sent
 * on, without a fate made and read again. From the VM: a TCP segment (tcp) at seq with
 * payload_len bytes, or a datagram; toward it, a segment's flags, ACK and window.
 */
static __rte_always_inline void
dp_burst_steady(struct dp_worker *w, const struct dp_burst_frame *fr, struct dp_flow *f,
    bool from_vm, bool tcp, uint32_t seq, uint32_t payload_len, uint8_t flags, uint32_t ack,
    uint16_t win)
{
	if (from_vm) {
		dp_egress_own(w, fr->m, fr->vm, dp_conn_vm_steady(w, f, tcp, seq, payload_len));
	} else {
		dp_conn_uplink_steady(w, f, tcp, flags, ack, win);
		dp_ingress_own(w, fr->m, fr->vm);
	}
}

/*
 * A lean frame from the VM on flow f, not steady for it: its flow stage decided from what
 * the lean check read (dp_conn_vm_lean()) and the frame sent on (true), or f left
 * untouched (false). Inline, as its uplink twin: the loop of steady frames keeps its
 * registers (small64 unchanged), and the VM's ACK and FIN that are not steady lose the
 * call's cost.
 */
static __rte_always_inline bool
dp_burst_lean_conn_vm(struct dp_worker *w, const struct dp_burst_frame *fr, struct dp_flow *f)
{
	const struct dp_lean *l = &fr->ln;
	enum dp_verdict v = dp_conn_vm_lean(w, f, fr->m, l->flags, l->seq, l->payload_len);

	if (v == DP_CONN_LEAN_NO)
		return false;
	dp_egress_own(w, fr->m, fr->vm, v);
	return true;
}

/*
 * A lean frame toward the VM on flow f, not steady for it: its flow stage decided from
 * what the lean check read (dp_conn_uplink_lean(): true, the frame to go on toward the
 * VM), or f left untouched (false); the frame sent on by the loop. Inline: the server's
 * SYN-ACK, one frame of every connection, paid as a call some 8 Ir for its registers
 * saved and restored and the loop's kept across it (conn mode 16 a connection), and the
 * loop of steady frames lost nothing by it.
 */
static __rte_always_inline bool
dp_burst_lean_conn_uplink(struct dp_worker *w, const struct dp_burst_frame *fr,
    struct dp_flow *f)
{
	return dp_conn_uplink_lean(w, f, fr->m, &fr->ln);
}

/*
 * A lean frame (dp_lean()) on flow f, from the VM (from_vm) or toward it: sent on when f
 * is steady for it, or when its flow stage needs nothing the lean check did not read
 * (true; toward the VM, the server's ACK of f's judged bytes among them; the VM's opening
 * SYN too, dp_burst_lean_syn(), with its key's lookup lk, and a pending hello,
 * dp_burst_lean_hello()); else decoded now into fr->p to go the general way (false), its
 * fate CONTINUE with nothing to note (not stored: the caller knows it).
 */
static __rte_always_inline bool
dp_burst_lean(struct dp_worker *w, const struct dp_burst *b, struct dp_burst_frame *fr,
    struct dp_flow *f, bool from_vm, const struct dp_flow_lookup *lk)
{
	const struct dp_lean *l = &fr->ln;

	if (likely(f != NULL && dp_conn_steady_flow(b->steady, f, from_vm,
	    from_vm ? l->payload_len : 0))) {
		if (likely(!(l->flags & DP_LEAN_TCP_ENDS))) {	/* dp_lean_steady() */
			dp_burst_steady(w, fr, f, from_vm, true, l->seq, l->payload_len, l->flags,
			    l->ack, l->win);
			return true;
		}
		/* a FIN that only closes its side: steady but for that (and its sequence number) */
		if (dp_conn_lean_fin(w, f, l->flags)) {
			dp_burst_steady(w, fr, f, from_vm, true, l->seq, l->payload_len + 1u,
			    l->flags, l->ack, l->win);
			return true;
		}
	}
	/*
	 * the server's ACK of judged bytes: tracked as the general stage would, undecoded
	 * (the call only for a flow steady but for them: most with judged bytes are not yet)
	 */
	if (!from_vm && f != NULL && f->judged != 0 && !(l->flags & DP_LEAN_TCP_ENDS) &&
	    dp_conn_judged_word(b->steady, f) &&
	    dp_conn_uplink_judged(w, f, l->flags, dp_lean_seq(fr->m, l), dp_lean_payload(fr->m, l),
	    l->payload_len, l->ack, l->win)) {
		dp_ingress_own(w, fr->m, fr->vm);
		return true;
	}
	/* data on a flow something judges the VM's call would refuse: a pending hello's stage */
	if (f != NULL ? (from_vm ? (l->payload_len == 0 || f->tls == DP_TLS_NONE ?
	    dp_burst_lean_conn_vm(w, fr, f) : f->tls == DP_TLS_PENDING &&
	    dp_burst_lean_hello(w, fr, f)) : dp_burst_lean_conn_uplink(w, fr, f)) :
	    from_vm && dp_burst_lean_syn(w, fr, lk)) {
		if (!from_vm)	/* the VM's calls sent their frames on */
			dp_ingress_own(w, fr->m, fr->vm);
		return true;
	}
	dp_lean_decode(fr->m, l, &fr->p, from_vm);
	return false;
}

/*
 * A decoded frame the stateless stages passed on as they found it (CONTINUE, nothing to
 * note), on flow f: sent on when it is of f's steady state (true), as dp_burst_conn()
 * would, without its fate made and read again; else false, for dp_burst_conn().
 */
static __rte_always_inline bool
dp_burst_plain_steady(struct dp_worker *w, struct dp_burst *b, const struct dp_burst_frame *fr,
    struct dp_flow *f, bool from_vm)
{
	const struct pkt *p = &fr->p;

	if (f == NULL || !dp_fate_eq(fr->fate, dp_fate(DP_FATE_CONTINUE)) ||
	    !dp_conn_steady(b->steady, f, p, from_vm))
		return false;
	dp_burst_steady(w, fr, f, from_vm, p->proto == PKT_PROTO_TCP, p->seq,
	    (uint32_t)p->payload_len, p->tcp_flags, p->ack, p->tcp_win);
	return true;
}

/*
 * The last stage, frame by frame in arrival order: connections, then the fate acted on.
 * Inline in each of dp_burst_vm() and _uplink(), where from_vm is a constant.
 */
static __rte_always_inline void
dp_burst_run(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n, bool from_vm)
{
	struct dp_burst b;
	/* the next frame with a key has this one's (dp_burst_decide()) */
	const struct dp_flow_lookup *lk = b.look;

	if (from_vm)
		dp_burst_decide_vm(w, &b, pkts, n);
	else
		dp_burst_decide_uplink(w, &b, pkts, n);
	for (uint16_t i = 0; i < n; i++) {
		struct dp_burst_frame *fr = &b.fr[i];
		const struct dp_flow_lookup *l;
		struct dp_flow *f, *found = NULL;
		struct dp_fate fate;

		/*
		 * f: its address is taken, so set where a frame needs it, past what went on;
		 * a lean frame (never one done with) not sent on goes to its flow stage with
		 * the flow found
		 */
		if (dp_burst_frame_lean(fr)) {
			found = dp_burst_flow(w, l = lk++);
			if (dp_burst_lean(w, &b, fr, found, from_vm, l))
				continue;
			f = NULL;
			fate = dp_burst_conn(w, fr, l, from_vm, dp_fate(DP_FATE_CONTINUE), found,
			    &f);
		} else if (fr->m == NULL) {
			continue;
		} else {
			f = NULL;
			if ((fate = fr->fate).act == DP_FATE_CONTINUE) {
				found = dp_burst_flow(w, l = lk++);
				if (dp_burst_plain_steady(w, &b, fr, found, from_vm))
					continue;
				fate = dp_burst_conn(w, fr, l, from_vm, fate, found, &f);
			} else if (fate.act == DP_FATE_SLOW && from_vm) {	/* no flow, budgets too */
				fate = dp_budget_slow(w, &fr->p, fr->vm, rte_pktmbuf_pkt_len(fr->m));
			}
		}
		if (fate.act == DP_FATE_STREAM) {	/* a fate that may cut or end f */
			fate = from_vm ? dp_vm_stream(w, fr->m, &fr->p, fr->vm, f) :
			    dp_dns_tcp_server(w, fr->m, &fr->p, fr->vm, f);
			dp_out_flow_apply(w, fr->m, &fr->p, fr->vm, from_vm, fate, f);
			continue;
		}
		if (fate.act == DP_FATE_DNS)
			fate = from_vm ? dp_dns_query_udp(w, fr->m, &fr->p, fr->vm) :
			    dp_dns_answer_udp(w, fr->m, &fr->p, fr->vm);
		/*
		 * the fate nearly every frame of each direction has, inline: the rest, a call
		 * to what acts on any fate (dp_fate_apply() would ask these two again)
		 */
		if (from_vm && dp_fate_eq(fate, dp_fate(DP_FATE_EGRESS)))
			dp_egress_own(w, fr->m, fr->vm, DP_ALLOWED);
		else if (!from_vm && dp_fate_eq(fate, dp_fate(DP_FATE_INGRESS)))
			dp_ingress_own(w, fr->m, fr->vm);
		else if (unlikely(fate.end) && f != NULL)	/* a cut: dp_conn_vm_judge() */
			dp_out_flow_apply(w, fr->m, &fr->p, fr->vm, from_vm, fate, f);
		else
			dp_fate_apply_any(w, fr->m, &fr->p, fr->vm, from_vm, fate);
	}
	/* its own frames' port */
	dp_tx_burst_end(w, from_vm ? DP_PORT_UPLINK : DP_PORT_VM);
}

void
dp_burst_vm(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n)
{
	dp_burst_run(w, pkts, n, true);
}

void
dp_burst_uplink(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n)
{
	dp_burst_run(w, pkts, n, false);
}

void
dp_pipeline_vm(struct dp_worker *w, struct rte_mbuf *m)
{
	dp_burst_vm(w, &m, 1);
}

void
dp_pipeline_uplink(struct dp_worker *w, struct rte_mbuf *m)
{
	dp_burst_uplink(w, &m, 1);
}
