/*
 * QUIC Initial packet recogniser (RFC 9000 s17.2.2, RFC 9369 for version 2). It reads
 * only the unprotected long header: version, connection IDs, token and the length of the
 * protected rest. Decryption is the dataplane's business. No allocation.
 */
#ifndef SNI_QUIC_H
#define SNI_QUIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum quic_status {
	QUIC_INITIAL,		/* a v1, v2 or draft-29 Initial packet */
	QUIC_OTHER,		/* not an Initial of a version namegate reads (or a short header) */
	QUIC_MALFORMED,		/* a long header whose lengths do not fit the datagram */
};

#define QUIC_V1		0x00000001u
#define QUIC_V2		0x6b3343cfu
#define QUIC_DRAFT29	0xff00001du	/* still sent by some clients; v1's layout, its own salt */
#define QUIC_CID_MAX	20

/* Long-header packet types in version 1's numbering (RFC 9000 s17.2 table 5). */
enum quic_long_type {
	QUIC_LONG_INITIAL,
	QUIC_LONG_0RTT,
	QUIC_LONG_HANDSHAKE,
	QUIC_LONG_RETRY,
};

/* A version whose Initial packets namegate can open: v1, v2 and draft-29. */
static inline bool
quic_version_known(uint32_t version)
{
	return version == QUIC_V1 || version == QUIC_V2 || version == QUIC_DRAFT29;
}

/*
 * The type of a long header's first byte in version 1's numbering; version 2 permutes
 * the type bits (RFC 9369 s3.2), draft-29 has version 1's.
 */
static inline enum quic_long_type
quic_long_type(uint8_t first, uint32_t version)
{
	unsigned int type = first >> 4 & 0x3;

	return (enum quic_long_type)(version == QUIC_V2 ? (type + 3) & 0x3 : type);
}

struct quic_initial {
	uint32_t version;
	const uint8_t *dcid;	/* aliases buf */
	uint8_t dcid_len;
	const uint8_t *scid;	/* aliases buf */
	uint8_t scid_len;
	const uint8_t *token;	/* aliases buf */
	size_t token_len;
	size_t pn_offset;	/* offset of the (protected) packet number in buf */
	size_t payload_len;	/* the Length field: packet number and payload */
	size_t packet_len;	/* bytes of buf this packet takes; coalesced packets follow */
};

/*
 * Parse the first QUIC packet of a UDP datagram. QUIC_INITIAL fills *out; any other
 * status leaves it unspecified. The fixed bit must be set, connection IDs at most 20
 * bytes (RFC 9000 s17.2), and Length must fit within len.
 */
enum quic_status quic_initial_parse(const uint8_t *buf, size_t len, struct quic_initial *out);

/* "initial", "other", "malformed". */
const char *quic_status_str(enum quic_status st);

#endif
