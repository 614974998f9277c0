/*
 * A frame's fate as a value, for its whole life. Decision functions read the decoded frame
 * and the policy generation and return a struct dp_fate, and so do the modules that judge a
 * stream's bytes (TLS, HTTP, DNS, DNS over TCP, QUIC, approval); dp_fate_apply() (dp_out.c)
 * is the one place that acts on it: the event, the reply, the counters, the cut, and
 * sending or freeing the frame. Deciding touches no buffer and no counter, so the stateless
 * decisions are tested as tables without EAL (tests/unit/test_dp_decide.c).
 */
#ifndef DP_FATE_H
#define DP_FATE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dp.h"
#include "sni/pkt.h"

enum dp_fate_act {
	DP_FATE_CONTINUE,	/* not decided yet: the next stage decides */
	DP_FATE_EGRESS,		/* counted for the VM (verdict), sent to the uplink */
	DP_FATE_INGRESS,	/* counted for the VM, sent to the VM port */
	DP_FATE_FLOOD,		/* sent to the VM port, no VM's (ARP, ND to a multicast MAC) */
	DP_FATE_BLOCK,		/* the VM's frame blocked: counted as its egress too */
	DP_FATE_DISCARD,	/* a frame toward the VM refused: counted under why only */
	DP_FATE_DROP,		/* freed, counted as drop why (enum dp_drop) */
	DP_FATE_SLOW,		/* to the exception path's TAP on the side it came from */
	DP_FATE_REASSEMBLE,	/* a fragment: held until its datagram is whole */
	DP_FATE_DNS,		/* a DNS message over UDP: dp_dns decides and acts */
	DP_FATE_STREAM,		/* bytes of a judged stream (TLS, QUIC, DNS over TCP): its
				 * module decides and acts on them with the flow's state */
	DP_FATE_STRIP,		/* the reply (a copy without the data) goes in its place */
	DP_FATE_HELD,		/* taken by a hold or the approval table: nothing to do now */
	DP_FATE_FREE,		/* freed uncounted: what it came to is counted elsewhere (the
				 * cut of its stream, an answer refused with its bindings) */
};

/* A frame namegate sends because of this one. */
enum dp_fate_reply {
	DP_FATE_REPLY_NONE,
	DP_FATE_REPLY_RST,		/* TCP RST back to the frame's sender */
	DP_FATE_REPLY_ICMP,		/* ICMP port unreachable back to the frame's sender */
	DP_FATE_REPLY_STRIP,		/* onward: the SYN without its data */
	DP_FATE_REPLY_CUT,		/* an RST to the sender and, past a SYN, one onward
					 * with the sequence the receiver expects */
	DP_FATE_REPLY_RST_ONWARD,	/* past a SYN, the RST onward alone: the sender was
					 * answered otherwise (DNS over TCP's refusal) */
	DP_FATE_REPLY_DNS,		/* a DNS refusal, built from the query by dp_dns.c
					 * (the exit reads no DNS) before the exit sees it */
	/*
	 * The cuts that need the frame's flow (dp_out_flow.c). Each is the cut both ways
	 * (dp_out_cut()); they differ in where the server's stream stands.
	 */
	DP_FATE_REPLY_CUT_ACKED,	/* at the server's last ACK, whatever the frame says */
	DP_FATE_REPLY_CUT_SENT,		/* at the end of what it was sent (HTTP), built from
					 * the frame or the last held segment; held ones blocked */
	DP_FATE_REPLY_CUT_HELD,		/* at the first held byte, or the first not trickled
					 * (ICMP for QUIC), built from what the flow holds,
					 * which is blocked */
};

struct dp_fate {
	uint8_t act;		/* enum dp_fate_act */
	uint8_t why;		/* enum dp_reason (BLOCK, DISCARD, a logged EGRESS) or dp_drop */
	uint8_t verdict;	/* EGRESS: DP_ALLOWED or DP_WOULD_BLOCK */
	uint8_t reply;		/* enum dp_fate_reply */
	bool log;		/* a block event for why (would_block when the frame passes) */
	bool counted;		/* audit mode (EGRESS, CONTINUE): why counted as a would-be block */
	bool end;		/* the frame's flow ends once the fate is acted on */
	uint8_t held_why;	/* CUT_SENT, CUT_HELD: why held segments are blocked */
	/*
	 * 8 bytes: returned in one register. At 6, GCC assembles it on the stack and reloads
	 * it wider, a store-forwarding stall that cost a third of small64's throughput.
	 */
};
_Static_assert(sizeof(struct dp_fate) == 8, "a fate is one register");

