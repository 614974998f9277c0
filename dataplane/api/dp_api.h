/*
 * What the fast path tells the control plane: fixed-size, versioned records, plain C, so
 * control/ can read them without DPDK headers. Each worker has two rings: bindings on one,
 * block events on the other, so that blocks (which a VM can make as fast as it sends)
 * never crowd out the bindings nftables must learn. The main lcore drains bindings first,
 * as soon as a worker wakes it. Never blocks a worker: a block record finding its ring
 * full is dropped and counted; a binding is only made once its record is sure to fit
 * (dp_evt_bind_room()), else the DNS answer that carried it is dropped and counted.
 */
#ifndef DP_API_H
#define DP_API_H

#include <stdint.h>

#define DP_API_VERSION		3
#define DP_EVT_NAME_MAX		253
#define DP_EVT_PORTS_MAX	6	/* POL_PORTS_MAX: the ports a name's allow patterns list */

enum dp_evt_type {
	DP_EVT_BIND = 1,	/* DNS taught (vm, addr) for name, for ttl seconds */
	DP_EVT_BLOCK = 2,	/* a connection or query of vm was blocked (or would be) */
	DP_EVT_ASK = 3,		/* a query of vm for an ask name waits for approval */
	DP_EVT_ASK_END = 4,	/* and no longer does (reason: enum dp_ask_end) */
	DP_EVT_FLOW = 5,	/* HA pair: a TCP flow of vm whose verdict is final */
	DP_EVT_FLOW_END = 6,	/* and its end */
	DP_EVT_NAME = 7,	/* a new question of vm under a budgeted wildcard was admitted */
};

/*
 * FLOW and FLOW_END: family, proto, addr and port are the flow's peer, expires its name's
 * hash (dp_name_hash(), 0: admitted by address), gen the generation that judged it, and
 * flow the rest (its sequence state as it stood when it became final), in place of name.
 */
struct dp_evt_flow {
	uint32_t isn, vm_nxt, peer_ack, peer_wnd, peer_isn;
	uint16_t vm_port;
	uint8_t how;			/* enum dp_admission: address or binding */
	uint8_t name_bound;
	uint8_t vm_wscale, peer_wscale;
};

/*
 * NAME: port is the question's type, ttl the length of the wildcard's suffix at the end of
 * name. The main lcore hands the HA peer's to a worker the same way (dp_evt_peer_name()).
 */

/*
 * ASK and ASK_END reuse the record's fields: port is the question's type, ttl the held
 * entry's slot on its worker's table and expires its sequence number there (the pair
 * namegatectl deny names it by), tsc when it was first seen, name the question's name.
 */

/* How a held query ended (dataplane/worker/dp_ask.h); the ASK_END record's reason. */
enum dp_ask_end {
	DP_ASK_END_RELEASED,	/* the name is no longer ask-only: it went on as any query */
	DP_ASK_END_DENIED,	/* namegatectl deny */
	DP_ASK_END_TIMEOUT,	/* approval.timeout passed */
};

/*
 * The TCP and UDP destination ports a binding opens, as the worker judged its name: every
 * port (all), or port[0..n); nothing at all when n is 0 and all is not set (the name is
 * denied on every port, and the slow path gets no element for it either).
 */
struct dp_evt_ports {
	uint8_t all;
	uint8_t n;
	uint16_t port[DP_EVT_PORTS_MAX];
};

