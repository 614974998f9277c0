/*
 * Sequence number modulation of DNS over TCP (what pf calls modulate state). The VM picks
 * its own ISN, so an accomplice on the internet that was told it knows the ACK the
 * resolver's SYN-ACK carries: with the VM's SYN let die before the resolver (TTL 1), it
 * could forge the handshake and then answers in a stream of its own choosing, and namegate
 * would learn the bindings they name. So at the VM's SYN namegate draws a delta: the VM's
 * sequence numbers leave shifted by it, and the resolver's acknowledgements (its ACK, its
 * SACK blocks' edges) come in shifted back before anything reads them. A SYN-ACK must
 * then acknowledge a number that only the path and the resolver see. Every number namegate
 * keeps stays the VM's: the shift is made at the edges, as a resolver's segment arrives
 * and as each of the VM's segments leaves, or one namegate builds goes to the resolver.
 * TLS and UDP DNS do not pay for it: only DNS over TCP flows come here. Nor does the HA
 * peer need the offset: a DNS over TCP flow is never reported to it (dp_ha_final()), so
 * it is never adopted, with or without one.
 */
#ifndef DP_DNS_TCP_MOD_H
#define DP_DNS_TCP_MOD_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_fate.h"
#include "dp_flow.h"
#include "dp_hash.h"
#include "sni/pkt.h"

/*
 * f, a DNS over TCP flow its VM's SYN just opened at time tsc (dp_flow_tcp_begin() done),
 * modulated, and its SYN's end (a Fast Open SYN's data) kept: the SYN-ACKs it may take
 * (dp_dns_tcp_arrive()). The offset is a keyed PRF (SipHash under the start-time key,
 * dp_hash_bytes()) of the flow's key, its ISN and the time, as RFC 6528 makes ISNs: not
 * rte_rand(), whose generator is linear: any of its outputs that ever left namegate would,
 * enough of them, give its state away, and every offset drawn after.
 */
static inline void
dp_dns_tcp_modulate(struct dp_flow *f, uint64_t tsc)
{
	const struct {
		struct dp_flow_key key;
		uint64_t tsc;
		uint32_t isn, zero;
	} in = { .key = f->key, .tsc = tsc, .isn = f->isn, .zero = 0 };

	f->dns_delta = (uint32_t)dp_hash_bytes(&in, sizeof(in));
	f->dns_syn_end = f->vm_nxt;
}

/*
 * Segment p (frame m) from the uplink on f, a DNS over TCP flow k looked up to: its ACK
 * and SACK blocks shifted back into the VM's numbers, frame and p alike, then its flow
 * stage (dp_conn_uplink_any()). A SYN-ACK that acknowledges neither the VM's SYN nor all
 * of its data is discarded (unsolicited) untracked: the VM's later segments, which move
 * vm_nxt before the handshake, must not widen what a forged one may hit. A fate other
 * than the stream's leaves p's ACK as it came, for the reply it sends back (an RST of a
 * revoked flow).
 */
struct dp_fate dp_dns_tcp_arrive(struct dp_worker *w, struct rte_mbuf *m, struct pkt *p,
    const struct dp_flow_key *k, struct dp_flow *f, struct dp_flow **fp);

/*
 * The VM's segment m (p, its numbers the VM's) on DNS over TCP flow f, as it leaves:
 * shifted into the resolver's view, frame only.
 */
void dp_dns_tcp_seq_out(const struct dp_flow *f, struct rte_mbuf *m, const struct pkt *p);

/*
 * m's fate from DNS over TCP's judge (p, from the VM when from_vm, on flow f) made good
 * for the wire: a segment that goes on (or its stripped copy) shifted, and an RST toward
 * the resolver sent here in its numbers; the fate then says only what is left to do.
 */
struct dp_fate dp_dns_tcp_leave(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p,
    const struct dp_flow *f, bool from_vm, struct dp_fate fate);

#endif
