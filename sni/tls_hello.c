/*
 * TLS ClientHello reader (RFC 8446 s4.1.2 and s5.1, RFC 6066 s3, RFC 7301 s3.1).
 *
 * The input is a client's first bytes on a TCP stream, as many as have arrived; the caller
 * re-runs the parser from offset 0 whenever more arrive, so it keeps no state. Every check
 * is made as soon as the bytes it needs are present and never depends on bytes after them,
 * so a status other than SNI_NEED_MORE never changes when the stream grows: the dataplane
 * may act on the first definite answer.
 */
#include <string.h>

#include "sni/rd.h"
#include "sni/tls.h"
#include "tls_int.h"

#define TLS_CT_HANDSHAKE	22
#define TLS_VERSION_MAJOR	3
#define TLS_RECORD_HDR		5
#define TLS_RECORD_MAX		16384	/* RFC 8446 s5.1: TLSPlaintext.length <= 2^14 */
#define TLS_HS_CLIENT_HELLO	1
#define TLS_HS_HDR		4
#define TLS_RANDOM_LEN		32
#define TLS_SESSION_ID_MAX	32
#define TLS_FIXED		(2 + TLS_RANDOM_LEN + 1)	/* version, random, id length */

static const char *const sni_status_names[] = {
	[SNI_NEED_MORE] = "need_more",
	[SNI_FOUND] = "found",
	[SNI_ABSENT] = "absent",
	[SNI_NOT_TLS] = "not_tls",
	[SNI_MALFORMED] = "malformed",
};

const char *
sni_status_str(enum sni_status st)
{
	if ((size_t)st >= sizeof(sni_status_names) / sizeof(sni_status_names[0]))
		return "unknown";
	return sni_status_names[st];
}

/*
 * TLSPlaintext header (RFC 8446 s5.1), judged byte by byte as it arrives so that a stream
 * which is not TLS is called so from its first byte:
 *
 *   0        1        2        3        4        5
 *   +--------+--------+--------+-----------------+-------------------+
 *   |  type  | major  | minor  |     length      | fragment ...      |
 *   |  = 22  |  = 3   |  any   |   1 .. 2^14     |                   |
 *   +--------+--------+--------+-----------------+-------------------+
 *
 * RFC 5246 appendix E.1 lets a client put any {03,xx} in the record version, and s5.1
 * forbids empty handshake fragments. A header that breaks this is SNI_NOT_TLS on the
 * stream's first record (it is not a TLS stream at all) and SNI_MALFORMED on a later one.
 * Returns SNI_FOUND with *rec_len and the cursor at the fragment.
 */
static enum sni_status
tls_record_hdr(struct rd *s, bool first, uint16_t *rec_len)
{
	enum sni_status bad = first ? SNI_NOT_TLS : SNI_MALFORMED;
	uint8_t type, major, hi, lo;

	if (s->len >= TLS_RECORD_HDR) {
		/* whole: each test below is bad alone, so their order no longer matters */
		uint16_t n = rd_be16(s->p + 3);

		if (s->p[0] != TLS_CT_HANDSHAKE || s->p[1] != TLS_VERSION_MAJOR || n == 0 ||
		    n > TLS_RECORD_MAX)	/* a high byte over 2^14 >> 8 is over 2^14 */
			return bad;
		*s = rd_make(s->p + TLS_RECORD_HDR, s->len - TLS_RECORD_HDR);
		*rec_len = n;
		return SNI_FOUND;
	}
	if (!rd_u8(s, &type))
		return SNI_NEED_MORE;
	if (type != TLS_CT_HANDSHAKE)
		return bad;
	if (!rd_u8(s, &major))
		return SNI_NEED_MORE;
	if (major != TLS_VERSION_MAJOR)
		return bad;
	if (!rd_skip(s, 1) || !rd_u8(s, &hi))		/* any minor version */
		return SNI_NEED_MORE;
	if (hi > TLS_RECORD_MAX >> 8)		/* over 2^14 whatever the low byte says */
		return bad;
	if (!rd_u8(s, &lo))
		return SNI_NEED_MORE;
	*rec_len = (uint16_t)(hi << 8 | lo);
	if (*rec_len == 0 || *rec_len > TLS_RECORD_MAX)
		return bad;
	return SNI_FOUND;
}

