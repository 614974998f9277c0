/*
 * dp_quic: the ClientHello of a QUIC client, for `quic: inspect` (SPEC s4.6). libc, OpenSSL
 * libcrypto and sni/ only: no DPDK, no logging. Opening a packet under known keys allocates
 * nothing; deriving a flow's keys (its first Initial, a new DCID or version) makes libcrypto
 * 3.0 allocate and free about 25 small blocks, as it re-creates a digest context per HMAC
 * key. The unit test counts both.
 *
 * A client's Initial packets are protected with keys anyone can derive from the Destination
 * Connection ID of its first Initial (RFC 9001 s5.2, RFC 9369 s3.3 for version 2). This
 * module derives them, removes header protection (s5.4), decrypts (AES-128-GCM, s5.3),
 * walks the frames (only PADDING, PING, ACK and CRYPTO are taken), reassembles the CRYPTO
 * stream by offset into the caller's buffer, and hands the ClientHello to tls_hello_parse()
 * behind a synthetic 5-byte record header, so QUIC and TCP hellos are judged by one parser.
 *
 * Two objects:
 *   struct dp_quic_ctx    per worker (lcore), opaque: the libcrypto contexts and a plaintext
 *                         buffer for the largest UDP datagram, ~64 KiB, allocated once. The
 *                         EVP contexts are re-keyed per packet, never re-allocated.
 *   struct dp_quic_hello  per flow, caller-owned, plain data (208 bytes on x86-64,
 *                         checked <= 256 by the unit test), so it can live in a flow pool;
 *                         it works over a buffer the caller lends it (DP_QUIC_HELLO_BUF
 *                         bytes, for as long as the flow's Initials are checked).
 *
 * Why the state keeps checking: a server opens a new connection for any Initial whose DCID
 * it does not know, and discards an Initial it cannot use (one in a datagram under 1200
 * bytes, say). A VM could get one hello judged and have the server act on another. While
 * a flow's Initials are held, the CRYPTO stream is the defence: any later Initial, under
 * whatever DCID or version, must carry the same bytes at the same offsets. After the
 * verdict the dataplane keeps no state: dp_quic_dgram_class() finds in each datagram what
 * a server would take for a new connection's hello, and that is judged from a fresh state.
 */
#ifndef DP_QUIC_H
#define DP_QUIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/quic.h"
#include "sni/reasm.h"
#include "sni/tls.h"

#define DP_QUIC_KEY_LEN		16	/* AEAD_AES_128_GCM (RFC 9001 s5.3) */
#define DP_QUIC_IV_LEN		12
#define DP_QUIC_HP_LEN		16
#define DP_QUIC_TAG_LEN		16
#define DP_QUIC_DGRAM_MIN	1200	/* RFC 9000 s14.1: Initial datagrams from a client */
#define DP_QUIC_DGRAM_MAX	65527	/* largest UDP payload (RFC 9000 s18.2 max_udp_payload) */
#define DP_QUIC_HELLO_BUF	TLS_HELLO_MAX	/* what the TCP path takes: 5-byte header + hello */

enum dp_quic_status {
	DP_QUIC_NEED_MORE,	/* Initials so far are valid; the ClientHello is not whole yet */
	DP_QUIC_FOUND,		/* a whole, valid ClientHello with one valid host_name */
	DP_QUIC_ABSENT,		/* a whole, valid ClientHello without server_name */
	DP_QUIC_MALFORMED,	/* bad crypto, frames, hello, conflict or too big; sticky */
	DP_QUIC_NOT_INITIAL,	/* no v1/v2 Initial in this datagram; the state is unchanged */
};

/* Initial packet protection for one (version, DCID): public values, not secrets. */
struct dp_quic_keys {
	uint32_t version;
	uint8_t dcid_len;
	uint8_t dcid[QUIC_CID_MAX];
	uint8_t key[DP_QUIC_KEY_LEN];
	uint8_t iv[DP_QUIC_IV_LEN];
	uint8_t hp[DP_QUIC_HP_LEN];
};

struct dp_quic_ctx;

/*
 * One client flow. Fields are private to dp_quic.c; the struct is public only so the
 * caller can embed it. buf is the caller's: buf[0..5) becomes the record header and the
 * CRYPTO stream starts at buf + 5 (the reassembler's buffer).
 */
struct dp_quic_hello {
	struct reasm crypto;		/* CRYPTO stream offsets 0 .. buf_len - 5 */
	uint8_t *buf;
	uint32_t hello_len;		/* first ClientHello, 4-byte header included; 0: unknown */
	uint32_t hello2_len;		/* the one after HelloRetryRequest; 0: unknown */
	uint64_t next_pn;		/* largest packet number opened + 1 (RFC 9000 A.3) */
	struct dp_quic_keys keys;	/* the last keys that opened a packet */
	bool have_keys;
	uint8_t odcid_len;		/* DCID of the first Initial that opened */
	uint8_t odcid[QUIC_CID_MAX];
	uint8_t status;			/* enum dp_quic_status, never NOT_INITIAL */
};

