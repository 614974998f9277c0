/*
 * QUIC Initial recogniser: the unprotected part of a long header (RFC 9000 s17.2, RFC 9369
 * for version 2; draft-ietf-quic-transport-29 is laid out as version 1). Nothing here
 * decrypts; the caller gets offsets to do so.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/quic.h"
#include "sni/rd.h"

#define QUIC_FORM_LONG		0x80
#define QUIC_FIXED_BIT		0x40

/*
 * Header protection samples 16 bytes starting 4 bytes past the packet number offset (RFC
 * 9001 s5.4.2), and a packet too short for that must be discarded: so Length, which runs
 * from the packet number, is at least 20.
 */
#define QUIC_HP_MIN_LEN		(4 + 16)

/* A connection ID: u8 len | len bytes, at most 20 in versions 1 and 2 (RFC 9000 s17.2). */
static bool
quic_cid(struct rd *r, const uint8_t **cid, uint8_t *cid_len)
{
	struct rd sub;

	if (!rd_vec8(r, &sub) || sub.len > QUIC_CID_MAX)
		return false;
	*cid = sub.p;
	*cid_len = (uint8_t)sub.len;
	return true;
}

/*
 * Long header (RFC 9000 s17.2), Initial (s17.2.2):
 *   u8 (form 1 | fixed 1 | type 2 | reserved 2 | pn_len 2) | u32 version |
 *   u8 dcid_len | dcid | u8 scid_len | scid |
 *   varint token_len | token | varint length | packet number + payload (length bytes)
 * The low four bits of the first byte are under header protection and mean nothing yet.
 * Version 0 is Version Negotiation, whose fixed bit is arbitrary; any version we do not
 * know may lay out the rest differently (RFC 8999), so both are QUIC_OTHER before a
 * byte past the version is read. A cleared fixed bit is QUIC_OTHER too: RFC 9000 s17.2
 * says to discard such packets, and the one exception, a client greasing it (RFC 9287
 * s3.1), is not something we can tell from garbage, so the caller must not let OTHER
 * open what an Initial would have to be judged for.
 */
enum quic_status
quic_initial_parse(const uint8_t *buf, size_t len, struct quic_initial *out)
{
	struct rd r = rd_make(buf, len), token;
	uint64_t token_len, length;
	uint32_t version;
	uint8_t first;

	if (!rd_u8(&r, &first) || (first & QUIC_FORM_LONG) == 0)
		return QUIC_OTHER;
	if (!rd_u32(&r, &version))
		return QUIC_MALFORMED;
	if (!quic_version_known(version))
		return QUIC_OTHER;
	if ((first & QUIC_FIXED_BIT) == 0)
		return QUIC_OTHER;
	if (!quic_cid(&r, &out->dcid, &out->dcid_len) ||
	    !quic_cid(&r, &out->scid, &out->scid_len))
		return QUIC_MALFORMED;
	if (quic_long_type(first, version) != QUIC_LONG_INITIAL)
		return QUIC_OTHER;

	/* Compared as 64-bit first: a varint can exceed SIZE_MAX on a 32-bit size_t. */
	if (!rd_varint(&r, &token_len) || token_len > r.len ||
	    !rd_sub(&r, (size_t)token_len, &token))
		return QUIC_MALFORMED;
	out->token = token.p;
	out->token_len = token.len;
	if (!rd_varint(&r, &length) || length > r.len || length < QUIC_HP_MIN_LEN)
		return QUIC_MALFORMED;

	out->version = version;
	out->pn_offset = (size_t)(r.p - buf);
	out->payload_len = (size_t)length;
	out->packet_len = out->pn_offset + out->payload_len;
	return QUIC_INITIAL;
}

const char *
quic_status_str(enum quic_status st)
{
	switch (st) {
	case QUIC_INITIAL:	return "initial";
	case QUIC_OTHER:	return "other";
	case QUIC_MALFORMED:	return "malformed";
	}
	return "unknown";
}
