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

#define TLS_EXT_SERVER_NAME	0x0000
#define TLS_EXT_ALPN		0x0010
#define TLS_EXT_ECH		0xfe0d
#define TLS_NAME_HOST		0

#define TLS_EXT_RARE		8	/* types past 63 kept in a list before the set */

/*
 * Extension types past 63 seen in one hello (those below, nearly all a client sends, are
 * bits of a word the walk keeps). The few others (GREASE, renegotiation_info, ECH) go in a
 * short list; past TLS_EXT_RARE of them, in a 2^16-bit set whose 64-bit words are cleared
 * only when first touched (live says which), so that a hello stuffed with thousands of
 * extensions still costs O(1) per extension, and the common one clears nothing of it.
 */
struct tls_ext_seen {
	unsigned int nrare;		/* in rare[], or TLS_EXT_RARE + 1: the set is in use */
	uint16_t rare[TLS_EXT_RARE];
	uint64_t live[1024 / 64];
	uint64_t word[65536 / 64];
};

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
 * server_name extension_data (RFC 6066 s3):
 *
 *   u16 list_len | u8 name_type (0 = host_name) | u16 len | host_name
 *
 * Exactly one entry: RFC 6066 forbids two of one type and defines no other type, and a
 * filter that picks "the first" can disagree with the server about which name counts.
 * One trailing dot is accepted and left out of out->sni, which aliases the message.
 */
static bool
tls_ext_sni(struct rd ext, const uint8_t *floor, struct tls_hello *out)
{
	struct rd list, host;
	uint8_t type;
	bool upper;

	if (!rd_vec16(&ext, &list) || ext.len != 0 || !rd_u8(&list, &type) ||
	    type != TLS_NAME_HOST || !rd_vec16(&list, &host) || list.len != 0 ||
	    !sni_host_scan(floor, host.p, host.len, &upper))
		return false;
	if (host.p[host.len - 1] == '.')
		host.len--;
	out->sni = (struct sni_name){ .p = host.p, .len = host.len };
	out->sni_lower = !upper;
	return true;
}

/*
 * application_layer_protocol_negotiation extension_data (RFC 7301 s3.1):
 *
 *   u16 list_len (>= 2) | { u8 len (>= 1) | protocol_name }+
 *
 * The first TLS_ALPN_MAX ids are kept in the client's order; out->alpn[] aliases the message.
 */
static bool
tls_ext_alpn(struct rd ext, struct tls_hello *out)
{
	struct rd list, id;

	if (!rd_vec16(&ext, &list) || ext.len != 0 || list.len == 0)
		return false;
	while (list.len > 0) {
		if (!rd_vec8(&list, &id) || id.len == 0)
			return false;
		if (out->nb_alpn == TLS_ALPN_MAX) {
			out->alpn_more = true;
			continue;
		}
		out->alpn[out->nb_alpn++] = (struct sni_name){ .p = id.p, .len = id.len };
	}
	return true;
}

/* The data of the extension at ext, whose length the walk has checked. */
static inline struct rd
tls_ext_data(const uint8_t *ext)
{
	return rd_make(ext + 4, rd_be16(ext + 2));
}

/* Into the set; false when type was already in it. */
static bool
tls_ext_set_add(struct tls_ext_seen *seen, uint16_t type)
{
	unsigned int w = type >> 6;
	uint64_t bit = UINT64_C(1) << (type & 63);

	if ((seen->live[w >> 6] >> (w & 63) & 1) == 0) {
		seen->live[w >> 6] |= UINT64_C(1) << (w & 63);
		seen->word[w] = 0;
	}
	if (seen->word[w] & bit)
		return false;
	seen->word[w] |= bit;
	return true;
}

/* A type past 63 with the list full: false when it is in the list, else the set from now on. */
static __attribute__((noinline)) bool
tls_ext_rare_spill(struct tls_ext_seen *seen, uint16_t type)
{
	for (unsigned int i = 0; i < TLS_EXT_RARE; i++)
		if (seen->rare[i] == type)
			return false;
	memset(seen->live, 0, sizeof(seen->live));
	seen->nrare = TLS_EXT_RARE + 1;
	for (unsigned int i = 0; i < TLS_EXT_RARE; i++)
		tls_ext_set_add(seen, seen->rare[i]);
	return tls_ext_set_add(seen, type);
}

/*
 * A type past 63; false when it was seen already. *bits: bit type % 64 of each type in
 * the short list, so that a type whose bit is clear is new without a scan (GREASE,
 * renegotiation_info and ECH take different bits); a shared bit only costs the scan.
 */
static inline bool
tls_ext_rare_add(struct tls_ext_seen *seen, uint64_t *bits, uint16_t type)
{
	uint64_t bit = UINT64_C(1) << (type & 63);
	unsigned int n = seen->nrare, i = 0;

	if (n < TLS_EXT_RARE && (*bits & bit) == 0) {
		*bits |= bit;
		seen->rare[n] = type;
		seen->nrare = n + 1;
		return true;
	}
	*bits |= bit;
	if (n >= TLS_EXT_RARE)
		return n > TLS_EXT_RARE ? tls_ext_set_add(seen, type) :
		    tls_ext_rare_spill(seen, type);
	/* put in place first: the scan then needs no bound, it stops there at the latest */
	seen->rare[n] = type;
	while (seen->rare[i] != type)
		i++;
	seen->nrare = n + (i == n);
	return i == n;
}

