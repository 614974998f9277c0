/*
 * The flow stage of the per-frame decision (SPEC s4 steps 4-7, s8): which connection a
 * frame belongs to, whether it may open one, and what each side's segments say of the
 * other's stream. It changes flow state (that is its job) but never a frame: it returns
 * the frame's fate, and dp_out.c acts on it.
 */
#include <stddef.h>
#include <string.h>

#include "dp_bind_allow.h"
#include "dp_budget.h"
#include "dp_budget_dst.h"
#include "dp_conn.h"
#include "dp_conn_int.h"
#include "dp_dns_tcp_mod.h"
#include "dp_flow.h"
#include "dp_flowlog.h"
#include "dp_gen.h"
#include "dp_ha_adopt.h"
#include "dp_hold.h"
#include "dp_http.h"
#include "dp_quic_flow.h"
#include "dp_tls.h"

#define DNS_PORT	53
#define QUIC_PORT	443

/*
 * An RST: what the connection holds goes back to the pool at once, so that a VM resetting
 * its connections does not sit on buffers. The flow keeps its state: the RST may be one
 * the receiver ignores (RFC 5961), and what comes after is judged as before (a pending
 * hello takes a fresh buffer; judged bytes without their copy cannot be rewritten, and an
 * HTTP flow reads on from a fresh buffer, cutting what overlaps judged bytes unacknowledged).
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
	dp_flow_tcp_begin(f, p->seq, (uint32_t)p->payload_len, p->tcp_wscale);
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
 * For DP_ADMIT_BINDING, *name_hash is the name whose binding allowed it. *budgets are the
 * egress budgets its bytes count in (dp_budget_dst): the lookup that admits by binding
 * reads every name bound to the address, so it gives their budgets too.
 */
static enum dp_admission
dp_admit(struct dp_worker *w, const struct pkt *p, uint16_t vm, uint64_t *name_hash,
    uint8_t *budgets)
{
	const struct dp_gen *g = w->gen;
	struct dp_bind_allow by;

	if (p->dport == DNS_PORT && dp_gen_is_resolver(g, p->family, p->dst))
		return DP_ADMIT_DNS;	/* DNS over TCP: filtered message by message */
	if ((g->vms[vm].addrs & dp_vm_addrs_bit(p->family)) &&
	    pol_match_addr(g->set, g->vms[vm].policy, p->dst, p->family == 4 ? 4 : 16,
	    p->proto, p->dport, NULL) == POL_ALLOW) {
		*budgets = dp_budget_dst(w, vm, p->family, p->dst);
		return DP_ADMIT_ADDR;
	}
	by = dp_bind_allows_inline(w->ctx->binds, vm, p->family, p->dst, p->dport, w->now, g);
	if (!by.allowed)
		return DP_ADMIT_NO;
	*name_hash = by.name_hash;
	*budgets = by.budgets | dp_budget_bit(dp_budget_of_addr(g, vm, p->family, p->dst));
	return DP_ADMIT_BINDING;
}

bool
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

/*
 * A flow the current policy no longer allows: cut, with an RST to this frame's sender. Its
 * fate is no_binding, without an event (the flow's opening had one).
 */
static struct dp_fate
dp_conn_revoke(struct dp_worker *w, const struct pkt *p, struct dp_flow *f)
{
	struct dp_fate out = { .act = DP_FATE_BLOCK, .why = DP_REASON_NO_BINDING };

	if (p->proto == PKT_PROTO_TCP && !(p->tcp_flags & PKT_TCP_RST))
		out.reply = DP_FATE_REPLY_RST;
	dp_flowlog_cut(w, f, DP_REASON_NO_BINDING);
	dp_flow_end(w, f);
	return out;
}

uint8_t
dp_flow_budgets_again(struct dp_worker *w, const struct dp_flow *f)
{
	const struct pol_ports *ports;
	uint8_t set;

	if (f->how != DP_ADMIT_ADDR && f->how != DP_ADMIT_BINDING)
		return 0;
	set = dp_budget_dst(w, f->key.vm, f->key.family, f->key.peer);
	if (f->how == DP_ADMIT_BINDING &&
	    (ports = dp_gen_name_ports(w->gen, f->key.vm, f->name_hash)) != NULL)
		set |= dp_budget_bit(ports->budget);
	return set;
}

