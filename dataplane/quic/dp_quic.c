/*
 * A QUIC client's ClientHello from its Initial packets: the walk over a datagram, the
 * frames, CRYPTO reassembly and the hello itself. Packet protection is dp_quic_crypto.c's.
 *
 * Whatever fails is final (DP_QUIC_MALFORMED), so a packet may be half taken when it fails:
 * nothing of the stream is read again but to refuse the flow.
 */
#include <errno.h>
#include <string.h>

#include "sni/rd.h"

#include "dp_quic.h"
#include "dp_quic_int.h"

#define TLS_RECORD_HDR		5
#define TLS_HS_HDR		4
#define TLS_HS_CLIENT_HELLO	1
#define TLS_CT_HANDSHAKE	22

/* Room for a second hello is all a bigger buffer can be used for. */
#define HELLO_BUF_MAX		(2 * TLS_HELLO_MAX)

#define FRAME_PADDING		0x00
#define FRAME_PING		0x01
#define FRAME_ACK		0x02
#define FRAME_ACK_ECN		0x03
#define FRAME_CRYPTO		0x06

static const char *const dp_quic_status_names[] = {
	[DP_QUIC_NEED_MORE] = "need_more",
	[DP_QUIC_FOUND] = "found",
	[DP_QUIC_ABSENT] = "absent",
	[DP_QUIC_MALFORMED] = "malformed",
	[DP_QUIC_NOT_INITIAL] = "not_initial",
};

const char *
dp_quic_status_str(enum dp_quic_status st)
{
	if ((size_t)st >= sizeof(dp_quic_status_names) / sizeof(dp_quic_status_names[0]))
		return "unknown";
	return dp_quic_status_names[st];
}

void
dp_quic_hello_init(struct dp_quic_hello *h, uint8_t *buf, size_t buf_len)
{
	uint32_t cap;

	if (buf_len > HELLO_BUF_MAX)
		buf_len = HELLO_BUF_MAX;
	cap = buf_len > TLS_RECORD_HDR ? (uint32_t)(buf_len - TLS_RECORD_HDR) : 0;
	memset(h, 0, sizeof(*h));
	h->buf = buf;
	h->status = DP_QUIC_NEED_MORE;
	reasm_init(&h->crypto, 0, cap > 0 ? buf + TLS_RECORD_HDR : buf, cap);
}

static enum dp_quic_status
fail(struct dp_quic_hello *h)
{
	h->status = DP_QUIC_MALFORMED;
	return DP_QUIC_MALFORMED;
}

static bool
same_bytes(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
	return a_len == b_len && memcmp(a, b, a_len) == 0;
}

size_t
dp_quic_long_skip(const uint8_t *buf, size_t len)
{
	struct rd r = rd_make(buf, len), cid;
	enum quic_long_type type;
	uint64_t length;
	uint32_t version;
	uint8_t first;

	if (!rd_u8(&r, &first) || (first & 0xc0) != 0xc0 || !rd_u32(&r, &version) ||
	    !quic_version_known(version))
		return 0;
	type = quic_long_type(first, version);
	if (type != QUIC_LONG_0RTT && type != QUIC_LONG_HANDSHAKE)
		return 0;
	if (!rd_vec8(&r, &cid) || cid.len > QUIC_CID_MAX || !rd_vec8(&r, &cid) ||
	    cid.len > QUIC_CID_MAX || !rd_varint(&r, &length) || length > r.len)
		return 0;
	return len - r.len + (size_t)length;
}

/*
 * ACK frame after its type (RFC 9000 s19.3):
 *
 *   largest (i) | delay (i) | range_count (i) | first_range (i) | { gap (i) | len (i) }* |
 *   [ ect0 (i) | ect1 (i) | ecn_ce (i) ]                        type 0x03 only
 *
 * Ranges must stay at or above packet number 0 (s19.3.1). Every range takes at least two
 * bytes, so a huge range_count ends at the end of the packet.
 */