/*
 * extensions (RFC 8446 s4.2), filling their vector exactly:
 *
 *   { u16 extension_type | u16 len | extension_data (len) }*
 *
 * No type may appear twice (s4.2): two server_name or ALPN copies would let a filter and a
 * server judge different values, and no client sends duplicates. ECH (draft-ietf-tls-esni
 * s5) is only flagged: the outer hello's SNI is what gets judged.
 */
static enum sni_status
tls_hello_exts(struct rd exts, const uint8_t *floor, struct tls_hello *out)
{
	const uint8_t *p = exts.p;
	size_t left = exts.len;
	struct tls_ext_seen seen;
	uint64_t low = 0;	/* the types below 64 seen: a register, not seen's memory */
	uint64_t rare_bits = 0;	/* tls_ext_rare_add()'s filter of the short list */
	const uint8_t *at[64];	/* where each of them starts (read for those seen only) */

	seen.nrare = 0;
	/* an extension's type and length, four bytes, checked once by the loop's test */
	while (left >= 4) {
		uint32_t hdr = rd_be32(p);	/* one load: the type, then the length */
		uint16_t type = (uint16_t)(hdr >> 16);
		size_t n = hdr & 0xffff;

		left -= 4;
		if (n > left)
			return SNI_MALFORMED;
		left -= n;
		if (type >= 64) {
			if (!tls_ext_rare_add(&seen, &rare_bits, type))
				return SNI_MALFORMED;
			if (type == TLS_EXT_ECH)
				out->ech = true;
		} else {
			if (low >> type & 1)
				return SNI_MALFORMED;
			low ^= UINT64_C(1) << type;	/* the bit was clear */
			at[type] = p;
		}
		p += 4 + n;
	}
	if (left != 0)		/* less than a type and a length at the end */
		return SNI_MALFORMED;
	/*
	 * The two read, once the walk is done: every way to fail is SNI_MALFORMED, so the order
	 * of the checks does not matter, and the loop keeps no test for them.
	 */
	if ((low >> TLS_EXT_ALPN & 1) && !tls_ext_alpn(tls_ext_data(at[TLS_EXT_ALPN]), out))
		return SNI_MALFORMED;
	if ((low >> TLS_EXT_SERVER_NAME & 1) == 0)
		return SNI_ABSENT;
	if (!tls_ext_sni(tls_ext_data(at[TLS_EXT_SERVER_NAME]), floor, out))
		return SNI_MALFORMED;
	return SNI_FOUND;
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
static enum sni_status
tls_hello_fields(struct rd body, const uint8_t *floor, struct tls_hello *out)
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
	if (len <= at || p[at] == 0 || len - at - 1 < p[at])
		return SNI_MALFORMED;
	at += 1 + (size_t)p[at];		/* past the compression methods */
	if (len == at)
		return SNI_ABSENT;
	if (len - at < 2 || len - at - 2 != rd_be16(p + at))
		return SNI_MALFORMED;
	return tls_hello_exts(rd_make(p + at + 2, len - at - 2), floor, out);
}

/* The message m, its header checked; floor: its first byte, where host names load from. */
static enum sni_status
tls_hello_body(struct rd m, struct tls_hello *out)
{
	const uint8_t *floor = m.p;
	struct rd body;
	uint8_t type;

	if (!rd_u8(&m, &type) || type != TLS_HS_CLIENT_HELLO || !rd_vec24(&m, &body) ||
	    m.len != 0)
		return SNI_MALFORMED;
	return tls_hello_fields(body, floor, out);
}

/*
 * The common stream: one record whose fragment is the whole hello, all of it arrived. Told
 * from the two headers at once, it is what tls_hello_gather() and tls_hello_body()'s
 * header checks find of it: a handshake record of 4 + n bytes (so not empty, and within
 * 2^14 with its header), a ClientHello of n, nothing after it in the record. Any other
 * stream goes their way. *body: the hello after its header.
 */
static inline bool
tls_hello_one_record(const uint8_t *buf, size_t len, struct rd *body)
{
	uint32_t rec_len, hs;

	if (len < TLS_RECORD_HDR + TLS_HS_HDR)
		return false;
	rec_len = rd_be16(buf + 3);
	hs = rd_be32(buf + TLS_RECORD_HDR);	/* the message's type and length */
	if (buf[0] != TLS_CT_HANDSHAKE || buf[1] != TLS_VERSION_MAJOR ||
	    hs >> 24 != TLS_HS_CLIENT_HELLO || rec_len != TLS_HS_HDR + (hs & 0xffffff) ||
	    TLS_RECORD_HDR + rec_len > TLS_HELLO_MAX || len - TLS_RECORD_HDR < rec_len)
		return false;
	*body = rd_make(buf + TLS_RECORD_HDR + TLS_HS_HDR, rec_len - TLS_HS_HDR);
	return true;
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

/* What a parse that found a hello sets first: alpn[] past nb_alpn is read by nobody. */
static inline void
tls_hello_clear(struct tls_hello *out, size_t stream_len)
{
	out->sni = (struct sni_name){ NULL, 0 };
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

enum sni_status
tls_hello_parse(const uint8_t *buf, size_t len, uint8_t *scratch, size_t scratch_len,
    struct tls_hello *out)
{
	struct rd body;

	if (!tls_hello_one_record(buf, len, &body))
		return tls_hello_parse_general(buf, len, scratch, scratch_len, out);
	tls_hello_clear(out, TLS_RECORD_HDR + TLS_HS_HDR + body.len);
	return tls_hello_fields(body, buf + TLS_RECORD_HDR, out);
}
