/*
 * QUIC Initial packet recogniser (RFC 9000 s17.2.2, RFC 9369 for version 2). It reads
 * only the unprotected long header: version, connection IDs, token and the length of the
 * protected rest. Decryption is the dataplane's business. No allocation.
 */
#ifndef SNI_QUIC_H
#define SNI_QUIC_H

#include <stddef.h>
#include <stdint.h>

enum quic_status {
	QUIC_INITIAL,		/* a v1 or v2 Initial packet */
	QUIC_OTHER,		/* QUIC, but not an Initial of a version we know (or short header) */
	QUIC_MALFORMED,		/* a long header whose lengths do not fit the datagram */
};

#define QUIC_V1		0x00000001u
#define QUIC_V2		0x6b3343cfu
#define QUIC_CID_MAX	20

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