static bool
frame_ack(struct rd *r, bool ecn)
{
	uint64_t largest, delay, count, range, gap, smallest, ect;

	if (!rd_varint(r, &largest) || !rd_varint(r, &delay) || !rd_varint(r, &count) ||
	    !rd_varint(r, &range) || range > largest)
		return false;
	smallest = largest - range;
	for (uint64_t i = 0; i < count; i++) {
		if (!rd_varint(r, &gap) || !rd_varint(r, &range) || gap + 2 > smallest)
			return false;
		largest = smallest - gap - 2;
		if (range > largest)
			return false;
		smallest = largest - range;
	}
	for (int i = 0; ecn && i < 3; i++) {
		if (!rd_varint(r, &ect))
			return false;
	}
	return true;
}

/*
 * The frames of a client's Initial (RFC 9000 s12.4 table 3, s17.2.2): PADDING, PING, ACK
 * and CRYPTO (type | offset (i) | length (i) | data, s19.6). CONNECTION_CLOSE may also be
 * there, but a client that gives up has nothing to judge, so it is refused with every
 * other type (a PROTOCOL_VIOLATION to a server). Types are read as one byte: one encoded
 * longer than needed is refused too, as s12.4 allows. A packet without frames is a
 * PROTOCOL_VIOLATION (s12.4), and CRYPTO data past cap can never be held.
 */
int
dp_quic_frames_walk(const uint8_t *p, size_t len, uint32_t cap, struct dp_quic_frag *frags)
{
	struct rd r = rd_make(p, len), data;
	uint64_t off, n;
	uint8_t type;
	int nb = 0;

	if (len == 0)
		return -1;
	while (rd_u8(&r, &type)) {
		switch (type) {
		case FRAME_PADDING:
		case FRAME_PING:
			break;
		case FRAME_ACK:
		case FRAME_ACK_ECN:
			if (!frame_ack(&r, type == FRAME_ACK_ECN))
				return -1;
			break;
		case FRAME_CRYPTO:
			if (!rd_varint(&r, &off) || !rd_varint(&r, &n) || n > r.len ||
			    !rd_sub(&r, (size_t)n, &data) || off > cap || n > cap - off)
				return -1;
			if (n == 0)
				break;
			if (nb == DP_QUIC_FRAGS_MAX)
				return -1;
			frags[nb++] = (struct dp_quic_frag){
				.off = (uint32_t)off, .len = (uint32_t)n, .p = data.p,
			};
			break;
		default:
			return -1;
		}
	}
	return nb;
}

/* Open with k; on success the plaintext is in the worker's buffer and next_pn moves on. */
static int
open_with(struct dp_quic_ctx *ctx, struct dp_quic_hello *h, const struct dp_quic_keys *k,
    const uint8_t *pkt, const struct quic_initial *q, size_t *plain_len)
{
	uint64_t pn;
	int rc;

	rc = dp_quic_packet_open(ctx, k, pkt, q, h->next_pn, dp_quic_ctx_plain(ctx), plain_len,
	    &pn);
	if (rc == 0 && pn >= h->next_pn)
		h->next_pn = pn + 1;
	return rc;
}

/*
 * Which keys protect a client's Initial (RFC 9001 s5.2) depends on what it has heard, and
 * anyone may send one, so each candidate is tried until one authenticates:
 *   1. the keys that opened the last packet, also after the client moved to the DCID the
 *      server chose (RFC 9000 s7.2): the keys stay those of the original DCID;
 *   2. keys from this packet's DCID: the first Initial, or the first after a Retry;
 *   3. keys from the first DCID under this packet's version: compatible version
 *      negotiation (RFC 9368) keeps the original DCID.
 * All share one packet number space: a Retry does not reset it (RFC 9000 s17.2.5.3).
 */
