/*
 * Can a datagram from a client open a QUIC connection, whatever the flow it rides on
 * already had judged? A server opens one for any Initial whose Destination Connection ID
 * it does not know, with keys derived from that DCID (RFC 9001 s5.2), and reads its
 * ClientHello from CRYPTO offset 0. Everything else in a datagram is a packet of a
 * connection the server already has (one namegate judged), or nothing a server takes.
 */
#include <errno.h>

#include "sni/quic.h"
#include "sni/rd.h"

#include "dp_quic.h"
#include "dp_quic_int.h"

/*
 * The Initial q at pkt opened the way a server that does not know its DCID opens it: keys
 * from that DCID, packet numbers from 0 (RFC 9000 A.3, no packet seen yet). Whether its
 * CRYPTO data starts a stream (offset 0) says whether it carries a hello a new connection
 * would read. One that does not authenticate so is one of a connection whose keys come
 * from another DCID (a client's Initials after the server chose its CID, RFC 9000 s7.2):
 * no server can start a connection with it.
 */
static enum dp_quic_dgram
initial_class(struct dp_quic_ctx *ctx, const uint8_t *pkt, const struct quic_initial *q)
{
	struct dp_quic_frag frags[DP_QUIC_FRAGS_MAX];
	struct dp_quic_keys k;
	size_t plain_len;
	uint64_t pn;
	int rc, nb;

	if (dp_quic_keys_derive(ctx, q->version, q->dcid, q->dcid_len, &k, NULL) != 0)
		return DP_QUIC_DGRAM_UNREADABLE;
	rc = dp_quic_packet_open(ctx, &k, pkt, q, 0, dp_quic_ctx_plain(ctx), &plain_len, &pn);
	if (rc == -EBADMSG)
		return DP_QUIC_DGRAM_PASS;
	/* reserved bits set, frames no client's Initial has: nothing namegate reads */
	if (rc != 0 || (nb = dp_quic_frames_walk(dp_quic_ctx_plain(ctx), plain_len, UINT32_MAX,
	    frags)) < 0)
		return DP_QUIC_DGRAM_UNREADABLE;
	for (int i = 0; i < nb; i++) {
		if (frags[i].off == 0)
			return DP_QUIC_DGRAM_HELLO;
	}
	return DP_QUIC_DGRAM_PASS;
}

/*
 * One packet at pkt (left bytes to the datagram's end, len in all): its class, and *n, the
 * bytes it takes when another packet may follow it (0: none can, RFC 9000 s12.2).
 */
static enum dp_quic_dgram
packet_class(struct dp_quic_ctx *ctx, const uint8_t *pkt, size_t left, size_t len, size_t *n)
{
	struct rd r = rd_make(pkt, left);
	struct quic_initial q;
	enum dp_quic_dgram c;
	uint32_t version;
	uint8_t first;

	*n = 0;
	if (!rd_u8(&r, &first) || (first & 0x80) == 0)
		return DP_QUIC_DGRAM_PASS;	/* a short header: to the end, no new connection */
	/*
	 * Another version may be one the server speaks and namegate cannot read; a cleared
	 * fixed bit is the greasing of RFC 9287, which a server may accept on a new
	 * connection's Initial and whose packets namegate does not open. Neither is passed.
	 */
	if (!rd_u32(&r, &version) || !quic_version_known(version) || (first & 0x40) == 0)
		return DP_QUIC_DGRAM_UNREADABLE;
	switch (quic_long_type(first, version)) {
	case QUIC_LONG_RETRY:
		return DP_QUIC_DGRAM_PASS;	/* servers drop it (s17.2.5); no Length to skip */
	case QUIC_LONG_INITIAL:
		/* a server drops an Initial in a datagram under 1200 bytes (s14.1): so do we */
		if (quic_initial_parse(pkt, left, &q) != QUIC_INITIAL || len < DP_QUIC_DGRAM_MIN)
			return DP_QUIC_DGRAM_UNREADABLE;
		c = initial_class(ctx, pkt, &q);
		*n = q.packet_len;
		return c;
	default:
		/* 0-RTT and Handshake need keys of a connection the server has: no new hello */
		*n = dp_quic_long_skip(pkt, left);
		return *n == 0 ? DP_QUIC_DGRAM_UNREADABLE : DP_QUIC_DGRAM_PASS;
	}
}

enum dp_quic_dgram
dp_quic_dgram_class(struct dp_quic_ctx *ctx, const uint8_t *dgram, size_t len)
{
	enum dp_quic_dgram c = DP_QUIC_DGRAM_PASS;
	size_t off = 0, n;

	/* every packet coalesced in it (RFC 9000 s12.2): a hello in any of them is judged */
	while (off < len && c == DP_QUIC_DGRAM_PASS) {
		c = packet_class(ctx, dgram + off, len - off, len, &n);
		if (n == 0)
			break;
		off += n;
	}
	return c;
}
