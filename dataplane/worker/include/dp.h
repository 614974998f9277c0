/*
 * The fast path's shared types. One process: worker lcores run dp_worker_loop(); the
 * main lcore runs setup, housekeeping and (later) control/. Read-mostly state (VMs,
 * policy, settings) is one struct dp_gen; per-flow state belongs to one worker; bindings
 * are the one table every worker writes (lock-free hash, see dp_bind.c).
 */
#ifndef DP_H
#define DP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "dp_ha_seen.h"
#include "dp_reason.h"
#include "policy/match.h"
#include "policy/vocab.h"

#define DP_BURST		32
#define DP_WORKERS_MAX		16
#define DP_RESOLVERS_MAX	8
#define DP_TLS_PORTS_MAX	16
#define DP_PORT_VM		0
#define DP_PORT_UPLINK		1
#define DP_PORT_SLOW_VM		2	/* exception path TAP, VM side of the kernel bridge */
#define DP_PORT_SLOW_UP		3	/* exception path TAP, uplink side */
#define DP_PORTS		4
/* dp_tx() queues for DP_PORT_VM and DP_PORT_UPLINK: a TAP's frames go by slow_out */
#define DP_TX_PORTS		2
/*
 * VM slots: dataplane.max_vms of them (sized once at start, a reload keeps the running
 * number), and one more, max_vms itself, for the counters of frames from no VM.
 */
#define DP_VM_UNKNOWN(g)	((g)->max_vms)
#define DP_VM_INDEX_MIN_BITS	12	/* the (vlan, MAC) index: at least 4 x max_vms entries */
#define DP_VM_INDEX_EMPTY	UINT64_MAX
#define DP_SLOW_RING		1024	/* exception-path frames in flight, each way, per worker */
#define DP_HA_RING		64	/* the pair's beacons to the main lcore, per worker */

enum dp_verdict { DP_ALLOWED, DP_BLOCKED, DP_WOULD_BLOCK, DP_VERDICT_MAX };

/*
 * A VM as the fast path sees it, at its slot: a VM keeps its slot across reloads (by
 * name), so its bindings, flows and counters stay its own; a removed VM's slot stays empty
 * until all of it is gone and purged (dataplane/main/dp_vmslot.h), and only then may a
 * new VM have it.
 */
struct dp_vm {
	const char *name;
	bool present;
	struct pol_vm_id id;
	uint32_t policy;	/* index in the generation's pol_set */
	/*
	 * The policy the file gives the VM: its index in the generation's ask and budget sets.
	 * A VM with grants is given a policy of its own (policy), but its ask patterns and its
	 * budgets stay the file's: no grant or approval switches them off.
	 */
	uint32_t conf_policy;
	bool audit;
	uint8_t budgets;	/* its policy's egress budgets: 0, no flow of it counts */
	/*
	 * The families its policy has address patterns of (dp_vm_addrs_bit()): a connection
	 * to an address of any other asks no address match, which could only say no match.
	 */
	uint8_t addrs;
};

/* A family's bit in struct dp_vm's addrs: 4 for IPv4, anything else IPv6. */
static inline uint8_t
dp_vm_addrs_bit(uint8_t family)
{
	return family == 4 ? 1 : 2;
}

/*
 * Bits of a filter over the address table's addresses, by their last twelve bits: an
 * address whose bit is clear is in no entry, and most of an answer's take no probe.
 */
#define DP_ADDR_SEEN_BITS	4096

/* A VM's address as dp_gen_is_vm_addr() keys it: network order, an IPv4 one zero-padded. */
struct dp_vm_addr {
	uint64_t w[2];
};