/* Is f still allowed under the current generation? Moves it there if so. */
static bool
dp_conn_current(struct dp_worker *w, struct dp_flow *f)
{
	if (f->gen == w->gen->id)
		return true;
	if (!dp_flow_still_allowed(w, f))
		return false;
	f->gen = w->gen->id;
	f->budgets = dp_flow_budgets_again(w, f);
	return true;
}

/*
 * Is one of f's budgets spent, so that it is to be cut? An audited VM's flow goes on,
 * counted once as one that would have been cut.
 */
static bool
dp_conn_budget_cuts(struct dp_worker *w, struct dp_flow *f)
{
	if (!w->gen->vms[f->key.vm].audit)
		return true;
	if (!f->would_block)
		w->vm_stats[f->key.vm].blocked[DP_REASON_BUDGET]++;
	f->would_block = true;
	return false;
}

/*
 * One of f's budgets is spent: cut both ways, as a revoked flow is, with an event; the
 * window frees the budget for new flows only.
 */
static struct dp_fate
dp_conn_budget_cut(struct dp_worker *w, const struct pkt *p, struct dp_flow *f)
{
	struct dp_fate out = dp_fate_block(DP_REASON_BUDGET, p->proto == PKT_PROTO_TCP &&
	    !(p->tcp_flags & PKT_TCP_RST) ? DP_FATE_REPLY_CUT : DP_FATE_REPLY_NONE);

	dp_flowlog_cut(w, f, DP_REASON_BUDGET);
	dp_flow_end(w, f);
	return out;
}

/*
 * A second SYN-ACK with another ISN on f (dp_flow_synack_disputed()): one of the two was
 * forged, and which cannot be told, so the connection is cut: an RST to the server at the
 * ACK it sent (the one sequence number its stack takes), and f ended, so the VM's next
 * segment finds no flow. Counted as a rewrite: of where the server's stream starts.
 */
static struct dp_fate
dp_conn_synack_cut(struct dp_worker *w, struct dp_flow *f)
{
	dp_flowlog_cut(w, f, DP_REASON_REWRITE);
	dp_flow_end(w, f);
	return dp_fate_block(DP_REASON_REWRITE, DP_FATE_REPLY_RST);
}

/*
 * (struct dp_fate){ .act = act, .verdict = v }, made as the word it is: field by field,
 * GCC assembled a variable verdict's fate in a dozen instructions.
 */
static inline struct dp_fate
dp_conn_fate_word(enum dp_fate_act act, enum dp_verdict v)
{
	uint64_t word = (uint64_t)act << (8 * offsetof(struct dp_fate, act)) |
	    (uint64_t)v << (8 * offsetof(struct dp_fate, verdict));
	struct dp_fate out;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a field's byte is its offset");
	memcpy(&out, &word, sizeof(out));
	return out;
}

/*
 * Does p, from the VM on f, carry an urgent pointer while namegate judges f's stream, or
 * keeps judged bytes the server may not have yet (a hello pending or being verified,
 * HTTP, first bytes being sniffed, a judged prefix)? The receiver's TCP takes the byte it
 * names out of the stream (RFC 9293 s3.8.5; Linux, unless the socket asked for
 * SO_OOBINLINE), and the pointer may ride on a bare ACK and name a byte up to 64 KiB past
 * it, in a segment with no URG flag: the application would read a stream namegate never
 * judged (a hello that says another name with one byte gone). No TLS, HTTP or SSH client
 * sends urgent data. DNS over TCP's judge asks the same of each segment itself
 * (dp_dns_tcp.c: its cut leaves shifted).
 */
static inline bool
dp_conn_vm_urgent(const struct dp_flow *f, const struct pkt *p)
{
	return p->proto == PKT_PROTO_TCP && (p->tcp_flags & PKT_TCP_URG) && f->tls != DP_TLS_DNS &&
	    (f->judged != 0 || f->tls == DP_TLS_PENDING || f->tls == DP_TLS_VERIFY ||
	    f->tls == DP_TLS_SNIFF || f->tls == DP_TLS_HTTP);
}

/*
 * A frame from the VM on f, f tracked: to a module that judges its bytes, or on; or, for
 * an urgent pointer (dp_conn_vm_urgent()), f cut: an RST to the VM and onward, counted as
 * a rewrite (of the stream the server would read), and f ended by whoever acts on the
 * fate (dp_out_flow_apply()), so the VM's next segment finds no flow.
 */