/*
 * Find the ClientHello handshake message in the records at the start of the stream:
 *
 *   one record:  | hdr | 1 | u24 n | body (n) |                     *msg aliases buf
 *   fragmented:  | hdr | 1 | u24 n | bo | hdr | dy ... | hdr | ... |  gathered in scratch
 *
 * A handshake message may be split over records at any byte, its 4-byte header too (RFC
 * 8446 s5.1). Until the hello is whole every record must be a handshake record, and the
 * record that completes it must end with it: whatever a client sends next is encrypted,
 * and s5.1 does not let handshake messages span a key change. The stream up to the end of
 * that record may not exceed TLS_HELLO_MAX.
 *
 * Returns SNI_FOUND with *msg (header included) and *stream_len, or the stream's status.
 */
static enum sni_status
tls_hello_gather(const uint8_t *buf, size_t len, uint8_t *scratch, size_t scratch_len,
    struct rd *msg, size_t *stream_len)
{
	struct rd s = rd_make(buf, len), frag, peek;
	size_t have = 0, want = 0;	/* message bytes gathered; its length, once known */
	enum sni_status st;
	uint16_t rec_len;
	uint32_t body_len;
	uint8_t hs_type;

	for (bool first = true;; first = false) {
		if ((st = tls_record_hdr(&s, first, &rec_len)) != SNI_FOUND)
			return st;
		if (len - s.len + rec_len > TLS_HELLO_MAX)
			return SNI_MALFORMED;
		if (first) {
			peek = rd_make(s.p, s.len < rec_len ? s.len : rec_len);
			if (rd_u8(&peek, &hs_type) && hs_type != TLS_HS_CLIENT_HELLO)
				return SNI_MALFORMED;
		}
		if (first && rec_len >= TLS_HS_HDR) {
			/* Only the hello's length says whether this record holds all of it. */
			if (!rd_u24(&peek, &body_len))
				return SNI_NEED_MORE;
			want = TLS_HS_HDR + (size_t)body_len;
			if (want + TLS_RECORD_HDR > TLS_HELLO_MAX || want < rec_len)
				return SNI_MALFORMED;	/* too big, or bytes after it */
			if (want == rec_len) {
				if (!rd_sub(&s, rec_len, msg))
					return SNI_NEED_MORE;
				*stream_len = len - s.len;
				return SNI_FOUND;
			}
			if (want > scratch_len)
				return SNI_MALFORMED;
		}
		if (want != 0 && have + rec_len > want)
			return SNI_MALFORMED;		/* bytes after the hello */
		if (have + rec_len > scratch_len)
			return SNI_MALFORMED;
		if (!rd_sub(&s, rec_len, &frag))
			return SNI_NEED_MORE;
		memcpy(scratch + have, frag.p, frag.len);
		have += frag.len;
		if (want == 0 && have >= TLS_HS_HDR) {
			/* The header came in pieces; its type byte was checked in record one. */
			peek = rd_make(scratch + 1, 3);
			if (!rd_u24(&peek, &body_len))
				return SNI_MALFORMED;
			want = TLS_HS_HDR + (size_t)body_len;
			if (have > want || want > scratch_len ||
			    len - s.len + want - have > TLS_HELLO_MAX)
				return SNI_MALFORMED;
		}
		if (have == want) {
			*msg = rd_make(scratch, have);
			*stream_len = len - s.len;
			return SNI_FOUND;
		}
	}
}

/*
 * ClientHello (RFC 8446 s4.1.2; the layout of RFC 5246 s7.4.1.2 as well):
 *
 *   u8 msg_type (1) | u24 length
 *   u16 legacy_version (3.x) | random (32)
 *   u8 len | legacy_session_id (0..32)
 *   u16 len | cipher_suites (2 bytes each, at least one)
 *   u8 len | legacy_compression_methods (at least one)
 *   [ u16 len | extensions ]       a TLS 1.2 hello may stop before them (RFC 5246)
 *
 * Nothing may follow the extensions inside the message.
 */
