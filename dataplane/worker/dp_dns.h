/*
 * DNS on the fast path (SPEC s4 steps 2-3): queries from VMs to the configured resolvers
 * are judged by name; allowed ones leave with a query ID of namegate's own and the name in
 * lower case, and are remembered; answers are accepted only for a remembered query, teach
 * the binding table the addresses on the CNAME chain, and go back with the VM's ID and its
 * spelling of the name restored (the case of a name is bits the VM chooses per query: sent
 * on, 200 spellings of a seen name would be 200 messages to the resolver's upstreams).
 */
#ifndef DP_DNS_H
#define DP_DNS_H

#include <stdint.h>

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "dp_hold.h"
#include "sni/pkt.h"

/*
 * A UDP query m from VM vm to a resolver: its fate, sent on rewritten, answered (a refusal
 * built here), held for approval (dp_dns_ask.h), or dropped.
 */
struct dp_fate dp_dns_query_udp(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm);

/*
 * Housekeeping: end every query held for approval that was denied, timed out, or that the
 * current generation no longer leaves to approval (judged afresh), answered or sent on.
 */
void dp_dns_ask_sweep(struct dp_worker *w);

/* A UDP answer m from a resolver to VM vm: its fate, learned from and edited in place. */
struct dp_fate dp_dns_answer_udp(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm);

/*
 * DNS over TCP (RFC 7766), both directions as streams, on flow f to a resolver. The VM's
 * segments are held until every message they carry is whole and judged as over UDP; each
 * allowed query is remembered under the VM's own ID (a stream's IDs cannot be rewritten
 * reliably) and leaves with its name in lower case, a denied one is answered and the
 * connection cut (reason dns_denied). The resolver's segments are held until each answer
 * is whole and matches a remembered query (ID, question), and is learned from before it
 * reaches the VM; an answer nobody asked for cuts the connection (unsolicited). Judged
 * bytes must never be rewritten (rewrite). Both return m's fate (HELD: taken into a hold),
 * and keep the flow's numbers the VM's: what leaves toward the resolver is shifted into its
 * (sequence number modulation, dp_dns_tcp_mod.h), its segments were shifted back as they
 * came (dp_dns_tcp_arrive()).
 */
struct dp_fate dp_dns_tcp_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, struct dp_flow *f);
struct dp_fate dp_dns_tcp_server(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, struct dp_flow *f);

/* Housekeeping: a message partly held for DP_HOLD_SECONDS cuts its connection. */
void dp_dns_tcp_expire(struct dp_worker *w, struct dp_hold *h);

#endif