static inline struct dp_fate
dp_conn_vm_judge(const struct dp_flow *f, const struct pkt *p)
{
	if (unlikely(dp_conn_vm_urgent(f, p)))
		return dp_fate_cut(DP_REASON_REWRITE);
	if (f->tls == DP_TLS_DNS || (p->payload_len > 0 && (f->tls == DP_TLS_PENDING ||
	    f->tls == DP_TLS_SNIFF || f->tls == DP_TLS_HTTP || f->judged != 0)) ||
	    dp_quic_flow_watched(f, p))
		return dp_fate(DP_FATE_STREAM);
	return dp_conn_fate_word(DP_FATE_EGRESS, f->would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
}

/*
 * A frame from vm on a flow it has: go on under the flow's verdict. Inlined: most of a
 * VM's frames take this path, and a call cost each of them its spills.
 */
static inline __attribute__((always_inline)) struct dp_fate
dp_conn_vm_known(struct dp_worker *w, const struct pkt *p, struct dp_flow *f)
{
	if (!dp_conn_current(w, f))
		return dp_conn_revoke(w, p, f);
	if (f->budgets != 0 &&
	    !dp_budget_charge_set(w, f->key.vm, f->budgets, dp_ip_bytes(p)) &&
	    dp_conn_budget_cuts(w, f))
		return dp_conn_budget_cut(w, p, f);
	dp_flow_track(w, f, p, true);
	if (p->proto == PKT_PROTO_TCP && (p->tcp_flags & PKT_TCP_RST))
		dp_flow_unhold(w, f);
	if (w->ctx->ha)
		dp_ha_note(w, f);	/* a FIN or an RST: its end to the peer */
	return dp_conn_vm_judge(f, p);
}

/*
 * A connection attempt refused for r. An audited VM's is remembered as a flow that would
 * block, whose record comes when it ends; any other's record is the refusal's.
 */
static struct dp_fate
dp_conn_refused(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    uint32_t h, enum dp_reason r)
{
	const struct dp_vm *v = &w->gen->vms[k->vm];
	struct dp_fate refused = dp_fate_refuse(v, r, dp_fate_refusal(w->gen, p));
	struct dp_flow *f;

	if (!v->audit) {
		dp_flowlog_refused(w, p, k, (uint8_t)r, false);
		return refused;
	}
	if ((f = dp_flow_open_hashed(w->flows, k, h, w->gen->max_flows_per_vm, w->now)) == NULL) {
		dp_flowlog_refused(w, p, k, (uint8_t)r, true);
		return refused;
	}
	f->would_block = true;
	f->gen = w->gen->id;
	f->how = DP_ADMIT_NO;
	dp_flow_tcp_start(f, p);
	dp_flowlog_opened(w, f, p, DP_FLOW_NAME_NONE);
	dp_flow_acct(w->flows, f)->end_reason = (uint8_t)r;
	return refused;
}

/*
 * A new connection from k's VM: admitted (SPEC s4 step 4) and remembered (h: k's hash),
 * then its first bytes go to the module that judges them: a ClientHello on a TLS port, DNS
 * to a resolver, a QUIC Initial. What nobody judges never rides on a SYN.
 */
static struct dp_fate
dp_conn_vm_open(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    uint32_t h, struct dp_flow **fp)
{
	const struct dp_gen *g = w->gen;
	uint16_t vm = k->vm;
	const struct dp_vm *v = &g->vms[vm];
	enum dp_admission how;
	struct dp_flow *f;
	uint64_t name_hash = 0;
	uint8_t budgets = 0;

	if (p->proto == PKT_PROTO_TCP &&
	    (p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK | PKT_TCP_RST)) != PKT_TCP_SYN) {
		/* after a takeover: a flow the peer had, if it reported it final */
		if (w->ctx->ha && (f = dp_ha_adopt(w, p, k, true)) != NULL) {
			*fp = f;
			return dp_conn_vm_known(w, p, f);
		}
		/* mid-stream TCP of no known flow: nothing may pass, and the VM should know */
		return dp_fate_refuse(v, DP_REASON_UNSOLICITED, dp_fate_refusal(g, p));
	}
	if (p->dport == DNS_PORT && !dp_gen_is_resolver(g, p->family, p->dst))
		return dp_conn_refused(w, p, k, h, DP_REASON_DNS_DENIED);
	if ((how = dp_admit(w, p, vm, &name_hash, &budgets)) == DP_ADMIT_NO)
		return dp_conn_refused(w, p, k, h, DP_REASON_NO_BINDING);
	/* spent in the window: nothing new through the budget until the window frees */
	if (budgets != 0 && dp_budget_set_spent(w, vm, budgets))
		return dp_conn_refused(w, p, k, h, DP_REASON_BUDGET);
	/* no room to remember it: blocked even in audit mode (fail closed) */
	if ((f = dp_flow_open_hashed(w->flows, k, h, g->max_flows_per_vm, w->now)) == NULL) {
		dp_flowlog_refused(w, p, k, DP_REASON_FLOW_LIMIT, false);
		return dp_fate_block(DP_REASON_FLOW_LIMIT, dp_fate_refusal(g, p));
	}
	*fp = f;
	dp_flowlog_opened(w, f, p, how == DP_ADMIT_BINDING ? DP_FLOW_NAME_BINDING :
	    DP_FLOW_NAME_NONE);
	f->gen = g->id;
	f->how = (uint8_t)how;
	f->name_hash = name_hash;
	f->name_bound = how == DP_ADMIT_BINDING;	/* the name the lookup found, kept */
	f->budgets = budgets;
	if (budgets != 0)
		dp_budget_charge_set(w, vm, budgets, dp_ip_bytes(p));
	dp_flow_tcp_start(f, p);
	if (p->proto == PKT_PROTO_TCP && how == DP_ADMIT_BINDING) {
		/* on a TLS port a hello must come; elsewhere the first bytes say what comes */
		f->tls = dp_gen_is_tls_port(g, p->dport) ? DP_TLS_PENDING : DP_TLS_SNIFF;
		return dp_conn_fate_word(p->payload_len > 0 ? DP_FATE_STREAM : DP_FATE_EGRESS,
		    DP_ALLOWED);
	}
	if (p->proto == PKT_PROTO_TCP && how == DP_ADMIT_DNS) {
		f->tls = DP_TLS_DNS;
		f->dns_acked = f->isn;		/* nothing of the VM's stream acknowledged yet */
		dp_dns_tcp_modulate(f, w->now_tsc);
		return dp_fate(DP_FATE_STREAM);	/* even a bare SYN leaves modulated */
	}
	if (p->proto == PKT_PROTO_TCP && p->payload_len > 0)
		return (struct dp_fate){ .act = DP_FATE_STRIP, .reply = DP_FATE_REPLY_STRIP };
	if (p->proto == PKT_PROTO_UDP && p->dport == QUIC_PORT && how == DP_ADMIT_BINDING) {
		/* quic: inspect (block never gets here): this first datagram is judged too */
		f->tls = DP_TLS_PENDING;
		return dp_fate(DP_FATE_STREAM);
	}
	if (p->proto == PKT_PROTO_UDP && how == DP_ADMIT_BINDING) {
		/* on any other port, a first datagram that may be QUIC is judged as on 443 */
		f->tls = DP_TLS_UDP;
		if (dp_quic_flow_watched(f, p))
			return dp_fate(DP_FATE_STREAM);
	}
	return dp_fate_egress(DP_ALLOWED);
}

