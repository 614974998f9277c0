/*
 * QUIC from the VMs (SPEC s4.6, `quic: inspect`): on any port, every datagram that could
 * open a QUIC connection has its ClientHello judged as TLS over TCP is, for as long as
 * the flow lives, not only its first.
 */
#ifndef DP_QUIC_FLOW_H
#define DP_QUIC_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "dp_quic.h"
#include "sni/pkt.h"

/*
 * A datagram from the client of UDP flow f whose verdict is pending (its first on port
 * 443, or one dp_quic_flow_vm found a hello in): hold it, feed its Initials to the QUIC
 * ClientHello reader, and judge the SNI exactly as for TLS over TCP. Allowed, the flow
 * becomes DP_TLS_QUIC; denied, ICMP port unreachable, so the client falls back to TCP.
 * Returns m's fate (HELD: taken into the hold).
 */
struct dp_fate dp_quic_client(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, struct dp_flow *f);

/*
 * Does p, from the VM on f, go to dp_quic_flow_vm? Only a long header (first bit set) can
 * open a QUIC connection, so nothing else pays for the question. On a QUIC flow every long
 * header is read. On other UDP (DP_TLS_UDP), one under 1200 bytes is positive evidence
 * that no QUIC server opens a connection for it: a server drops an Initial in a smaller
 * datagram (RFC 9000 s14.1), and one of a version it does not know too (s5.2.2), so RTP,
 * NTP and the like with that bit set go on. From 1200 bytes, nothing that looks like a
 * long header is taken for "another protocol" unless it proves to be no Initial namegate
 * must judge (dp_quic_dgram_class: a cleared fixed bit or an unknown version is not
 * passed).
 */
static inline bool
dp_quic_flow_watched(const struct dp_flow *f, const struct pkt *p)
{
	if (f->tls != DP_TLS_QUIC && f->tls != DP_TLS_UDP)
		return false;
	if (p->payload_len == 0 || (p->payload[0] & 0x80) == 0)
		return false;
	return f->tls == DP_TLS_QUIC || p->payload_len >= DP_QUIC_DGRAM_MIN;
}

/*
 * A datagram from the VM that dp_quic_flow_watched took: a new hello in it is judged as a
 * flow's first (dp_quic_client); a long header namegate cannot read is dropped (reason
 * quic); the rest goes on. Returns m's fate.
 */
struct dp_fate dp_quic_flow_vm(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    uint16_t vm, struct dp_flow *f);

#endif
