/*
 * dp_quic_crypto: the Initial keys and packets of RFC 9001 and RFC 9369 appendix A, the
 * test's own sealer checked against them byte for byte, header protection and the AEAD
 * under corruption, what the RFCs forbid after decryption, and packet number decoding.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dp_quic.h"
#include "quic_fixture.h"
#include "tls_fixture.h"

struct key_vec {
	uint32_t version;
	const char *secret, *key, *iv, *hp;
};

/* RFC 9001 A.1, RFC 9369 A.1, draft-29 A.1: client keys from DCID 0x8394c8f03e515708. */
static void
test_keys(void **state)
{
	static const struct key_vec v[] = {
		{ QUIC_V1, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea",
		    "1f369613dd76d5467730efcbe3b1a22d", "fa044b2f42a3fd3b46fb255c",
		    "9f50449e04a0e810283a1e9933adedd2" },
		{ QUIC_V2, "14ec9d6eb9fd7af83bf5a668bc17a7e283766aade7ecd0891f70f9ff7f4bf47b",
		    "8b1a0bc121284290a29e0971b5cd045d", "91f73e2351d8fa91660e909f",
		    "45b95e15235d6f45a6b19cbcb0294ba9" },
		/* draft-ietf-quic-tls-29 A.1 (its key, iv and hp; the secret as derived) */
		{ QUIC_DRAFT29, "0088119288f1d866733ceeed15ff9d50902cf82952eee27e9d4d4918ea371d87",
		    "175257a31eb09dea9366d8bb79ad80ba", "6b26114b9cba2b63a9e8dd4f",
		    "9ddd12c994c0698b89374a9c077a3077" },
	};
	uint8_t dcid[8], secret[32], want[32];
	struct dp_quic_keys k;

	(void)state;
	qf_unhex(QF_RFC_DCID, dcid, sizeof(dcid));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(dp_quic_keys_derive(qf_ctx, v[i].version, dcid, 8, &k, secret), 0);
		assert_int_equal(k.version, v[i].version);
		assert_memory_equal(secret, want, qf_unhex(v[i].secret, want, sizeof(want)));
		assert_memory_equal(k.key, want, qf_unhex(v[i].key, want, sizeof(want)));
		assert_memory_equal(k.iv, want, qf_unhex(v[i].iv, want, sizeof(want)));
		assert_memory_equal(k.hp, want, qf_unhex(v[i].hp, want, sizeof(want)));
		assert_true(k.dcid_len == 8 && memcmp(k.dcid, dcid, 8) == 0);
	}
	assert_int_equal(dp_quic_keys_derive(qf_ctx, 0xff00001b, dcid, 8, &k, NULL), -EINVAL);
	assert_int_equal(dp_quic_keys_derive(qf_ctx, QUIC_V1, dcid, QUIC_CID_MAX + 1, &k, NULL),
	    -EINVAL);
	/* A zero-length DCID is not forbidden to derive from (the server refuses it). */
	assert_int_equal(dp_quic_keys_derive(qf_ctx, QUIC_V1, dcid, 0, &k, NULL), 0);
}