static int
open_any(struct dp_quic_ctx *ctx, struct dp_quic_hello *h, const uint8_t *pkt,
    const struct quic_initial *q, size_t *plain_len)
{
	const uint8_t *dcid[2] = { q->dcid, h->odcid };
	const uint8_t dcid_len[2] = { q->dcid_len, h->odcid_len };
	bool cached = h->have_keys && h->keys.version == q->version;
	struct dp_quic_keys k;
	int rc;

	if (cached && (rc = open_with(ctx, h, &h->keys, pkt, q, plain_len)) != -EBADMSG)
		return rc;
	for (int i = 0; i < (h->have_keys ? 2 : 1); i++) {
		if ((i == 1 && same_bytes(dcid[0], dcid_len[0], dcid[1], dcid_len[1])) ||
		    (cached && same_bytes(h->keys.dcid, h->keys.dcid_len, dcid[i], dcid_len[i])))
			continue;		/* tried already */
		if ((rc = dp_quic_keys_derive(ctx, q->version, dcid[i], dcid_len[i], &k,
		    NULL)) != 0)
			return rc;
		if ((rc = open_with(ctx, h, &k, pkt, q, plain_len)) == -EBADMSG)
			continue;
		if (rc == 0) {
			h->keys = k;
			if (!h->have_keys) {
				memcpy(h->odcid, q->dcid, q->dcid_len);
				h->odcid_len = q->dcid_len;
				h->have_keys = true;
			}
		}
		return rc;
	}
	return -EBADMSG;
}

/* Open one Initial and add its CRYPTO data to the stream. */
static bool
initial_take(struct dp_quic_ctx *ctx, struct dp_quic_hello *h, const uint8_t *pkt,
    const struct quic_initial *q)
{
	struct dp_quic_frag frags[DP_QUIC_FRAGS_MAX], f;
	size_t plain_len;
	int nb, j;

	if (open_any(ctx, h, pkt, q, &plain_len) != 0 ||
	    (nb = dp_quic_frames_walk(dp_quic_ctx_plain(ctx), plain_len, h->crypto.cap, frags)) < 0)
		return false;
	for (int i = 1; i < nb; i++) {		/* insertion sort by offset: nb is small */
		f = frags[i];
		for (j = i; j > 0 && frags[j - 1].off > f.off; j--)
			frags[j] = frags[j - 1];
		frags[j] = f;
	}
	/* CONFLICT: two copies of a byte differ. SCATTERED: too many holes to track. */
	for (int i = 0; i < nb; i++) {
		if (reasm_add(&h->crypto, frags[i].off, frags[i].p, frags[i].len) != REASM_OK)
			return false;
	}
	return true;
}

/*
 * The handshake message at stream offset at, once its first bytes are held: u8 type (must
 * be ClientHello) | u24 length | body. Sets *msg_len, header included, once known. False
 * when it is not a ClientHello, does not fit the buffer, or is larger than the TCP path
 * would take (one record of TLS_HELLO_MAX stream bytes).
 */
static bool
hello_len_at(const struct dp_quic_hello *h, uint32_t at, uint32_t have, uint32_t *msg_len)
{
	const uint8_t *m = h->buf + TLS_RECORD_HDR + at;
	uint32_t n;

	if (*msg_len != 0 || have <= at)
		return true;
	if (m[0] != TLS_HS_CLIENT_HELLO)
		return false;
	if (have - at < TLS_HS_HDR)
		return true;
	n = TLS_HS_HDR + ((uint32_t)m[1] << 16 | (uint32_t)m[2] << 8 | m[3]);
	if (n > h->crypto.cap - at || TLS_RECORD_HDR + n > TLS_HELLO_MAX)
		return false;
	*msg_len = n;
	return true;
}

/*
 * Parse the n-byte ClientHello at stream offset at with the TCP path's parser, as a single
 * record: the 5 bytes in front of it become the record header, 22 | 3.1 | n. For the first
 * hello they are buf[0..5); for a second one, the tail of the first, so they are put back
 * after (out's pointers all lie past the header and stay valid).
 */
