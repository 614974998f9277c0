/*
 * DNS on the fast path (SPEC s4 steps 2-3): queries from VMs to the configured resolvers
 * are judged by name; allowed ones leave with a query ID of namegate's own and are
 * remembered; answers are accepted only for a remembered query, teach the binding table
 * the addresses on the CNAME chain, and go back with the VM's ID restored.
 */
#ifndef DP_DNS_H
#define DP_DNS_H

#include <stdbool.h>
#include <stdint.h>

#include "dp.h"
#include "sni/dns.h"
#include "sni/pkt.h"

#define DP_PENDING_SECONDS	5	/* how long a forwarded query waits for its answer */

struct dp_pending;

struct dp_pending *dp_pending_create(const char *name, uint32_t cap, int socket);
void dp_pending_free(struct dp_pending *t);
/* Forget up to budget queries that waited past DP_PENDING_SECONDS. */
unsigned int dp_pending_age(struct dp_pending *t, uint64_t now, unsigned int budget);

/* A UDP query from VM vm to a resolver: forward it rewritten, or answer it, or drop it. */
void dp_dns_query_udp(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm);

/* A UDP answer from a resolver to VM vm. */
void dp_dns_answer_udp(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm);

/* The message of a segment that was denied, for the caller's answer. */
struct dp_dns_denied {
	struct rd msg;			/* aliases the segment */
	bool parsed;			/* q holds msg, parsed */
	struct dns_msg q;
};

/*
 * DNS over TCP (RFC 7766) from VM vm to a resolver: one segment's payload. Every message
 * in it must be whole and allowed, as over UDP (a message split across segments cannot be
 * judged before part of it leaves, so it fails too), and is remembered under the VM's own
 * ID, since a stream's IDs cannot be rewritten reliably. Returns true to forward the
 * segment; false: *denied says which message failed, and the caller answers it and cuts
 * the connection (reason dns_denied). In audit mode a denied segment is forwarded and
 * *would_block set.
 */
bool dp_dns_tcp_query(struct dp_worker *w, const struct pkt *p, uint16_t vm,
    bool *would_block, struct dp_dns_denied *denied);

/*
 * DNS over TCP from a resolver to VM vm: every whole answer in the segment must match a
 * query remembered on this connection (ID, question), and is learned from. Returns false
 * for a segment carrying an answer nobody asked for: the caller drops it.
 */
bool dp_dns_tcp_answer(struct dp_worker *w, const struct pkt *p, uint16_t vm);

#endif