/* Everything a reload replaces, published as one pointer. Immutable once published. */
struct dp_gen {
	uint32_t id;
	const struct pol_set *set;
	const struct pol_set *budget_set;	/* egress budgets' hosts, by each VM's conf_policy */
	struct dp_vm *vms;		/* max_vms + 1, by slot; the last is "unknown" */
	uint16_t max_vms;		/* dataplane.max_vms as the process started */
	uint16_t nvms;			/* slots below it ever handed out: loops stop here */
	uint64_t *vm_keys;		/* vm_index_mask + 1 (vlan, MAC) keys, open addressing */
	uint16_t *vm_slots;		/* and the VM slot of each */
	uint64_t vm_index_mul;		/* odd, secret: where a key's probe starts */
	uint32_t vm_index_mask;		/* a power of two less 1: 4 x max_vms and more */
	uint8_t vm_index_shift;		/* 64 - log2(vm_index_mask + 1) */
	struct dp_vm_addr *vm_addrs;	/* present VMs' addresses, open addressing */
	uint8_t *vm_addr_family;	/* and the family of each, and DP_ADDR_*: 0, empty */
	uint32_t vm_addr_seed;		/* secret: where an address's probe starts */
	uint32_t vm_addr_mask;		/* its entries less 1: 4 x an IPv4 and an IPv6 a slot */
	uint64_t vm_addr_seen[DP_ADDR_SEEN_BITS / 64];	/* dp_gen_addr_seen_bit()s of its addresses */
	struct rte_hash *names;		/* (slot, name hash) -> names_ports index */
	struct pol_ports *names_ports;
	uint32_t nnames, names_cap;
	struct pol_addr resolvers[DP_RESOLVERS_MAX];
	unsigned int nresolvers;
	/* the same by family, as words (dp_gen_resolvers_set()): every DNS datagram asks */
	uint32_t resolvers4[DP_RESOLVERS_MAX];
	uint64_t resolvers6[DP_RESOLVERS_MAX][2];
	uint8_t nresolvers4, nresolvers6;
	/* 0 ends them: no TLS port is 0 (the loader refuses it), and a zeroed g has none */
	uint16_t tls_ports[DP_TLS_PORTS_MAX + 1];
	uint32_t min_ttl, max_ttl;
	uint8_t blocked_rcode;		/* DNS_RCODE_REFUSED or DNS_RCODE_NXDOMAIN */
	bool on_block_reset;
	bool sni_strict;
	bool ech_strip;			/* dns.ech: strip */
	bool quic_inspect;
	uint32_t max_flows_per_vm;	/* per worker: the configured cap / workers */
	uint32_t max_pending_per_vm;	/* per worker, as flows */
	uint32_t max_holds_per_vm;	/* per worker */
	uint32_t max_frags_per_vm;	/* per worker */
	uint32_t max_bindings_per_vm;	/* the one shared table: as configured */
	uint32_t names_per_suffix;	/* per worker: new names per wildcard suffix; 0: off */
	uint32_t names_window;		/* dns.max_names_per_suffix.per, seconds */
	bool names_to_peer;		/* ha.sync_peer: admitted names go to the HA peer */
	const struct pol_set *ask;	/* policies' ask: patterns (pol_config.ask) */
	uint32_t ask_timeout;		/* approval.timeout, seconds */
	uint32_t max_asks_per_vm;	/* per worker: approval.max_pending_per_vm's share */
};

/* Per-VM counters, kept per worker without atomics and summed by the main lcore. */
struct dp_vm_stats {
	uint64_t egress_pkts[DP_VERDICT_MAX];
	uint64_t egress_bytes[DP_VERDICT_MAX];
	uint64_t ingress_pkts, ingress_bytes;
	uint64_t blocked[DP_REASON_MAX];
	uint64_t dns_allowed, dns_blocked;
	uint64_t evt_suppressed;	/* block events past the VM's budget: counted only */
	uint64_t evt_second;		/* the second evt_used counts in (worker-local) */
	uint32_t evt_used;
	uint64_t bind_queued;		/* binding events put on the worker's bind ring, ever */
	uint64_t flowrec_queued;	/* flow records put on the worker's flow record ring */
	uint64_t flowrec_dropped;	/* and lost: the VM held its share of the ring */
};

/* The name a flow about to be cut was refused for (dp_flowlog_name()). */
#define DP_FLOWLOG_NAME_MAX	253	/* DP_EVT_NAME_MAX: a DNS name's longest */
struct dp_flowlog_stash {
	const struct dp_flow *f;
	uint8_t kind;
	uint8_t len;
	char name[DP_FLOWLOG_NAME_MAX + 1];
};

