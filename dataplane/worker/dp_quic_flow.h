/*
 * QUIC from the VMs (SPEC s4.6, `quic: inspect`): a flow's first datagrams held until the
 * ClientHello in their Initials is judged.
 */
#ifndef DP_QUIC_FLOW_H
#define DP_QUIC_FLOW_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_flow.h"
#include "sni/pkt.h"

/*
 * quic: inspect. A datagram from the client of UDP flow f to port 443 whose verdict is
 * pending: hold it, feed its Initials to the QUIC ClientHello reader, and judge the SNI
 * exactly as for TLS over TCP. Denied: ICMP port unreachable, so the client falls back to
 * TCP. Takes ownership of m.
 */
void dp_quic_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    struct dp_flow *f);

#endif
