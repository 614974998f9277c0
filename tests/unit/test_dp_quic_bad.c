/*
 * dp_quic: malformed Initials sealed with the module's own key derivation: forbidden and
 * broken frames, CRYPTO data that disagrees with itself, and sizes past the limits.
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

struct frame_case {
	const char *name;
	const char *hex;	/* frames after a CRYPTO frame holding the whole hello */
	enum dp_quic_status st;
	bool needs_hello;	/* bad only once the hello's length is known */
};

/* Only PADDING, PING, ACK and CRYPTO may appear in a client's Initial (RFC 9000 s12.4). */
static void
test_frames(void **state)
{
	static const struct frame_case cases[] = {
		{ "ping", "01 01", DP_QUIC_FOUND },
		{ "ack", "02 05 00 01 01 00 00", DP_QUIC_FOUND },
		{ "ack_ecn", "03 00 00 00 00 01 02 03", DP_QUIC_FOUND },
		{ "ack_range_to_0", "02 05 00 00 05", DP_QUIC_FOUND },
		{ "empty_crypto", "06 00 00", DP_QUIC_FOUND },
		{ "ack_first_range_below_0", "02 05 00 00 06", DP_QUIC_MALFORMED },
		{ "ack_gap_below_0", "02 05 00 01 01 05 00", DP_QUIC_MALFORMED },
		{ "ack_range_below_0", "02 05 00 01 00 00 04", DP_QUIC_MALFORMED },
		{ "reset_stream", "04 00 00 00", DP_QUIC_MALFORMED },
		{ "new_token", "07 01 aa", DP_QUIC_MALFORMED },
		{ "stream", "08 00 01 aa", DP_QUIC_MALFORMED },
		{ "max_data", "10 01", DP_QUIC_MALFORMED },
		{ "new_connection_id", "18 01 00 08 0102030405060708", DP_QUIC_MALFORMED },
		{ "connection_close", "1c 00 00 00", DP_QUIC_MALFORMED },
		{ "handshake_done", "1e", DP_QUIC_MALFORMED },
		{ "datagram", "30 aa", DP_QUIC_MALFORMED },
		{ "crypto_type_in_2_bytes", "4006 00 00", DP_QUIC_MALFORMED },
		{ "padding_type_in_2_bytes", "4000", DP_QUIC_MALFORMED },
		{ "crypto_longer_than_packet", "06 00 80004000", DP_QUIC_MALFORMED },
		{ "crypto_past_buffer", "06 80010000 01 aa", DP_QUIC_MALFORMED },
		{ "crypto_at_2^62-1", "06 ffffffffffffffff 01 aa", DP_QUIC_MALFORMED },
		{ "finished_after_hello", "06 40f1 01 14", DP_QUIC_MALFORMED, true },
	};
	static struct tf_msg fr;
	static uint8_t pkt[2048], crypto[245];
	struct qf_seal s = { .pn = 0 };

	(void)state;
	qf_unhex(qf_rfc_a2_crypto_hex, crypto, sizeof(crypto));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fr.n = 0;
		tf_raw(&fr, crypto, sizeof(crypto));
		tf_hex(&fr, cases[i].hex);
		qf_flow_init(&qf_fl);
		if (qf_feed(&qf_fl, pkt, qf_seal(&s, &fr, pkt)) != cases[i].st)
			fail_msg("%s: want %s", cases[i].name, dp_quic_status_str(cases[i].st));
		/* The bad frame alone, before any hello, is as bad. */
		fr.n = 0;
		tf_hex(&fr, cases[i].hex);
		qf_flow_init(&qf_fl);
		if (cases[i].st == DP_QUIC_MALFORMED && !cases[i].needs_hello &&
		    qf_feed(&qf_fl, pkt, qf_seal(&s, &fr, pkt)) != DP_QUIC_MALFORMED)
			fail_msg("%s alone", cases[i].name);
	}
}