/*
 * A port's queue. dp_tx() sends it once it holds DP_BURST frames; a burst's own frames sent
 * on (dp_tx_own(), at most DP_BURST) go in past that unasked, and the burst's end sends
 * what they filled (dp_tx_burst_end()): room for both.
 */
#define DP_TX_ROOM		(2 * DP_BURST)
struct dp_txbuf {
	uint16_t n;
	struct rte_mbuf *pkts[DP_TX_ROOM];
};

#define DP_DNS_SCRATCH	65536	/* the largest DNS message, over TCP or reassembled UDP */

/* Why a mid-stream segment's adoption was refused (namegate_ha_adopt_refused_total). */
enum dp_ha_refusal {
	DP_HA_REFUSE_NO_RECORD,		/* no synced record: it gets what it got without ha: */
	DP_HA_REFUSE_POLICY,		/* the current policy no longer allows it */
	DP_HA_REFUSE_BUDGET,		/* one of its budgets is spent */
	DP_HA_REFUSE_FLOW_LIMIT,	/* no room in the worker's flow table (the VM's share) */
	DP_HA_REFUSE_MAX,
};

struct dp_flows;
struct dp_frags;
struct dp_ha_flows;
struct dp_holds;
struct dp_pending;
struct dp_binds;
struct dp_name_budget;
struct dp_ask;
struct dp_budget_cell;
struct dp_vmslots;
struct ctl_events;

struct __rte_cache_aligned dp_worker {
	unsigned int id;		/* 0 .. workers - 1: also its queue on both ports */
	unsigned int lcore;
	atomic_bool stop;
	const struct dp_gen *gen;	/* this worker's view; refreshed at quiescent points */
	struct dp_ctx *ctx;

	struct dp_flows *flows;		/* this worker's flows */
	struct dp_holds *holds;		/* client bytes held until their SNI verdict */
	struct dp_pending *pending;	/* DNS queries it forwarded */
	struct dp_frags *frags;		/* IP datagrams in reassembly */
	uint8_t *dns_scratch;		/* DP_DNS_SCRATCH bytes: an answer being edited */
	struct dp_name_budget *name_budget;	/* names each VM asked for under wildcards */
	struct dp_ask *ask;		/* queries waiting for approval (dp_ask.h) */
	uint64_t ask_absorbed;		/* retransmissions of waiting queries, folded in */

	struct dp_vm_stats *vm_stats;	/* by slot, max_vms + 1 */
	struct dp_budget_cell *budget_cells;	/* [slot][budget], max_vms + 1 slots */
	uint64_t drops[DP_DROP_MAX];
	uint64_t port_pkts[DP_PORTS][2];	/* [port][0 = rx, 1 = tx] */
	uint64_t port_bytes[DP_PORTS][2];

	struct dp_txbuf tx[DP_TX_PORTS];
	struct rte_ring *evts;		/* to the main lcore: api/dp_api.h block records */
	struct rte_ring *bind_evts;	/* and binding records, on a ring of their own */
	struct rte_ring *peer_names;	/* from the main lcore: the HA peer's new names */
	/*
	 * Binding events of each VM (by slot) the main lcore took off bind_evts, ever: written
	 * by the main lcore only. vm_stats[vm].bind_queued less this is what vm has in flight.
	 */
	_Atomic(uint64_t) *bind_taken;
	uint64_t evt_dropped;		/* block events lost: their ring was full */
	/* flow records (dp_flowlog.h), NULL without a flow log; and as bind_taken for them */
	struct rte_ring *flow_recs;
	_Atomic(uint64_t) *flowrec_taken;
	struct dp_flowlog_stash flowlog_name;
	/*
	 * The exception path goes through the main lcore, which alone owns the TAPs: frames
	 * for the kernel (mbuf->port: the TAP, DP_PORT_SLOW_*) and, back, frames the kernel
	 * let through (mbuf->port: the TAP they came out of), to go on out of the other port.
	 */
	struct rte_ring *slow_out;
	struct rte_ring *slow_back;
	uint64_t now;			/* seconds since start, refreshed per burst */
	uint64_t now_tsc;		/* and in TSC cycles, when it was */
	uint32_t idle_sleep_us;		/* dataplane.idle_sleep_us: the longest nap when idle */
	uint32_t idle_polls;		/* polls in a row that found nothing */
	uint32_t nap_us;		/* the next nap: doubles while idle, up to idle_sleep_us */
	struct dp_ha_seen ha_seen;	/* the uplink's stations, seen while standby */
	uint64_t ha_adopted;		/* flows adopted from the HA peer's records */
	uint64_t ha_refused[DP_HA_REFUSE_MAX];	/* mid-stream segments that adopted none */
	struct rte_ring *ha_in;		/* to the main lcore: the pair's beacons (ha: only) */
	_Atomic(uint64_t) ha_stalls;	/* stalls this worker found (dp_ha_gate.h) */
};