/*
 * A worker's crypto context. NULL with errno (ENOMEM, or EIO when libcrypto lacks
 * HMAC-SHA256, AES-128-GCM or AES-128-ECB) on failure. Not thread-safe: one per worker.
 */
struct dp_quic_ctx *dp_quic_ctx_new(void);
void dp_quic_ctx_free(struct dp_quic_ctx *ctx);

/*
 * Client Initial keys for version (QUIC_V1, QUIC_V2 or QUIC_DRAFT29) and a DCID of at most
 * QUIC_CID_MAX bytes: HKDF-Extract with the version's salt, then "client in" and "quic key"/
 * "quic iv"/"quic hp" ("quicv2 ..." for v2). Returns 0, -EINVAL for another version or a
 * long DCID, or -EIO when libcrypto fails. client_secret, when not NULL, receives the 32-byte
 * client_initial_secret (for test vectors).
 */
int dp_quic_keys_derive(struct dp_quic_ctx *ctx, uint32_t version, const uint8_t *dcid,
    size_t dcid_len, struct dp_quic_keys *out, uint8_t *client_secret);

/*
 * Open the Initial packet q that quic_initial_parse() found at pkt (pkt[0..q->packet_len)):
 * remove header protection, reconstruct the packet number from next_pn (largest seen + 1,
 * 0 before any), and decrypt into plain (q->payload_len bytes are always enough). pkt is
 * not modified. Returns 0 with *plain_len and *pn, -EBADMSG when the packet does not
 * authenticate under k, -EPROTO when it does but its reserved bits are set (RFC 9000
 * s17.2), -EIO when libcrypto fails.
 */
int dp_quic_packet_open(struct dp_quic_ctx *ctx, const struct dp_quic_keys *k,
    const uint8_t *pkt, const struct quic_initial *q, uint64_t next_pn, uint8_t *plain,
    size_t *plain_len, uint64_t *pn);

/* dp_quic.c's view of the worker's plaintext buffer (DP_QUIC_DGRAM_MAX bytes). */
uint8_t *dp_quic_ctx_plain(struct dp_quic_ctx *ctx);

/* Start a flow over the caller's buf (buf_len bytes, DP_QUIC_HELLO_BUF recommended). */
void dp_quic_hello_init(struct dp_quic_hello *h, uint8_t *buf, size_t buf_len);

/*
 * Feed one UDP payload the client sent. Every Initial coalesced in it is opened and its
 * frames taken; other long-header packets are skipped by their Length, and parsing stops at
 * anything else, as a server's would (RFC 9000 s12.2). A datagram with an Initial must have
 * at least DP_QUIC_DGRAM_MIN bytes.
 *
 * Returns NEED_MORE until the ClientHello is whole, then FOUND or ABSENT with *out filled
 * (its pointers alias buf; stream_len means nothing here). Later datagrams are still
 * checked against the held stream: consistent ones return FOUND or ABSENT again, with *out
 * filled again; a second ClientHello (after HelloRetryRequest, RFC 8446 s4.1.4) must carry
 * the same server_name. MALFORMED is final: every later call returns it. NOT_INITIAL
 * (nothing to judge: a short header, 0-RTT, Handshake, an unknown version) changes nothing.
 * *out is unspecified unless FOUND or ABSENT.
 */
enum dp_quic_status dp_quic_hello_feed(struct dp_quic_ctx *ctx, struct dp_quic_hello *h,
    const uint8_t *dgram, size_t len, struct tls_hello *out);

/* What a client's datagram may do to a server, whatever its flow had judged. */
enum dp_quic_dgram {
	DP_QUIC_DGRAM_PASS,		/* nothing in it can open a connection */
	DP_QUIC_DGRAM_HELLO,		/* an Initial a server would open a connection for */
	DP_QUIC_DGRAM_UNREADABLE,	/* a long header namegate cannot read: not passed */
};

/*
 * Walk a client's UDP payload, every coalesced packet, for what could open a QUIC
 * connection: an Initial of a version namegate reads that authenticates under the keys of
 * its own DCID with CRYPTO data from offset 0 (a server that does not know the DCID reads
 * a hello from it) is HELLO, to be judged whole by dp_quic_hello_feed. A long header of
 * another version, with the fixed bit cleared, or that does not parse, is UNREADABLE.
 * Short headers, 0-RTT, Handshake, Retry and Initials of a connection keyed from another
 * DCID are PASS. Deriving keys per Initial allocates in libcrypto, as a flow's first does.
 */
enum dp_quic_dgram dp_quic_dgram_class(struct dp_quic_ctx *ctx, const uint8_t *dgram,
    size_t len);

/* "need_more", "found", "absent", "malformed", "not_initial". */
const char *dp_quic_status_str(enum dp_quic_status st);

#endif