/* CRYPTO data given twice must agree, in one packet or across packets. */
static void
test_overlap(void **state)
{
	static struct tf_hello th, evil;
	static struct tf_msg fr;
	static uint8_t pkt[2048];
	struct qf_seal s0 = { .pn = 0 }, s1 = { .pn = 1 };

	(void)state;
	qf_hello_make(&th, "good.example.com", 0);
	/* the same length, so every byte overlaps */
	qf_hello_make(&evil, "evil.example.com", 0);
	assert_true(th.m.n == evil.m.n && th.m.n > 150);

	qf_flow_init(&qf_fl);			/* identical overlap: a retransmission */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, 150), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s1, 100, th.m.b + 100, th.m.n - 100),
	    DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "good.example.com");

	qf_flow_init(&qf_fl);			/* the second copy names another host */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, 150), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s1, 0, evil.m.b, evil.m.n), DP_QUIC_MALFORMED);

	qf_flow_init(&qf_fl);			/* after the verdict */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, th.m.n), DP_QUIC_FOUND);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s1, 50, evil.m.b + 50, 100), DP_QUIC_MALFORMED);

	qf_flow_init(&qf_fl);			/* two frames of one packet disagree */
	fr.n = 0;
	qf_crypto_frame(&fr, 0, th.m.b, th.m.n);
	qf_crypto_frame(&fr, 0, evil.m.b, evil.m.n);
	assert_int_equal(qf_feed(&qf_fl, pkt, qf_seal(&s0, &fr, pkt)), DP_QUIC_MALFORMED);
}

/* Sizes: the hello's own length, the caller's buffer, the datagram. */
static void
test_limits(void **state)
{
	static struct tf_hello th;
	static uint8_t small[200], pkt[2048], crypto[245];
	static const uint8_t big[] = { 0x01, 0x00, 0x40, 0x00 };	/* 16384-byte body */
	static const uint8_t not_hello[] = { 0x02, 0x00, 0x00, 0x10 };	/* ServerHello */
	static struct tf_msg fr;
	struct dp_quic_hello h;
	struct tls_hello out;
	struct qf_seal s = { .pn = 0 };
	size_t n;

	(void)state;
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s, 0, big, sizeof(big)), DP_QUIC_MALFORMED);
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s, 0, not_hello, 1), DP_QUIC_MALFORMED);

	/* The largest hello the TCP path takes still fits: 5 + 4 + body = TLS_HELLO_MAX. */
	tf_hello_begin(&th);
	tf_ext_sni(&th.m, "big.example");
	tf_ext_common(&th.m);
	n = TLS_HELLO_MAX - 5 - th.m.n - 4;	/* padding (RFC 7685) up to the limit */
	tf_u16(&th.m, 0x0015);
	tf_u16(&th.m, (unsigned int)n);
	tf_fill(&th.m, 0, n);
	tf_hello_end(&th);
	assert_int_equal(th.m.n + 5, TLS_HELLO_MAX);
	qf_flow_init(&qf_fl);
	for (size_t off = 0; off < th.m.n; off += 1100) {
		s.pn = off / 1100;
		n = th.m.n - off < 1100 ? th.m.n - off : 1100;
		assert_int_equal(qf_feed_crypto(&qf_fl, &s, off, th.m.b + off, n),
		    off + n < th.m.n ? DP_QUIC_NEED_MORE : DP_QUIC_FOUND);
	}
	qf_assert_sni(&qf_fl, "big.example");

	/* A 200-byte buffer cannot hold the RFC hello (241 bytes). */
	qf_unhex(qf_rfc9001_a2_hex, pkt, 1200);
	dp_quic_hello_init(&h, small, sizeof(small));
	assert_int_equal(dp_quic_hello_feed(qf_ctx, &h, pkt, 1200, &out), DP_QUIC_MALFORMED);
	dp_quic_hello_init(&h, small, 3);
	assert_int_equal(dp_quic_hello_feed(qf_ctx, &h, pkt, 1200, &out), DP_QUIC_MALFORMED);

	/* RFC 9000 s14.1: a client's Initial datagram has at least 1200 bytes. */
	qf_unhex(qf_rfc_a2_crypto_hex, crypto, sizeof(crypto));
	fr.n = 0;
	tf_raw(&fr, crypto, sizeof(crypto));
	s.pn = 0;
	n = qf_seal_pad(&s, fr.b, fr.n, 0, pkt);
	n = qf_seal_pad(&s, fr.b, fr.n, 1199 - n, pkt);
	assert_int_equal(n, 1199);
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, pkt, n), DP_QUIC_MALFORMED);
	n = qf_seal_pad(&s, fr.b, fr.n, 1, pkt);	/* the packet is short, the datagram not */
	memset(pkt + n, 0, QF_DGRAM - n);
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, pkt, QF_DGRAM), DP_QUIC_FOUND);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, qf_setup, qf_teardown);
}
