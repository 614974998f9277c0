/*
 * dp_quic_dgram_class: what in a client's datagram could open a QUIC connection, after a
 * flow's verdict and on ports other than 443. Sealed Initials of every version namegate
 * reads, keyed from their own DCID or another, with and without a hello from offset 0,
 * coalesced with other packets; and every long header namegate cannot read.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dp_quic.h"
#include "quic_fixture.h"
#include "tls_fixture.h"

static const uint32_t versions[] = { QUIC_V1, QUIC_V2, QUIC_DRAFT29 };

/* The class of d[0..n), read from an exact-size heap copy (ASan sees a read past it). */
static enum dp_quic_dgram
classify(const uint8_t *d, size_t n)
{
	uint8_t *copy = malloc(n > 0 ? n : 1);
	enum dp_quic_dgram c;

	assert_non_null(copy);
	memcpy(copy, d, n);
	c = dp_quic_dgram_class(qf_ctx, copy, n);
	free(copy);
	return c;
}

/* One sealed Initial of s carrying data at CRYPTO offset off, in a datagram of QF_DGRAM. */
static size_t
sealed(const struct qf_seal *s, size_t off, const uint8_t *data, size_t n, uint8_t *out)
{
	static struct tf_msg fr;

	fr.n = 0;
	if (n > 0)
		qf_crypto_frame(&fr, off, data, n);
	else
		tf_u8(&fr, 0x01);		/* PING: a probe without data */
	return qf_seal(s, &fr, out);
}

/* A hello from offset 0 under the packet's own DCID is one a new connection reads. */
static void
test_hello(void **state)
{
	static struct tf_hello th;
	static struct tf_msg fr;
	static uint8_t d[2048];

	(void)state;
	qf_hello_make(&th, "evil.example.net", 0);
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		struct qf_seal s = { .version = versions[i], .dcid = "0102030405060708090a" };
		size_t n = sealed(&s, 0, th.m.b, th.m.n, d);

		assert_int_equal(classify(d, n), DP_QUIC_DGRAM_HELLO);
		/* the first part of a hello is enough: the server would wait for the rest */
		n = sealed(&s, 0, th.m.b, 40, d);
		assert_int_equal(classify(d, n), DP_QUIC_DGRAM_HELLO);
		/* a server drops an Initial in a datagram under 1200 bytes: so does namegate */
		fr.n = 0;
		qf_crypto_frame(&fr, 0, th.m.b, th.m.n);
		n = qf_seal_pad(&s, fr.b, fr.n, 0, d);
		assert_true(n < DP_QUIC_DGRAM_MIN);
		assert_int_equal(classify(d, n), DP_QUIC_DGRAM_UNREADABLE);
	}
}

/*
 * What a connection's later Initials carry passes: keys from another DCID (after the
 * server chose its CID), CRYPTO past offset 0 (the rest of a hello, or the second after a
 * HelloRetryRequest), a probe without CRYPTO.
 */
static void
test_no_new_hello(void **state)
{
	static struct tf_hello th;
	static uint8_t d[2048];

	(void)state;
	qf_hello_make(&th, "evil.example.net", 0);
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		struct qf_seal other = { .version = versions[i], .dcid = "5e5e5e5e",
			.key_dcid = QF_RFC_DCID, .pn = 3 };
		struct qf_seal own = { .version = versions[i], .pn = 1 };

		assert_int_equal(classify(d, sealed(&other, 0, th.m.b, th.m.n, d)),
		    DP_QUIC_DGRAM_PASS);
		assert_int_equal(classify(d, sealed(&own, 100, th.m.b + 100, th.m.n - 100, d)),
		    DP_QUIC_DGRAM_PASS);
		assert_int_equal(classify(d, sealed(&own, 0, NULL, 0, d)), DP_QUIC_DGRAM_PASS);
	}
}