static inline __attribute__((always_inline)) enum sni_status
tls_hello_fields(struct rd body, struct tls_hello *out, bool ids)
{
	const uint8_t *p = body.p;
	size_t len = body.len, at = TLS_FIXED, n;

	/*
	 * Offsets into the body, each length checked against len before what it counts is
	 * read: every way to fail is SNI_MALFORMED, so one test may stand for several.
	 */
	if (len < TLS_FIXED || p[0] != TLS_VERSION_MAJOR || p[at - 1] > TLS_SESSION_ID_MAX)
		return SNI_MALFORMED;
	at += p[at - 1];			/* past the session id */
	if (len < at + 2 || (n = rd_be16(p + at)) == 0 || n % 2 != 0)
		return SNI_MALFORMED;
	at += 2 + n;				/* past the cipher suites */
	/* 1 <= methods <= len - at - 1, in one compare: methods - 1 wraps for 0 */
	if (len <= at || (size_t)p[at] - 1 >= len - at - 1)
		return SNI_MALFORMED;
	at += 1 + (size_t)p[at];		/* past the compression methods */
	if (len == at)
		return SNI_ABSENT;
	if (len - at < 2 || len - at - 2 != rd_be16(p + at))
		return SNI_MALFORMED;
	return ids ? tls_hello_exts(rd_make(p + at + 2, len - at - 2), out) :
	    tls_hello_exts_sni(rd_make(p + at + 2, len - at - 2), out);
}

/* The message m, its header checked. */
static enum sni_status
tls_hello_body(struct rd m, struct tls_hello *out)
{
	struct rd body;
	uint8_t type;

	if (!rd_u8(&m, &type) || type != TLS_HS_CLIENT_HELLO || !rd_vec24(&m, &body) ||
	    m.len != 0)
		return SNI_MALFORMED;
	return tls_hello_fields(body, out, true);
}

/*
 * The common stream: one record whose fragment is the whole hello. Told from the two
 * headers at once, it is what tls_hello_gather() and tls_hello_body()'s header checks find
 * of it: a handshake record of 4 + n bytes (so not empty, and within 2^14 with its
 * header), a ClientHello of n, nothing after it in the record. TLS_ONE_WHOLE when all of
 * it arrived (*body: the hello after its header); TLS_ONE_SHORT when only a part did,
 * which gathering finds a prefix of one record too (SNI_NEED_MORE: the headers hold);
 * TLS_ONE_OTHER: any other stream goes their way.
 */
enum tls_one { TLS_ONE_WHOLE, TLS_ONE_SHORT, TLS_ONE_OTHER };

static inline enum tls_one
tls_hello_one_record(const uint8_t *buf, size_t len, struct rd *body)
{
	enum { HDRS = TLS_RECORD_HDR + TLS_HS_HDR };
	uint32_t n;

	if (len < HDRS || rd_be16(buf) != (TLS_CT_HANDSHAKE << 8 | TLS_VERSION_MAJOR))
		return TLS_ONE_OTHER;
	/*
	 * the hello's length as the record has it, wrapped past TLS_HELLO_MAX for a record
	 * under 4 bytes; the message's type and length then compared in one word with it
	 */
	n = (uint32_t)rd_be16(buf + 3) - TLS_HS_HDR;
	if (n > TLS_HELLO_MAX - HDRS ||
	    rd_be32(buf + TLS_RECORD_HDR) != ((uint32_t)TLS_HS_CLIENT_HELLO << 24 | n))
		return TLS_ONE_OTHER;
	if (len - HDRS < n)
		return TLS_ONE_SHORT;
	*body = rd_make(buf + HDRS, n);
	return TLS_ONE_WHOLE;
}

/*
 * An SSLv2-format CLIENT-HELLO (RFC 6101 appendix E.2, the shape TLS servers still accept,
 * RFC 5246 appendix E.2): a 2-byte length with the top bit set, msg type 1, a version, the
 * cipher specs (3 bytes each), a session id of 0 or 16 bytes and a challenge of 16 to 32.
 * It has no extensions, so no server name: a valid one is SNI_ABSENT, never "not TLS".
 */
