/*
 * Queries that wait for approval (policies.NAME.ask): a DNS query for a name only an ask
 * pattern matches is neither answered nor forwarded but held here, one entry per (VM,
 * question), until the operator approves it (the worker sees a generation that allows
 * the name and forwards the held query), denies it, or approval.timeout passes (both
 * answered REFUSED, EDE 15). A stub that asks again while it waits is absorbed: the
 * entry keeps the latest frame, so the answer goes to the ID and port still waiting.
 *
 * One fixed table per worker, DP_ASK_SLOTS entries, a VM holding at most its share
 * (approval.max_pending_per_vm over the workers): a VM asking in a loop fills its share
 * and is refused (vm_limit), never its neighbours'. No DPDK here: frames are opaque
 * pointers the caller owns the freeing of, so the table is tested on its own.
 */
#ifndef DP_ASK_H
#define DP_ASK_H

#include <stdbool.h>
#include <stdint.h>

#include "sni/dns.h"

#define DP_ASK_SLOTS	64	/* queries held per worker, all VMs together */

struct dp_ask_entry {
	void *frame;			/* the latest query (an rte_mbuf), owned by the table */
	uint64_t seq;			/* 0: free; else unique on this table, never reused */
	uint64_t first_seen;		/* seconds, the worker's clock */
	uint64_t deadline;		/* first_seen + approval.timeout */
	uint32_t absorbed;		/* retransmissions folded into this entry */
	uint32_t gen;			/* the generation that last judged the name */
	uint16_t vm, qtype, qclass;
	uint8_t qname_len;
	uint8_t qname[DNS_NAME_WIRE_MAX];	/* wire form, as the first query had it */
};

struct dp_ask {
	struct dp_ask_entry e[DP_ASK_SLOTS];
	/*
	 * Written by the main lcore (namegatectl deny): the seq of the request it denies, at
	 * its slot. A seq is never reused, so a late write never hits a later request.
	 */
	_Atomic uint64_t deny[DP_ASK_SLOTS];
	uint64_t next_seq;
};

enum dp_ask_hold {
	DP_ASK_NEW,		/* held in a fresh entry: announce it */
	DP_ASK_AGAIN,		/* the same question of the same VM waits: frame replaced */
	DP_ASK_VM_LIMIT,	/* vm holds max_per_vm already: refuse it */
	DP_ASK_FULL,		/* no free entry (other VMs' shares): refuse it */
};

void dp_ask_init(struct dp_ask *t);

/*
 * Hold frame, query q of vm (its question: qname wire form, qtype, qclass; names compare
 * without ASCII case), at now for timeout seconds, judged under generation gen. *out is
 * the entry for NEW and AGAIN; on AGAIN *old is the frame it replaced (the caller frees
 * it). On VM_LIMIT and FULL nothing is kept.
 */
enum dp_ask_hold dp_ask_hold(struct dp_ask *t, uint16_t vm, const struct dns_msg *q, void *frame,
    uint64_t now, uint32_t timeout, uint32_t max_per_vm, uint32_t gen,
    struct dp_ask_entry **out, void **old);

/* Free e's entry; its frame is the caller's (already taken or freed). */
void dp_ask_forget(struct dp_ask *t, struct dp_ask_entry *e);

/* Has the main lcore denied e? */
bool dp_ask_denied(const struct dp_ask *t, const struct dp_ask_entry *e);

/* Main lcore: deny the request seq at slot (ignored if it has ended). */
void dp_ask_deny(struct dp_ask *t, uint32_t slot, uint64_t seq);

/* Has e waited its timeout at now? */
bool dp_ask_expired(const struct dp_ask_entry *e, uint64_t now);

/* Entries of vm in use. */
uint32_t dp_ask_count(const struct dp_ask *t, uint16_t vm);

#endif