struct dp_evt {
	uint16_t version;		/* DP_API_VERSION */
	uint16_t type;			/* enum dp_evt_type */
	uint16_t vm;			/* VM slot */
	uint8_t family;			/* 4 or 6; 0: no address */
	uint8_t proto;			/* IP protocol, BLOCK */
	uint8_t addr[16];		/* BIND: the bound address; BLOCK: the destination */
	uint16_t port;			/* BLOCK: destination port */
	uint8_t reason;			/* BLOCK: enum dp_reason; ASK_END: enum dp_ask_end */
	uint8_t would_block;		/* BLOCK: audit mode, it passed */
	uint32_t ttl;			/* BIND: seconds, clamped */
	uint64_t tsc;			/* when, in TSC cycles */
	uint64_t expires;		/* BIND: seconds since start when the binding lapses,
					 * as the worker stored it (ttl clamped and added) */
	uint32_t gen;			/* BIND: the generation that judged the name */
	struct dp_evt_ports ports;	/* BIND: what the binding opens under gen */
	uint8_t name_len;
	union {
		char name[DP_EVT_NAME_MAX + 1];	/* the queried name or the SNI; not
						 * NUL-terminated */
		struct dp_evt_flow flow;	/* FLOW, FLOW_END */
	};
	uint8_t pad[3];
};

/*
 * A flow record for the flow log (SPEC s9): a flow that ended, an interim report of a long
 * one (final 0, cumulative), or a connection attempt refused before it had a flow. On a
 * third ring of each worker, where each VM has a share (dp_flowlog.h), so one VM's churn
 * never costs a neighbour its records. The worker knows a flow's name by its hash only: the
 * main lcore finds the string among the names the VM resolved; name is filled where the
 * worker had the string at hand (a refused hello's SNI, a refused attempt's name).
 */
enum dp_flow_end {
	DP_FLOW_END_OPEN,	/* still open: an interim record */
	DP_FLOW_END_FIN,	/* a FIN was seen, and the flow closed or aged after it */
	DP_FLOW_END_RST,	/* an RST */
	DP_FLOW_END_IDLE,	/* aged out (or reclaimed) idle */
	DP_FLOW_END_CUT,	/* namegate cut it: reason says why */
	DP_FLOW_END_BLOCKED,	/* refused before it opened: reason says why */
	DP_FLOW_END_GONE,	/* its VM left the policy */
	DP_FLOW_END_REPLACED,	/* a new connection came on its 4-tuple */
	DP_FLOW_END_STOP,	/* namegate stopped while it was open */
	DP_FLOW_END_MAX,
};

/* What the flow's name came from (name_hash, or name). */
enum dp_flow_name_kind {
	DP_FLOW_NAME_NONE,	/* admitted by address, or refused before any name */
	DP_FLOW_NAME_BINDING,	/* the name bound to its peer's address when it opened */
	DP_FLOW_NAME_SNI,	/* its TLS or QUIC hello's SNI */
	DP_FLOW_NAME_HOST,	/* its HTTP request's Host */
};

struct dp_flow_rec {
	uint16_t version;		/* DP_API_VERSION */
	uint16_t vm;			/* VM slot */
	uint8_t family;			/* 4 or 6 */
	uint8_t proto;			/* IP protocol */
	uint8_t end;			/* enum dp_flow_end */
	uint8_t reason;			/* why cut, blocked or would be: enum dp_reason;
					 * DP_REASON_ALLOWED: none */
	uint8_t would_block;		/* audit mode: it was judged "block" and passed */
	uint8_t name_kind;		/* enum dp_flow_name_kind */
	uint8_t budgets;		/* the budgets it counted in (bits: the generation's) */
	uint8_t final;			/* 0: an interim record of an open flow */
	uint16_t vm_port, peer_port;
	uint8_t vm_addr[16];
	uint8_t peer_addr[16];
	uint32_t gen;			/* the generation budgets' bits are of */
	uint64_t name_hash;		/* dp_name_hash() of the name, when name_len is 0 */
	uint64_t start_tsc, stop_tsc;	/* first frame; last frame (or now, interim) */
	uint64_t bytes_out, bytes_in;	/* IP bytes, from the VM and toward it */
	uint64_t packets_out, packets_in;
	uint8_t name_len;
	char name[DP_EVT_NAME_MAX + 1];	/* not NUL-terminated */
};

#endif