/* Coalesced packets (RFC 9000 s12.2): a hello in any Initial of the datagram is found. */
static void
test_coalesced(void **state)
{
	static struct tf_hello th;
	static struct tf_msg fr;
	static uint8_t d[4096];
	struct qf_seal ack = { .dcid = "5e5e5e5e", .key_dcid = QF_RFC_DCID, .pn = 2 };
	struct qf_seal own = { .dcid = "0102030405060708" };
	size_t n = 0;

	(void)state;
	qf_hello_make(&th, "evil.example.net", 0);
	fr.n = 0;
	tf_hex(&fr, "02 02 00 00 02");			/* ACK of packets 0 to 2 */
	n += qf_seal_pad(&ack, fr.b, fr.n, 0, d + n);
	/* Handshake: long header type 2, DCID, SCID, Length 30, 30 opaque bytes */
	memcpy(d + n, "\xe1\x00\x00\x00\x01\x04\x5e\x5e\x5e\x5e\x00\x1e", 12);
	memset(d + n + 12, 0x77, 30);
	n += 42;
	assert_int_equal(classify(d, n), DP_QUIC_DGRAM_UNREADABLE);	/* under 1200 */
	memset(d + n, 0, QF_DGRAM);
	assert_int_equal(classify(d, QF_DGRAM), DP_QUIC_DGRAM_PASS);	/* then padding */
	fr.n = 0;
	qf_crypto_frame(&fr, 0, th.m.b, th.m.n);
	n += qf_seal_pad(&own, fr.b, fr.n, 0, d + n);
	assert_int_equal(classify(d, n < QF_DGRAM ? QF_DGRAM : n), DP_QUIC_DGRAM_HELLO);
	/* after a short header nothing more is read: it runs to the datagram's end */
	memmove(d + 1, d, n);
	d[0] = 0x40;
	assert_int_equal(classify(d, n + 1 < QF_DGRAM ? QF_DGRAM : n + 1), DP_QUIC_DGRAM_PASS);
}

/* Long headers namegate cannot read are not passed; what cannot open a connection is. */
static void
test_unreadable(void **state)
{
	static const struct { const char *hex; enum dp_quic_dgram want; } cases[] = {
		{ "c0ff00001b 08" QF_RFC_DCID "00 00 4100", DP_QUIC_DGRAM_UNREADABLE }, /* d-27 */
		{ "c01a2a3a4a 08" QF_RFC_DCID "00", DP_QUIC_DGRAM_UNREADABLE },	/* greased */
		{ "8000000000 08" QF_RFC_DCID "00", DP_QUIC_DGRAM_UNREADABLE },	/* VN */
		{ "8000000001 08" QF_RFC_DCID "00 00 4100", DP_QUIC_DGRAM_UNREADABLE }, /* bit */
		{ "c000000001 15", DP_QUIC_DGRAM_UNREADABLE },		/* DCID of 21 */
		{ "c000000001 08" QF_RFC_DCID "00 00 44b0", DP_QUIC_DGRAM_UNREADABLE }, /* long */
		{ "e000000001 08" QF_RFC_DCID "00 44b0", DP_QUIC_DGRAM_UNREADABLE },
		{ "c00000", DP_QUIC_DGRAM_UNREADABLE },			/* no whole version */
		{ "f000000001 08" QF_RFC_DCID "00", DP_QUIC_DGRAM_PASS },	/* Retry */
		{ "e000000001 08" QF_RFC_DCID "00 4100", DP_QUIC_DGRAM_PASS }, /* Handshake */
		{ "d000000001 08" QF_RFC_DCID "00 4100", DP_QUIC_DGRAM_PASS }, /* 0-RTT */
		{ "c0ff00001d 08" QF_RFC_DCID "00 00 4100", DP_QUIC_DGRAM_PASS }, /* not sealed */
		{ "40", DP_QUIC_DGRAM_PASS },					/* short */
	};
	static uint8_t d[QF_DGRAM];

	(void)state;
	assert_int_equal(classify(d, 0), DP_QUIC_DGRAM_PASS);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static struct tf_msg m;
		size_t n;

		m.n = 0;
		tf_hex(&m, cases[i].hex);
		memset(d, 0x33, sizeof(d));
		memcpy(d, m.b, m.n);
		n = m.n < 5 ? m.n : sizeof(d);
		if (classify(d, n) != cases[i].want)
			fail_msg("%s", cases[i].hex);
	}
}

/* An Initial that authenticates but breaks what RFC 9000 asks of it is not read. */
static void
test_sealed_but_wrong(void **state)
{
	static struct tf_msg fr;
	static uint8_t d[2048];
	struct qf_seal reserved = { .reserved = 1 }, plain = { .pn = 0 };

	(void)state;
	fr.n = 0;
	tf_u8(&fr, 0x01);
	assert_int_equal(classify(d, qf_seal(&reserved, &fr, d)), DP_QUIC_DGRAM_UNREADABLE);
	fr.n = 0;
	tf_hex(&fr, "1c 00 00 00");				/* CONNECTION_CLOSE */
	assert_int_equal(classify(d, qf_seal(&plain, &fr, d)), DP_QUIC_DGRAM_UNREADABLE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_no_new_hello),
		cmocka_unit_test(test_coalesced),
		cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_sealed_but_wrong),
	};

	return cmocka_run_group_tests(tests, qf_setup, qf_teardown);
}
