/*
 * libFuzzer target for quic_initial_parse. The input is one UDP datagram; the Initials
 * coalesced in it (RFC 9000 s12.2) are walked one after the other. Each accepted packet is
 * checked against the bytes it came from, parsed again (same result), cut to packet_len
 * (same) and one byte shorter (malformed). Any violation aborts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sni/quic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)

static bool
inside(const uint8_t *p, size_t n, const uint8_t *data, size_t size)
{
	return p >= data && n <= size && (size_t)(p - data) <= size - n;
}

static bool
same(const struct quic_initial *a, const struct quic_initial *b)
{
	return a->version == b->version && a->dcid == b->dcid && a->dcid_len == b->dcid_len &&
	    a->scid == b->scid && a->scid_len == b->scid_len && a->token == b->token &&
	    a->token_len == b->token_len && a->pn_offset == b->pn_offset &&
	    a->payload_len == b->payload_len && a->packet_len == b->packet_len;
}

static void
check(const uint8_t *data, size_t size, const struct quic_initial *q)
{
	uint32_t version;

	CHECK(size >= 7 && (data[0] & 0xc0) == 0xc0);
	version = (uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 |
	    data[4];
	CHECK(q->version == version && (version == QUIC_V1 || version == QUIC_V2 ||
	    version == QUIC_DRAFT29));
	CHECK((data[0] >> 4 & 3) == (version == QUIC_V2 ? 1 : 0));
	/* The layout, recomputed from the bytes. */
	CHECK(q->dcid_len == data[5] && q->dcid == data + 6 && q->dcid_len <= QUIC_CID_MAX);
	CHECK(q->scid_len == data[6 + q->dcid_len] && q->scid == q->dcid + q->dcid_len + 1);
	CHECK(q->scid_len <= QUIC_CID_MAX);
	CHECK(inside(q->dcid, q->dcid_len, data, size) && inside(q->scid, q->scid_len, data, size));
	CHECK(q->token > q->scid + q->scid_len && q->token <= q->scid + q->scid_len + 8);
	CHECK(inside(q->token, q->token_len, data, size));
	CHECK(q->pn_offset > (size_t)(q->token - data) + q->token_len);
	CHECK(q->pn_offset <= (size_t)(q->token - data) + q->token_len + 8);
	CHECK(q->payload_len >= 20 && q->pn_offset + q->payload_len == q->packet_len);
	CHECK(q->packet_len <= size);
}

static void
one(const uint8_t *data, size_t size)
{
	struct quic_initial a, b;
	enum quic_status st = quic_initial_parse(data, size, &a);

	CHECK(st == QUIC_INITIAL || st == QUIC_OTHER || st == QUIC_MALFORMED);
	CHECK(quic_status_str(st) != NULL);
	if (size == 0 || (data[0] & 0x80) == 0)
		CHECK(st == QUIC_OTHER);
	if (st != QUIC_INITIAL)
		return;
	check(data, size, &a);
	CHECK(quic_initial_parse(data, size, &b) == QUIC_INITIAL && same(&a, &b));
	CHECK(quic_initial_parse(data, a.packet_len, &b) == QUIC_INITIAL && same(&a, &b));
	CHECK(quic_initial_parse(data, a.packet_len - 1, &b) == QUIC_MALFORMED);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct quic_initial q;
	size_t off = 0;

	/* Coalesced packets: each Initial hands over to whatever follows it. */
	do {
		one(data + off, size - off);
		if (quic_initial_parse(data + off, size - off, &q) != QUIC_INITIAL)
			break;
		CHECK(q.packet_len > 0 && q.packet_len <= size - off);
		off += q.packet_len;
	} while (off < size);
	return 0;
}