/* RFC 9001 A.2 and RFC 9369 A.2: open the client's Initial, then judge it as a flow. */
static void
test_rfc_packets(void **state)
{
	const char *const hex[2] = { qf_rfc9001_a2_hex, qf_rfc9369_a2_hex };
	const uint32_t version[2] = { QUIC_V1, QUIC_V2 };
	uint8_t pkt[1200], dcid[8], plain[1200], crypto[245];
	struct quic_initial q;
	struct dp_quic_keys k;
	size_t plain_len;
	uint64_t pn;

	(void)state;
	qf_unhex(QF_RFC_DCID, dcid, sizeof(dcid));
	qf_unhex(qf_rfc_a2_crypto_hex, crypto, sizeof(crypto));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(qf_unhex(hex[i], pkt, sizeof(pkt)), 1200);
		assert_int_equal(quic_initial_parse(pkt, sizeof(pkt), &q), QUIC_INITIAL);
		assert_int_equal(q.version, version[i]);
		assert_int_equal(dp_quic_keys_derive(qf_ctx, version[i], dcid, 8, &k, NULL), 0);
		assert_int_equal(dp_quic_packet_open(qf_ctx, &k, pkt, &q, 0, plain, &plain_len,
		    &pn), 0);
		/* pn 2, 4 bytes; the CRYPTO frame, then PADDING to 1162 bytes */
		assert_int_equal(pn, 2);
		assert_int_equal(plain_len, 1162);
		assert_memory_equal(plain, crypto, sizeof(crypto));
		for (size_t j = sizeof(crypto); j < plain_len; j++)
			assert_int_equal(plain[j], 0);

		qf_flow_init(&qf_fl);
		assert_int_equal(qf_feed(&qf_fl, pkt, sizeof(pkt)), DP_QUIC_FOUND);
		qf_assert_sni(&qf_fl, "example.com");
		assert_int_equal(qf_fl.out.nb_alpn, 1);
		tf_assert_name(qf_fl.out.alpn[0], "alpn");
		assert_false(qf_fl.out.ech);
		/* The same datagram again (a retransmission) changes nothing. */
		assert_int_equal(qf_feed(&qf_fl, pkt, sizeof(pkt)), DP_QUIC_FOUND);
		qf_assert_sni(&qf_fl, "example.com");
	}
}

/* The sealer the other tests rely on rebuilds both RFC packets exactly. */
static void
test_sealer_matches_rfc(void **state)
{
	const char *const hex[2] = { qf_rfc9001_a2_hex, qf_rfc9369_a2_hex };
	const uint32_t version[2] = { QUIC_V1, QUIC_V2 };
	uint8_t want[1200], got[1300], crypto[245];

	(void)state;
	qf_unhex(qf_rfc_a2_crypto_hex, crypto, sizeof(crypto));
	for (int i = 0; i < 2; i++) {
		struct qf_seal s = { .version = version[i], .pn = 2, .pn_len = 4 };

		qf_unhex(hex[i], want, sizeof(want));
		assert_int_equal(qf_seal_pad(&s, crypto, sizeof(crypto), 1162 - sizeof(crypto),
		    got), 1200);
		assert_memory_equal(got, want, 1200);
	}
}

/* Any byte of the packet the AEAD covers, or the protection around it, changed. */
static void
test_corrupt(void **state)
{
	static const size_t at[] = {
		1199,		/* the tag */
		600,		/* ciphertext */
		9,		/* a DCID byte: other keys */
		16,		/* the Length: the packet no longer fits */
		18,		/* the protected packet number */
		23,		/* inside the HP sample: another mask */
	};
	uint8_t pkt[1200], good[1200];

	(void)state;
	qf_unhex(qf_rfc9001_a2_hex, good, sizeof(good));
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		memcpy(pkt, good, sizeof(pkt));
		pkt[at[i]] ^= 0x01;
		qf_flow_init(&qf_fl);
		assert_int_equal(qf_feed(&qf_fl, pkt, sizeof(pkt)), DP_QUIC_MALFORMED);
		/* Final: the good packet cannot undo it. */
		assert_int_equal(qf_feed(&qf_fl, good, sizeof(good)), DP_QUIC_MALFORMED);
	}
	/* The first byte's protected bits: pn length 4 becomes 1..3, AAD and nonce change. */
	memcpy(pkt, good, sizeof(pkt));
	pkt[0] ^= 0x01;
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, pkt, sizeof(pkt)), DP_QUIC_MALFORMED);
}