/* The process-wide state, owned by the main lcore. */
struct dp_ctx {
	uint16_t port[DP_PORTS];	/* DPDK port ids */
	uint16_t mtu[DP_PORTS];		/* their IP MTUs: a reassembled datagram is cut to fit */
	bool slow_path;			/* the exception path's TAP ports are open */
	char slow_bridge[16];		/* its kernel bridge */
	char slow_ports[2][16];		/* and the TAPs on it: VM side, uplink side */
	struct rte_mempool *pool;
	unsigned int nworkers;
	struct dp_worker *workers[DP_WORKERS_MAX];
	_Atomic(const struct dp_gen *) gen;	/* the published generation */
	struct dp_binds *binds;
	struct rte_rcu_qsbr *qsbr;
	uint32_t max_flows;		/* all workers together */
	uint16_t max_vms;		/* dataplane.max_vms at start: every per-VM table's size */
	struct dp_vmslots *vmslots;	/* the main lcore's: which slot may go to a new VM */
	uint64_t tsc_hz, tsc_start;
	unsigned int flow_log_ring;	/* records each worker's ring holds; 0: no flow log */
	uint64_t flow_log_interval_tsc;	/* an open flow's interim records; 0: none */
	int wake_fd;			/* eventfd the main lcore sleeps on; -1: none */
	int slow_rx_fd[2];		/* the TAPs' rx interrupt fds (VM side, uplink side); -1 */
	uint64_t main_drops[DP_DROP_MAX];	/* the main lcore's, on the exception path */
	const struct ctl_events *events;	/* its lost lines count as events dropped; NULL */
	/*
	 * Set by the main lcore before its last look at the rings and its sleep: a worker that
	 * enqueues for it then clears it and writes wake_fd (dp_main_wake()), so there is one
	 * write per sleep, not one per event, and none while the main lcore is awake.
	 */
	atomic_bool main_asleep;
	/*
	 * HA pair (dp_ha_gate.h): ha is set at start when ha: is configured; ha_shut says
	 * why the workers forward nothing now (DP_HA_SHUT_*), 0 when they forward: 0 without
	 * ha: (and in a zeroed context, as the tests make). Each writer sets or clears its
	 * own bit (the FIFO reader's thread the role's, the main lcore the guard's, a worker
	 * that finds it stalled the hold's); the workers read it once per burst. ha_stall_tsc:
	 * a gap between a worker's polls longer than this is a stall (0: not looked for).
	 * A cache line of their own: main_asleep above changes at every sleep of the main
	 * lcore, and the workers read these per burst.
	 */
	bool ha __rte_cache_aligned;
	_Atomic(uint32_t) ha_shut;
	uint64_t ha_stall_tsc;
	/* the pair's flows (dp_ha_flows.h), with a sync stream; read on a lookup's miss only */
	struct dp_ha_flows *ha_flows;
};

#define DP_HA_SHUT_ROLE		0x1	/* keepalived does not say MASTER */
#define DP_HA_SHUT_PEER		0x2	/* the guard: a peer of higher priority forwards */
#define DP_HA_SHUT_HELD		0x4	/* stalled or starting: until the peer's resync */
#define DP_HA_ETH_BEACON	0x88b5	/* the pair's beacons: CTL_HA_BEACON_TYPE, checked there */

/* Seconds since start: bindings and flows age in whole seconds. */
static inline uint64_t
dp_now(const struct dp_ctx *ctx)
{
	return (rte_get_tsc_cycles() - ctx->tsc_start) / ctx->tsc_hz;
}

#endif
