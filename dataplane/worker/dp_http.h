/*
 * Plaintext HTTP/1.x on flows admitted by a binding (SPEC s8, "first bytes on every
 * port"): each request's Host judged as a ClientHello's SNI is, reason host_denied.
 */
#ifndef DP_HTTP_H
#define DP_HTTP_H

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "dp_hold.h"
#include "sni/pkt.h"

/*
 * The held first bytes h of f turned out to be an HTTP request: from now on f is an HTTP
 * flow, read and judged from its first byte. Releases what h holds: HELD, or the cut.
 */
struct dp_fate dp_http_adopt(struct dp_worker *w, struct dp_hold *h, struct dp_flow *f);

/* A client segment m with payload on HTTP flow f: its fate (HELD: taken into the hold). */
struct dp_fate dp_http_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, struct dp_flow *f);

/*
 * A server segment p on HTTP flow f: judged bytes it acknowledges need no copy, and after
 * a CONNECT its status line says whether what follows is a tunnel. May cut f.
 */
void dp_http_peer(struct dp_worker *w, struct dp_flow *f, const struct pkt *p);

/*
 * Housekeeping for h, an HTTP flow's buffer: a head held too long is cut, and a copy of
 * judged bytes the server's stream as namegate saw it never acknowledges, idle past
 * DP_VERIFY_SECONDS, is given back.
 */
void dp_http_expire(struct dp_worker *w, struct dp_hold *h);

#endif