static enum sni_status
tls_hello_v2(const uint8_t *buf, size_t len, struct tls_hello *out)
{
	struct rd r = rd_make(buf, len), body;
	uint16_t hdr, specs, sid, challenge, version;
	uint8_t type;

	/* the type first: a prefix's status never changes as bytes come (not_tls, then) */
	if (!rd_u16(&r, &hdr) || r.len == 0)
		return SNI_NEED_MORE;
	if (r.p[0] != TLS_HS_CLIENT_HELLO)
		return SNI_NOT_TLS;
	if ((size_t)(hdr & 0x7fff) + 2 > TLS_HELLO_MAX)
		return SNI_MALFORMED;
	if (!rd_sub(&r, hdr & 0x7fff, &body))
		return SNI_NEED_MORE;
	if (!rd_u8(&body, &type) || !rd_u16(&body, &version) || !rd_u16(&body, &specs) ||
	    !rd_u16(&body, &sid) || !rd_u16(&body, &challenge) || version < 0x0002 ||
	    specs == 0 || specs % 3 != 0 || (sid != 0 && sid != 16) || challenge < 16 ||
	    challenge > 32 || body.len != (size_t)specs + sid + challenge)
		return SNI_MALFORMED;
	memset(out, 0, sizeof(*out));
	out->stream_len = len - r.len;
	return SNI_ABSENT;
}

/*
 * What a parse that found a hello sets first: alpn[] past nb_alpn is read by nobody, nor
 * sni but on SNI_FOUND, which sets it.
 */
static inline void
tls_hello_clear(struct tls_hello *out, size_t stream_len)
{
	out->sni_lower = false;
	out->nb_alpn = 0;
	out->alpn_more = false;
	out->ech = false;
	out->stream_len = stream_len;
}

enum sni_status
tls_hello_parse_general(const uint8_t *buf, size_t len, uint8_t *scratch, size_t scratch_len,
    struct tls_hello *out)
{
	struct rd msg;
	size_t stream_len;
	enum sni_status st;

	if (len > 0 && (buf[0] & 0x80))
		return tls_hello_v2(buf, len, out);
	if ((st = tls_hello_gather(buf, len, scratch, scratch_len, &msg, &stream_len)) !=
	    SNI_FOUND)
		return st;
	tls_hello_clear(out, stream_len);
	return tls_hello_body(msg, out);
}

/* tls_hello_parse(), and with ids false tls_hello_parse_sni() (the general path is whole) */
static inline __attribute__((always_inline)) enum sni_status
tls_hello_parse_as(const uint8_t *buf, size_t len, uint8_t *scratch, size_t scratch_len,
    struct tls_hello *out, bool ids)
{
	struct rd body;
	enum tls_one one = tls_hello_one_record(buf, len, &body);

	if (one == TLS_ONE_SHORT)	/* a hello split over segments, its first one */
		return SNI_NEED_MORE;
	if (one != TLS_ONE_WHOLE)
		return tls_hello_parse_general(buf, len, scratch, scratch_len, out);
	if (ids)	/* tls_hello_parse_sni() sets none of these but the stream's length */
		tls_hello_clear(out, TLS_RECORD_HDR + TLS_HS_HDR + body.len);
	else
		out->stream_len = TLS_RECORD_HDR + TLS_HS_HDR + body.len;
	return tls_hello_fields(body, out, ids);
}

enum sni_status
tls_hello_parse(const uint8_t *buf, size_t len, uint8_t *scratch, size_t scratch_len,
    struct tls_hello *out)
{
	return tls_hello_parse_as(buf, len, scratch, scratch_len, out, true);
}

enum sni_status
tls_hello_parse_sni(const uint8_t *buf, size_t len, uint8_t *scratch, size_t scratch_len,
    struct tls_hello *out)
{
	return tls_hello_parse_as(buf, len, scratch, scratch_len, out, false);
}