/*
 * Is p, from the VM on its flow f (not a reopening), its SYN again with data (TCP Fast
 * Open) after a SYN-ACK? Its data is not judged again if the bytes judged in the first
 * SYN were let go, as a SYN-ACK and an ACK that an accomplice forged let them go when the
 * first SYN was made to die on the way. Then the server would read the second SYN's data
 * unjudged: so it goes on without it. A server that has the connection takes such a SYN
 * as a retransmission and ignores its data anyway; one that has not answers it, and the
 * client sends its bytes again after the handshake, where they are judged. DNS over TCP's
 * judge reads every byte of its flows itself, and shifts what it sends (dp_dns_tcp_mod.h).
 */
static inline bool
dp_flow_syn_data_again(const struct dp_flow *f, const struct pkt *p)
{
	return p->proto == PKT_PROTO_TCP && (p->tcp_flags & PKT_TCP_SYN) && p->payload_len > 0 &&
	    f->peer_synced && f->tls != DP_TLS_DNS;
}

/* Not inlined in dp_conn_vm_any(), so that a plain frame pays none of its stack frame. */
__attribute__((noinline)) struct dp_fate
dp_conn_vm_general(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    uint32_t h, struct dp_flow *f, struct dp_flow **fp)
{
	if (f != NULL) {
		if (!dp_flow_reopened(f, p)) {
			*fp = f;
			if (dp_flow_syn_data_again(f, p))
				return (struct dp_fate){ .act = DP_FATE_STRIP,
					.reply = DP_FATE_REPLY_STRIP };
			return dp_conn_vm_known(w, p, f);
		}
		dp_flowlog_end(w, f, DP_FLOW_END_REPLACED);
		dp_flow_end(w, f);	/* its verdict was that connection's, not this one's */
	}
	return dp_conn_vm_open(w, p, k, h, fp);
}