/* What the RFCs forbid after decryption, and a hello without server_name. */
static void
test_packet_rules(void **state)
{
	static struct tf_hello th;
	static struct tf_msg fr;
	static uint8_t pkt[2048], plain[2048];
	struct qf_seal s = { .pn = 0, .reserved = 1 };
	struct quic_initial q;
	struct dp_quic_keys k;
	uint8_t dcid[8];
	size_t n, plain_len;
	uint64_t pn;

	(void)state;
	qf_hello_make(&th, "reserved.example", 0);
	fr.n = 0;
	qf_crypto_frame(&fr, 0, th.m.b, th.m.n);
	n = qf_seal(&s, &fr, pkt);
	qf_unhex(QF_RFC_DCID, dcid, sizeof(dcid));
	assert_int_equal(dp_quic_keys_derive(qf_ctx, QUIC_V1, dcid, 8, &k, NULL), 0);
	assert_int_equal(quic_initial_parse(pkt, n, &q), QUIC_INITIAL);
	assert_int_equal(dp_quic_packet_open(qf_ctx, &k, pkt, &q, 0, plain, &plain_len, &pn),
	    -EPROTO);
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, pkt, n), DP_QUIC_MALFORMED);

	/* No frames at all (RFC 9000 s12.4): pn 4 bytes, Length 20, then zeroes. */
	s = (struct qf_seal){ .pn = 0, .pn_len = 4 };
	n = qf_seal_pad(&s, (const uint8_t *)"", 0, 0, pkt);
	memset(pkt + n, 0, QF_DGRAM - n);
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, pkt, QF_DGRAM), DP_QUIC_MALFORMED);

	/* PADDING only: valid, nothing to judge yet. */
	fr.n = 0;
	tf_u8(&fr, 0);
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, pkt, qf_seal(&s, &fr, pkt)), DP_QUIC_NEED_MORE);

	qf_hello_make(&th, NULL, 0);
	s.pn = 1;
	assert_int_equal(qf_feed_crypto(&qf_fl, &s, 0, th.m.b, th.m.n), DP_QUIC_ABSENT);
	tf_assert_name(qf_fl.out.alpn[0], "h3");
}

/* Packet numbers are decoded against the largest seen (RFC 9000 A.3). */
static void
test_packet_numbers(void **state)
{
	static const struct {
		uint64_t pn, next;
		size_t pn_len;
	} cases[] = {
		{ 0xa82f9b32, 0xa82f30eb, 2 },	/* the example of RFC 9000 A.3 */
		{ 0x12345, 0x12340, 2 },
		{ 0x1ff, 0x1f0, 1 },
		{ 0x100, 0xff, 1 },		/* wraps forward */
		{ 0xff, 0x101, 1 },		/* and back */
		{ 0, 0, 4 },
	};
	static struct tf_msg fr;
	static uint8_t pkt[2048], plain[2048];
	struct quic_initial q;
	struct dp_quic_keys k;
	struct qf_seal a = { .pn = 1000, .pn_len = 2 }, b = { .pn = 1001, .pn_len = 1 };
	uint8_t dcid[8];
	size_t n, plain_len;
	uint64_t pn;

	(void)state;
	qf_unhex(QF_RFC_DCID, dcid, sizeof(dcid));
	assert_int_equal(dp_quic_keys_derive(qf_ctx, QUIC_V1, dcid, 8, &k, NULL), 0);
	fr.n = 0;
	tf_u8(&fr, 0x01);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct qf_seal s = { .pn = cases[i].pn, .pn_len = cases[i].pn_len };

		n = qf_seal(&s, &fr, pkt);
		assert_int_equal(quic_initial_parse(pkt, n, &q), QUIC_INITIAL);
		assert_int_equal(dp_quic_packet_open(qf_ctx, &k, pkt, &q, cases[i].next, plain,
		    &plain_len, &pn), 0);
		assert_int_equal(pn, cases[i].pn);
	}
	/* In a flow: pn 1000 in 2 bytes, then 1001 in 1 byte. */
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, pkt, qf_seal(&a, &fr, pkt)), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed(&qf_fl, pkt, qf_seal(&b, &fr, pkt)), DP_QUIC_NEED_MORE);
	/* 1001 read as 0x..e9 near 0: another nonce, so it would not open without A.3 */
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, pkt, qf_seal(&b, &fr, pkt)), DP_QUIC_MALFORMED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_rfc_packets),
		cmocka_unit_test(test_sealer_matches_rfc),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_packet_rules),
		cmocka_unit_test(test_packet_numbers),
	};

	return cmocka_run_group_tests(tests, qf_setup, qf_teardown);
}
