/*
 * SNI verdicts (SPEC s4 step 5): on a TLS port the client's first bytes must be a
 * ClientHello naming a host the VM may reach. Until the verdict the client's segments are
 * held, not forwarded, so no payload byte reaches the server before namegate has judged
 * it; then they are released in order, or the connection is cut both ways.
 */
#ifndef DP_TLS_H
#define DP_TLS_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_flow.h"
#include "sni/pkt.h"

#define DP_HOLD_SECONDS	5	/* a ClientHello must be whole within this */

struct dp_holds;

/* A pool of nslots hold buffers (each TLS_HELLO_MAX bytes) for one worker. */
struct dp_holds *dp_holds_create(uint32_t nslots, int socket);
void dp_holds_free(struct dp_holds *h);

/*
 * A client segment with payload on flow f, whose verdict is still pending: hold m, and
 * decide once the ClientHello is whole. Takes ownership of m.
 */
void dp_tls_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f);

/*
 * quic: inspect. A datagram from the client of UDP flow f to port 443 whose verdict is
 * pending: hold it, feed its Initials to the QUIC ClientHello reader, and judge the SNI
 * exactly as for TLS over TCP. Denied: ICMP port unreachable, so the client falls back to
 * TCP. Takes ownership of m.
 */
void dp_quic_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f);

/* Forget the held segments of a flow that is being closed. */
void dp_tls_forget(struct dp_worker *w, struct dp_flow *f);

/* Cut flows whose ClientHello did not complete within DP_HOLD_SECONDS (housekeeping). */
void dp_tls_expire(struct dp_worker *w);

#endif