/*
 * Is p, from the VM on its flow f, a plain frame: one that dp_conn_vm_known() would only
 * track and send to its judge or on? Its flow judged by the current generation and in no
 * budget, no flow log or HA peer to tell, and a TCP segment that neither opens (no
 * SYN: so not a reopening either) nor resets anything (a FIN only closes its side). Its
 * flow stage, the same as dp_conn_vm_known()'s, takes no call.
 */
static inline bool
dp_conn_vm_plain(const struct dp_worker *w, const struct pkt *p, const struct dp_flow *f)
{
	return f->gen == w->gen->id && f->budgets == 0 && p->proto == PKT_PROTO_TCP &&
	    !(p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_RST)) &&
	    w->flow_recs == NULL && !w->ctx->ha;
}

struct dp_fate
dp_conn_vm_any(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    uint32_t h, struct dp_flow *f, struct dp_flow **fp)
{
	if (f == NULL || !dp_conn_vm_plain(w, p, f))
		return dp_conn_vm_general(w, p, k, h, f, fp);
	*fp = f;
	f->last_seen = w->now;
	if (p->tcp_flags & PKT_TCP_FIN)	/* no flow log (plain) to note it */
		dp_flow_track_end(w, f, DP_FLOW_END_FIN, false);
	dp_flow_vm_sent(f, p);
	return dp_conn_vm_judge(f, p);
}

/*
 * A segment from the uplink on no flow is refused. One that acknowledges something (a
 * server still in a connection namegate ended) is answered with an RST at its own
 * acknowledgement, the one sequence its stack takes: when the RST of a cut missed, as it
 * does after a lost segment moved the server's window, the server's challenge ACK (RFC
 * 5961) lands here and ends it, instead of leaving it to wait for its timeout. SYNs and
 * other probes stay unanswered.
 */
static struct dp_fate
dp_conn_uplink_stray(const struct pkt *p)
{
	struct dp_fate out = { .act = DP_FATE_DISCARD, .why = DP_REASON_UNSOLICITED };

	if (p->proto == PKT_PROTO_TCP && (p->tcp_flags & PKT_TCP_ACK) &&
	    !(p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_RST)))
		out.reply = DP_FATE_REPLY_RST;
	return out;
}

__attribute__((noinline)) struct dp_fate
dp_conn_uplink_general(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    struct dp_flow *f, struct dp_flow **fp)
{
	/* after a takeover: a flow the peer had, if it reported it final */
	if (f == NULL && (!w->ctx->ha || (f = dp_ha_adopt(w, p, k, false)) == NULL))
		return dp_conn_uplink_stray(p);
	if (!dp_conn_current(w, f))
		return dp_conn_revoke(w, p, f);
	/* an open flow through a spent budget is cut when anything moves on it */
	if (f->budgets != 0 && dp_budget_set_spent(w, f->key.vm, f->budgets) &&
	    dp_conn_budget_cuts(w, f))
		return dp_conn_budget_cut(w, p, f);
	if (p->proto == PKT_PROTO_TCP && dp_flow_synack_disputed(f, p->tcp_flags, p->seq, p->ack))
		return dp_conn_synack_cut(w, f);
	*fp = f;
	dp_flow_track(w, f, p, false);
	if (p->proto == PKT_PROTO_TCP && (p->tcp_flags & PKT_TCP_RST))
		dp_flow_unhold(w, f);
	if (dp_conn_server_first(f, p))
		f->tls = DP_TLS_NONE;
	if (f->tls == DP_TLS_HTTP)
		dp_http_peer(w, f, p);	/* a cut there reset both ends: this frame is harmless */
	else if ((f->judged != 0 || unlikely(f->hello_phase == DP_HELLO_RETRY)) &&
	    p->proto == PKT_PROTO_TCP) {
		dp_tls_peer_ack(w, f, p->tcp_flags, p->seq, dp_seq_len(p), p->ack);
		dp_tls_server_first(w, f, p->tcp_flags, p->seq, p->payload,
		    (uint32_t)p->payload_len, p->ack);
	}
	if (w->ctx->ha)
		dp_ha_note(w, f);	/* its verdict final (the server has the hello), or its end */
	return f->tls == DP_TLS_DNS ? dp_fate(DP_FATE_STREAM) : dp_fate(DP_FATE_INGRESS);
}
