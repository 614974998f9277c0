/*
 * Receiving a frame: counted, made contiguous, decoded, and its checksums verified, so
 * that nothing the receiver's stack would discard ever changes a flow, a held stream, a
 * pending query or a binding (an "insertion": a segment the filter reads and the server
 * never does).
 */
#ifndef DP_RX_H
#define DP_RX_H

#include <stdbool.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "sni/pkt.h"

/*
 * Count m as received on port and decode it into *p. Returns false when m was dropped
 * (malformed, or a checksum the receiver would reject), counted.
 */
bool dp_rx_decode(struct dp_worker *w, struct rte_mbuf *m, unsigned int port, struct pkt *p,
    enum pkt_status *st);

/*
 * The transport checksum of a decoded TCP or UDP packet (st == PKT_OK), in software or from
 * the port's offload flags. Separate because a reassembled datagram is checked only whole.
 */
bool dp_rx_l4_csum_ok(const struct rte_mbuf *m, const struct pkt *p);

#endif