static enum dp_quic_status
hello_parse(struct dp_quic_hello *h, uint32_t at, uint32_t n, struct tls_hello *out)
{
	uint8_t *rec = h->buf + at, saved[TLS_RECORD_HDR];
	enum sni_status st;

	memcpy(saved, rec, sizeof(saved));
	rec[0] = TLS_CT_HANDSHAKE;
	rec[1] = 3;
	rec[2] = 1;
	rec[3] = (uint8_t)(n >> 8);
	rec[4] = (uint8_t)n;
	st = tls_hello_parse(rec, TLS_RECORD_HDR + n, NULL, 0, out);
	memcpy(rec, saved, sizeof(saved));
	switch (st) {
	case SNI_FOUND:
		return DP_QUIC_FOUND;
	case SNI_ABSENT:
		return DP_QUIC_ABSENT;
	default:
		return DP_QUIC_MALFORMED;
	}
}

/*
 * Judge what the stream holds after a datagram:
 *
 *   0          hello_len            hello_len + hello2_len
 *   | ClientHello | ClientHello (after HRR) |  nothing may follow
 *
 * A client sends nothing else in Initial packets (RFC 9001 s4). The first hello is
 * judged as soon as it is whole; the second, which RFC 8446 s4.1.2 requires to repeat the
 * first but for the key share, must carry the same server_name, or the server could be
 * told another name than the one judged. Bytes past them end the flow.
 */
static enum dp_quic_status
hello_eval(struct dp_quic_hello *h, struct tls_hello *out)
{
	uint32_t have = reasm_contiguous(&h->crypto), end = 0, at2;
	struct tls_hello second;
	enum dp_quic_status st;

	if (h->crypto.nb_ranges > 0)
		end = h->crypto.ranges[h->crypto.nb_ranges - 1].end;
	if (!hello_len_at(h, 0, have, &h->hello_len))
		return fail(h);
	if (h->hello_len == 0 || have < h->hello_len)
		return DP_QUIC_NEED_MORE;
	at2 = h->hello_len;
	if (end > at2 && (!hello_len_at(h, at2, have, &h->hello2_len) ||
	    (h->hello2_len != 0 && end > at2 + h->hello2_len)))
		return fail(h);
	if ((st = hello_parse(h, 0, h->hello_len, out)) == DP_QUIC_MALFORMED)
		return fail(h);
	if (h->hello2_len != 0 && have >= at2 + h->hello2_len &&
	    (hello_parse(h, at2, h->hello2_len, &second) != st ||
	    (st == DP_QUIC_FOUND && !same_bytes(out->sni.p, out->sni.len, second.sni.p,
	    second.sni.len))))
		return fail(h);
	h->status = (uint8_t)st;
	return st;
}

enum dp_quic_status
dp_quic_hello_feed(struct dp_quic_ctx *ctx, struct dp_quic_hello *h, const uint8_t *dgram,
    size_t len, struct tls_hello *out)
{
	struct quic_initial q;
	size_t off = 0, n;
	bool any = false;

	if (h->status == DP_QUIC_MALFORMED)
		return DP_QUIC_MALFORMED;
	/* Coalesced packets (RFC 9000 s12.2), each taken or skipped by its own Length. */
	while (off < len) {
		switch (quic_initial_parse(dgram + off, len - off, &q)) {
		case QUIC_INITIAL:
			if (len < DP_QUIC_DGRAM_MIN || !initial_take(ctx, h, dgram + off, &q))
				return fail(h);
			any = true;
			off += q.packet_len;
			continue;
		case QUIC_MALFORMED:
			return fail(h);
		case QUIC_OTHER:
			break;
		}
		if ((n = dp_quic_long_skip(dgram + off, len - off)) == 0)
			break;
		off += n;
	}
	if (!any)
		return DP_QUIC_NOT_INITIAL;
	return hello_eval(h, out);
}
