/*
 * Fixtures shared by the dp_quic tests (test_dp_quic.c, test_dp_quic_crypto.c,
 * test_dp_quic_bad.c): the RFC 9001 / RFC 9369 vectors as hex (the real Initials are in
 * quic_vectors.h, which comes with this header), one client flow, an Initial sealer built
 * on the module's own key derivation, ClientHello and CRYPTO frame builders, and the UDP
 * payload of a captured Ethernet frame. Every function fails the running cmocka test on
 * misuse or a wrong answer, so call them only from inside a test (qf_setup and qf_teardown
 * are the group fixtures that make qf_ctx).
 */
#ifndef QUIC_FIXTURE_H
#define QUIC_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "dp_quic.h"
#include "quic_vectors.h"
#include "tls_fixture.h"

#define QF_RFC_DCID	"8394c8f03e515708"
#define QF_DGRAM	1200

/* RFC 9001 A.2 and RFC 9369 A.2: the client's Initial, protected; then its CRYPTO frame. */
extern const char qf_rfc9001_a2_hex[];
extern const char qf_rfc9369_a2_hex[];
extern const char qf_rfc_a2_crypto_hex[];

/* The context qf_setup() makes for the group. */
extern struct dp_quic_ctx *qf_ctx;

/* One client flow with the buffer the dataplane would lend it. */
struct qf_flow {
	struct dp_quic_hello h;
	uint8_t buf[DP_QUIC_HELLO_BUF];
	struct tls_hello out;
};

/* The flow most tests use. */
extern struct qf_flow qf_fl;

/* How to seal one Initial; zero fields take the defaults noted. */
struct qf_seal {
	uint32_t version;		/* 0: QUIC_V1 */
	const char *dcid;		/* hex; NULL: QF_RFC_DCID */
	const char *key_dcid;		/* hex DCID the keys come from; NULL: dcid */
	uint32_t key_version;		/* 0: version */
	const char *scid;		/* hex; NULL: empty */
	uint64_t pn;
	size_t pn_len;			/* 0: 2 */
	uint8_t reserved;		/* the two reserved bits */
};

int qf_setup(void **state);
int qf_teardown(void **state);

void qf_flow_init(struct qf_flow *f);

/* Feed an exact-size heap copy, so valgrind and ASan see a read past the datagram. */
enum dp_quic_status qf_feed(struct qf_flow *f, const uint8_t *d, size_t n);

/* The flow's SNI is want, and lives in the flow's buffer. */
void qf_assert_sni(const struct qf_flow *f, const char *want);

/* A QUIC varint in its shortest form (RFC 9000 s16); a CRYPTO frame of n bytes at off. */
void qf_put_varint(struct tf_msg *m, uint64_t v);
void qf_crypto_frame(struct tf_msg *m, size_t off, const uint8_t *data, size_t n);

/*
 * Protect one Initial whose payload is frames (n bytes) and pad zero bytes (PADDING) into
 * out, as a client does (RFC 9001 s5.3-5.4). Returns its length.
 */
size_t qf_seal_pad(const struct qf_seal *s, const uint8_t *frames, size_t n, size_t pad,
    uint8_t *out);

/* One Initial filling a datagram of QF_DGRAM bytes (more if the frames need it). */
size_t qf_seal(const struct qf_seal *s, const struct tf_msg *frames, uint8_t *out);

/* A TLS 1.3 ClientHello (no record header) for host, NULL for none, pq key-share bytes. */
void qf_hello_make(struct tf_hello *th, const char *host, size_t pq);

/* Seal and feed one Initial with one CRYPTO frame: data (n bytes) at stream offset off. */
enum dp_quic_status qf_feed_crypto(struct qf_flow *f, const struct qf_seal *s, size_t off,
    const uint8_t *data, size_t n);

/*
 * The UDP payload (*len bytes) of a client datagram to port 443 in an Ethernet frame, or
 * NULL; key gets source address, source port and destination address.
 */
const uint8_t *qf_udp443(const uint8_t *p, size_t n, uint8_t key[34], size_t *len);

#endif