static inline struct dp_fate
dp_fate(enum dp_fate_act act)
{
	return (struct dp_fate){ .act = (uint8_t)act, .verdict = DP_ALLOWED };
}

/* a and b alike in every field: one compare, as a fate is 8 bytes without padding */
static inline bool
dp_fate_eq(struct dp_fate a, struct dp_fate b)
{
	uint64_t x, y;

	memcpy(&x, &a, sizeof(x));
	memcpy(&y, &b, sizeof(y));
	return x == y;
}

static inline struct dp_fate
dp_fate_egress(enum dp_verdict v)
{
	return (struct dp_fate){ .act = DP_FATE_EGRESS, .verdict = (uint8_t)v };
}

static inline struct dp_fate
dp_fate_drop(enum dp_drop d)
{
	return (struct dp_fate){ .act = DP_FATE_DROP, .why = (uint8_t)d };
}

/* Sent on as a judged flow's bytes: would_block once its verdict was audited. */
static inline struct dp_fate
dp_fate_pass(bool would_block)
{
	return dp_fate_egress(would_block ? DP_WOULD_BLOCK : DP_ALLOWED);
}

/* Blocked whatever the VM's mode, with an event. */
static inline struct dp_fate
dp_fate_block(enum dp_reason r, enum dp_fate_reply reply)
{
	return (struct dp_fate){ .act = DP_FATE_BLOCK, .why = (uint8_t)r, .reply = (uint8_t)reply,
		.log = true };
}

/* The connection cut both ways for r (logged), the frame blocked, and its flow ended. */
static inline struct dp_fate
dp_fate_cut(enum dp_reason r)
{
	struct dp_fate f = dp_fate_block(r, DP_FATE_REPLY_CUT);

	f.end = true;
	return f;
}

/*
 * The flow's held stream cut for r with reply (CUT_SENT or CUT_HELD), its event logged by
 * the judge (with the name): what it holds is blocked, and the frame, taken (HELD), freed
 * (FREE) or blocked (BLOCK) with it.
 */
static inline struct dp_fate
dp_fate_cut_held(enum dp_fate_act act, enum dp_reason r, enum dp_fate_reply reply)
{
	return (struct dp_fate){ .act = (uint8_t)act, .why = (uint8_t)r, .reply = (uint8_t)reply,
		.end = true, .held_why = (uint8_t)r };
}

/*
 * What the VM may not do: in audit mode it passes and counts as would_block; otherwise it
 * is blocked with reply (the caller picks it: a refusal the VM hears at once, or none).
 */
static inline struct dp_fate
dp_fate_refuse(const struct dp_vm *v, enum dp_reason r, enum dp_fate_reply reply)
{
	if (v->audit)
		return (struct dp_fate){ .act = DP_FATE_EGRESS, .why = (uint8_t)r,
			.verdict = DP_WOULD_BLOCK, .log = true, .counted = true };
	return dp_fate_block(r, reply);
}

/* The refusal the VM hears with on_block: reset (RST for TCP, ICMP otherwise), or none. */
static inline enum dp_fate_reply
dp_fate_refusal(const struct dp_gen *g, const struct pkt *p)
{
	if (!g->on_block_reset)
		return DP_FATE_REPLY_NONE;
	return p->proto == PKT_PROTO_TCP ? DP_FATE_REPLY_RST : DP_FATE_REPLY_ICMP;
}

/*
 * A frame from the VM port, before reassembly. vm is its VM's slot by (outer VLAN, source
 * MAC), or negative; l3/l3_len its bytes from the network header (for ARP). BLOCK fates
 * are charged to slot DP_VM_UNKNOWN(g) when vm < 0.
 */
struct dp_fate dp_decide_vm_frame(const struct dp_gen *g, const struct pkt *p, int vm,
    const uint8_t *l3, size_t l3_len);

/* A whole datagram from VM vm (st: how it decoded): up to its flow. */
struct dp_fate dp_decide_vm_datagram(const struct dp_gen *g, const struct pkt *p,
    enum pkt_status st, uint16_t vm);

/* A frame from the uplink toward vm (negative: no VM's MAC), before reassembly. */
struct dp_fate dp_decide_uplink_frame(const struct dp_gen *g, const struct pkt *p, int vm);

/* A whole datagram from the uplink toward VM vm: up to its flow. */
struct dp_fate dp_decide_uplink_datagram(const struct dp_gen *g, const struct pkt *p,
    enum pkt_status st);

#endif
