/*
 * Approval of DNS queries on the fast path (dp_ask.h holds the table): which queries wait
 * for the operator, and how each wait ends. It decides and hands back; the DNS module
 * (dp_dns.c) answers or judges again what comes back, and stands above it.
 */
#ifndef DP_DNS_ASK_H
#define DP_DNS_ASK_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_fate.h"
#include "sni/dns.h"
#include "sni/pkt.h"

/*
 * May vm's query for name (len bytes of text) wait for approval: in enforce mode, nothing
 * in its policy's allow or deny matches it, and an ask pattern does?
 */
bool dp_dns_asks(const struct dp_gen *g, uint16_t vm, const char *name, size_t len);

/*
 * The query q in m (decoded as p) for name, which its policy does not allow: if it is
 * vm's to ask for, held (HELD, or a retransmission folded in), or refused at vm's limit or
 * a full table, with reply DP_FATE_REPLY_DNS saying *text. CONTINUE: not an ask name.
 */
struct dp_fate dp_dns_ask(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, const struct dns_msg *q, const char *name, size_t len, const char **text);

/*
 * Housekeeping, from table slot *slot on: the next held query whose wait ends now (denied,
 * timed out, or no longer left to approval by the current generation), its event sent and
 * its entry forgotten. *m is its frame, *vm its VM, and *text what the answer says (NULL:
 * judged again as a new query). false when none is left.
 */
bool dp_dns_ask_next(struct dp_worker *w, unsigned int *slot, struct rte_mbuf **m,
    uint16_t *vm, const char **text);

/* At teardown: free what is still held. */
void dp_dns_ask_flush(struct dp_worker *w);

#endif
