/*
 * What dp_quic.c shares with dp_quic_dgram.c: the walks over a datagram's long headers and
 * over an opened Initial's frames. Private to dataplane/quic.
 */
#ifndef DP_QUIC_INT_H
#define DP_QUIC_INT_H

#include <stddef.h>
#include <stdint.h>

/*
 * CRYPTO frames taken from one packet. They are added to the stream sorted by offset, so a
 * packet whose frames are shuffled (Chrome's "chaos protection" does so) adds one range to
 * the reassembler however many pieces it came in; no real client comes near this bound.
 */
#define DP_QUIC_FRAGS_MAX	64

struct dp_quic_frag {
	uint32_t off;
	uint32_t len;
	const uint8_t *p;	/* aliases the worker's plaintext */
};

/*
 * Bytes taken by a 0-RTT or Handshake packet of a version namegate reads at buf, 0 when
 * buf holds no such packet (RFC 9000 s17.2.3-4: no token, unlike an Initial):
 *
 *   u8 first | u32 version | u8 len | dcid | u8 len | scid | varint length | length bytes
 *
 * Retry has no Length and a short header runs to the end of the datagram, so after them,
 * as after an unknown version, no server can find another packet either.
 */
size_t dp_quic_long_skip(const uint8_t *buf, size_t len);

/*
 * The frames of the opened Initial p[0..len): the CRYPTO fragments put in frags (at most
 * DP_QUIC_FRAGS_MAX), their number, or -1 for a frame a client's Initial may not carry,
 * or CRYPTO data past stream offset cap.
 */
int dp_quic_frames_walk(const uint8_t *p, size_t len, uint32_t cap, struct dp_quic_frag *frags);

#endif
