/*
 * dp_quic: the Initials of the build's mix.pcap (tests/traffic) judged against the names
 * the generator put in them, which tests/diff checks against tshark's reading, and
 * Initials sealed here (quic_fixture.c) with the module's own key derivation for what a
 * capture does not show: hellos split and shuffled in CRYPTO frames, coalesced packets,
 * Retry, a version change, HelloRetryRequest, datagrams that are not Initials. The RFC
 * vectors and the sealer's own check are in test_dp_quic_crypto.c, malformed frames and
 * sizes in test_dp_quic_bad.c.
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

#include <openssl/crypto.h>

#include "dp_quic.h"
#include "quic_fixture.h"
#include "tls_fixture.h"

#ifndef DP_QUIC_TRAFFIC		/* the build's generated captures: tests/meson.build */
#error "DP_QUIC_TRAFFIC: the directory of mix.pcap"
#endif

/* libcrypto's allocations, counted from main() on (CRYPTO_set_mem_functions). */
static unsigned long crypto_allocs;

static void *
count_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	crypto_allocs++;
	return malloc(n);
}

static void *
count_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	crypto_allocs++;
	return realloc(p, n);
}

static void
count_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	free(p);
}

/* The fixed captured vectors of quic_fixture.c: one Initial, and one hello over two datagrams. */
static void
test_real(void **state)
{
	static uint8_t a[1250], b[1250], c[1250];

	(void)state;
	assert_int_equal(qf_unhex(qf_real_initial_hex, a, sizeof(a)), 1250);
	assert_int_equal(qf_unhex(qf_pair1_hex, b, sizeof(b)), 1250);
	assert_int_equal(qf_unhex(qf_pair2_hex, c, sizeof(c)), 1250);
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, a, sizeof(a)), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "ledgerbolt.com");
	tf_assert_name(qf_fl.out.alpn[0], "h3");

	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, b, sizeof(b)), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed(&qf_fl, c, sizeof(c)), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "registry.yarnpkg.com");
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, c, sizeof(c)), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed(&qf_fl, b, sizeof(b)), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "registry.yarnpkg.com");
	/* Another flow's datagram: other keys, and bytes that disagree with the stream. */
	assert_int_equal(qf_feed(&qf_fl, a, sizeof(a)), DP_QUIC_MALFORMED);
}

/*
 * Opening packets under known keys allocates nothing. Deriving a flow's keys does, inside
 * libcrypto (OpenSSL 3.0 makes a new digest context per HMAC key): once per flow, or per
 * new DCID or version.
 */
static void
test_no_alloc_per_packet(void **state)
{
	static uint8_t b[1250], c[1250];
	unsigned long n;

	(void)state;
	qf_unhex(qf_pair1_hex, b, sizeof(b));
	qf_unhex(qf_pair2_hex, c, sizeof(c));
	qf_flow_init(&qf_fl);
	n = crypto_allocs;
	assert_int_equal(qf_feed(&qf_fl, b, sizeof(b)), DP_QUIC_NEED_MORE);
	print_message("key derivation: %lu libcrypto allocations\n", crypto_allocs - n);
	n = crypto_allocs;
	assert_int_equal(qf_feed(&qf_fl, c, sizeof(c)), DP_QUIC_FOUND);
	assert_int_equal(qf_feed(&qf_fl, b, sizeof(b)), DP_QUIC_FOUND);
	assert_int_equal(qf_feed(&qf_fl, c, sizeof(c)), DP_QUIC_FOUND);
	assert_int_equal(crypto_allocs - n, 0);
}

/* Every truncation of a real Initial and of the RFC one: never a hello, never a crash. */
static void
test_truncations(void **state)
{
	static uint8_t a[1250];
	const char *const hex[2] = { qf_real_initial_hex, qf_rfc9001_a2_hex };

	(void)state;
	for (int i = 0; i < 2; i++) {
		size_t n = qf_unhex(hex[i], a, sizeof(a));

		for (size_t k = 0; k < n; k++) {
			enum dp_quic_status st;

			qf_flow_init(&qf_fl);
			st = qf_feed(&qf_fl, a, k);
			assert_true(k == 0 ? st == DP_QUIC_NOT_INITIAL : st == DP_QUIC_MALFORMED);
		}
	}
}

/* A post-quantum hello cut in two CRYPTO frames, each in its own datagram, given backwards. */
static void
test_split_out_of_order(void **state)
{
	static struct tf_hello th;
	struct qf_seal s0 = { .pn = 0 }, s1 = { .pn = 1 };
	size_t cut;

	(void)state;
	qf_hello_make(&th, "files.pythonhosted.org", 1184);
	assert_true(th.m.n > 1200);
	cut = 1000;
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s1, cut, th.m.b + cut, th.m.n - cut),
	    DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, cut), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "files.pythonhosted.org");

	/* The first part alone, then the rest in three pieces, the header last. */
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s1, 600, th.m.b + 600, th.m.n - 600),
	    DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 2, th.m.b + 2, 598), DP_QUIC_NEED_MORE);
	s0.pn = 2;
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, 2), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "files.pythonhosted.org");
}

/*
 * One packet with the hello in seven CRYPTO frames, shuffled, between PING, ACK and
 * PADDING frames, as Chrome's chaos protection sends it.
 */
static void
test_shuffled_frames(void **state)
{
	static struct tf_hello th;
	static struct tf_msg fr;
	static uint8_t pkt[2048];
	static const size_t order[] = { 4, 0, 6, 2, 5, 1, 3 };
	struct qf_seal s = { .pn = 0 };
	size_t piece;

	(void)state;
	qf_hello_make(&th, "chaos.example", 0);
	piece = th.m.n / 7 + 1;
	fr.n = 0;
	for (size_t i = 0; i < 7; i++) {
		size_t off = order[i] * piece, n = off + piece > th.m.n ? th.m.n - off : piece;

		tf_hex(&fr, i % 2 ? "01" : "0000000000");	/* PING or PADDING */
		qf_crypto_frame(&fr, off, th.m.b + off, n);
	}
	tf_hex(&fr, "02 05 00 01 01 00 00");	/* ACK 5 and 4, gap, 2 */
	tf_hex(&fr, "03 03 00 00 00 01 02 03");	/* ACK_ECN 3 with its counts */
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, pkt, qf_seal(&s, &fr, pkt)), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "chaos.example");
}

/*
 * Coalesced packets (RFC 9000 s12.2): Initial, 0-RTT, Initial, then zeroes, which read as
 * a short header and end the walk.
 */
static void
test_coalesced(void **state)
{
	static struct tf_hello th;
	static struct tf_msg fr;
	static uint8_t d[1400];
	struct qf_seal s0 = { .pn = 0, .scid = "5c1d5c1d" }, s1 = { .pn = 1, .scid = "5c1d5c1d" };
	size_t n = 0, half;

	(void)state;
	qf_hello_make(&th, "coalesced.example.org", 0);
	half = th.m.n / 2;
	fr.n = 0;
	qf_crypto_frame(&fr, half, th.m.b + half, th.m.n - half);
	n += qf_seal_pad(&s1, fr.b, fr.n, 0, d + n);
	/* 0-RTT: long header type 1, DCID, SCID, Length 30, 30 opaque bytes */
	memcpy(d + n, "\xd1\x00\x00\x00\x01\x08\x83\x94\xc8\xf0\x3e\x51\x57\x08\x00\x1e", 16);
	n += 16;
	memset(d + n, 0x77, 30);
	n += 30;
	fr.n = 0;
	qf_crypto_frame(&fr, 0, th.m.b, half);
	n += qf_seal_pad(&s0, fr.b, fr.n, 0, d + n);
	assert_true(n < QF_DGRAM);
	memset(d + n, 0, QF_DGRAM - n);
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, d, QF_DGRAM), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "coalesced.example.org");
}

/*
 * After the verdict the state still guards the flow: a new Initial under a new DCID (a new
 * connection to the server) must carry the judged hello.
 */
static void
test_new_connection_after_verdict(void **state)
{
	static struct tf_hello th, evil;
	struct qf_seal s = { .pn = 0 }, other = { .dcid = "0102030405060708090a", .pn = 0 };

	(void)state;
	qf_hello_make(&th, "good.example.com", 0);
	qf_hello_make(&evil, "evil.example.net", 0);
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s, 0, th.m.b, th.m.n), DP_QUIC_FOUND);
	assert_int_equal(qf_feed_crypto(&qf_fl, &other, 0, th.m.b, th.m.n), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "good.example.com");
	other.pn = 1;
	assert_int_equal(qf_feed_crypto(&qf_fl, &other, 0, evil.m.b, evil.m.n), DP_QUIC_MALFORMED);
}

/* Which keys: the server's DCID with the original keys, Retry, compatible version change. */
static void
test_key_candidates(void **state)
{
	static struct tf_hello th, evil;
	struct qf_seal s0 = { .pn = 0 };
	struct qf_seal moved = { .dcid = "aabbccddeeff0011", .key_dcid = QF_RFC_DCID, .pn = 1 };
	struct qf_seal retry = { .dcid = "1122334455667788", .pn = 1 };
	struct qf_seal v2 = { .version = QUIC_V2, .dcid = "aabbccddeeff0011",
	    .key_dcid = QF_RFC_DCID, .pn = 1 };
	struct qf_seal wrong = { .dcid = "aabbccddeeff0011", .key_dcid = "0000000000000000",
	    .pn = 1 };
	size_t cut;

	(void)state;
	qf_hello_make(&th, "keys.example", 0);
	qf_hello_make(&evil, "evil.example", 0);
	cut = th.m.n / 2;

	qf_flow_init(&qf_fl);		/* RFC 9000 s7.2: the client now uses the server's CID */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, cut), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed_crypto(&qf_fl, &moved, cut, th.m.b + cut, th.m.n - cut),
	    DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "keys.example");

	qf_flow_init(&qf_fl);		/* Retry: new DCID, new keys, the whole hello again */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, cut), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed_crypto(&qf_fl, &retry, 0, th.m.b, th.m.n), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "keys.example");
	qf_flow_init(&qf_fl);		/* ... but not another hello */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, cut), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed_crypto(&qf_fl, &retry, 0, evil.m.b, evil.m.n), DP_QUIC_MALFORMED);

	qf_flow_init(&qf_fl);		/* RFC 9368: v2 keys from the original DCID */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, cut), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed_crypto(&qf_fl, &v2, cut, th.m.b + cut, th.m.n - cut),
	    DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "keys.example");

	qf_flow_init(&qf_fl);		/* keys from neither DCID */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, th.m.b, cut), DP_QUIC_NEED_MORE);
	assert_int_equal(qf_feed_crypto(&qf_fl, &wrong, cut, th.m.b + cut, th.m.n - cut),
	    DP_QUIC_MALFORMED);
}

/* A second ClientHello after HelloRetryRequest (RFC 8446 s4.1.4) must name the same host. */
static void
test_hello_retry(void **state)
{
	static struct tf_hello ch1, ch2, other;
	struct qf_seal s0 = { .pn = 0 }, s1 = { .pn = 1 }, s2 = { .pn = 2 };
	size_t n1;

	(void)state;
	qf_hello_make(&ch1, "retry.example", 0);
	qf_hello_make(&ch2, "retry.example", 1184);	/* the share the server asked for */
	qf_hello_make(&other, "other.example", 1184);
	n1 = ch1.m.n;

	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, ch1.m.b, n1), DP_QUIC_FOUND);
	/* CH2 at stream offset n1, its two halves backwards */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s2, n1 + 700, ch2.m.b + 700, ch2.m.n - 700),
	    DP_QUIC_FOUND);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s1, n1, ch2.m.b, 700), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "retry.example");
	s2.pn = 3;		/* nothing may follow the second hello */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s2, n1 + ch2.m.n, ch2.m.b, 1), DP_QUIC_MALFORMED);

	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, ch1.m.b, n1), DP_QUIC_FOUND);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s1, n1, other.m.b, other.m.n), DP_QUIC_MALFORMED);

	qf_flow_init(&qf_fl);		/* something else than a hello after the first */
	assert_int_equal(qf_feed_crypto(&qf_fl, &s0, 0, ch1.m.b, n1), DP_QUIC_FOUND);
	assert_int_equal(qf_feed_crypto(&qf_fl, &s1, n1, (const uint8_t *)"\x14\x00\x00\x20", 4),
	    DP_QUIC_MALFORMED);
}

/* Datagrams without an Initial leave the state as it was. */
static void
test_not_initial(void **state)
{
	static uint8_t d[QF_DGRAM], rfc[1200];
	static const char *const heads[] = {
		"40",					/* short header */
		"d100000001 08" QF_RFC_DCID "00 1e",	/* 0-RTT, Length 30 */
		"e100000001 08" QF_RFC_DCID "00 1e",	/* Handshake */
		"f000000001 08" QF_RFC_DCID "00",		/* Retry */
		"c01a2a3a4a 08" QF_RFC_DCID "00",		/* a greased version */
		"8000000000 08" QF_RFC_DCID "00",		/* Version Negotiation */
		"c3ff00001b 08" QF_RFC_DCID "00",		/* draft-27 */
		"836b3343cf 08" QF_RFC_DCID "00",		/* no fixed bit */
	};

	(void)state;
	qf_unhex(qf_rfc9001_a2_hex, rfc, sizeof(rfc));
	qf_flow_init(&qf_fl);
	assert_int_equal(qf_feed(&qf_fl, d, 0), DP_QUIC_NOT_INITIAL);
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		static struct tf_msg m;

		m.n = 0;
		tf_hex(&m, heads[i]);
		memset(d, 0x33, sizeof(d));
		memcpy(d, m.b, m.n);
		if (qf_feed(&qf_fl, d, sizeof(d)) != DP_QUIC_NOT_INITIAL)
			fail_msg("%s", heads[i]);
	}
	assert_int_equal(qf_feed(&qf_fl, rfc, sizeof(rfc)), DP_QUIC_FOUND);
	qf_assert_sni(&qf_fl, "example.com");
	/* After the verdict, other packets are still nothing to judge. */
	memset(d, 0x40, sizeof(d));
	assert_int_equal(qf_feed(&qf_fl, d, sizeof(d)), DP_QUIC_NOT_INITIAL);
	/* A long header of a known version whose lengths do not fit is refused. */
	memcpy(d, "\xc0\x00\x00\x00\x01\x15", 6);	/* DCID of 21 bytes */
	assert_int_equal(qf_feed(&qf_fl, d, sizeof(d)), DP_QUIC_MALFORMED);
}

/* Per-flow state small enough for a pool; the strings. */
static void
test_misc(void **state)
{
	(void)state;
	print_message("sizeof(struct dp_quic_hello) = %zu, + a buffer of %d\n",
	    sizeof(struct dp_quic_hello), DP_QUIC_HELLO_BUF);
	assert_true(sizeof(struct dp_quic_hello) <= 256);
	assert_string_equal(dp_quic_status_str(DP_QUIC_NEED_MORE), "need_more");
	assert_string_equal(dp_quic_status_str(DP_QUIC_FOUND), "found");
	assert_string_equal(dp_quic_status_str(DP_QUIC_ABSENT), "absent");
	assert_string_equal(dp_quic_status_str(DP_QUIC_MALFORMED), "malformed");
	assert_string_equal(dp_quic_status_str(DP_QUIC_NOT_INITIAL), "not_initial");
	assert_string_equal(dp_quic_status_str((enum dp_quic_status)42), "unknown");
	dp_quic_ctx_free(NULL);
}

/*
 * mix.pcap's client Initials, from mix-quic.txt beside it: "frame name" lines in frame
 * order, name "-" where the hello goes on in the next datagram. The generator writes the
 * file with the capture; tests/diff checks it against tshark's reading of the capture.
 */
struct oracle_row {
	uint32_t frame;
	char sni[256];
};

static struct oracle_row oracle[4096];

/* Fails the test, in one line, when a file the build generates is not there. */
static FILE *
open_generated(const char *path, const char *mode)
{
	FILE *fp = fopen(path, mode);

	if (fp == NULL)
		fail_msg("%s: %s (tests/traffic/gen_traffic.py makes it when the tests are built)",
		    path, strerror(errno));
	return fp;
}

static size_t
oracle_load(void)
{
	char line[512], name[256];
	size_t n = 0;
	unsigned int frame;
	FILE *fp = open_generated(DP_QUIC_TRAFFIC "/mix-quic.txt", "r");

	while (fgets(line, sizeof(line), fp) != NULL) {
		if (line[0] == '#')
			continue;
		assert_int_equal(sscanf(line, "%u %255s", &frame, name), 2);
		assert_true(n < sizeof(oracle) / sizeof(oracle[0]));
		assert_true(n == 0 || frame > oracle[n - 1].frame);
		oracle[n].frame = frame;
		strcpy(oracle[n].sni, strcmp(name, "-") == 0 ? "" : name);
		n++;
	}
	fclose(fp);
	return n;
}

struct pcap_flow {
	uint8_t key[34];	/* source address, source port, destination address */
	struct qf_flow f;
};

/*
 * Replay every client datagram to UDP 443 of mix.pcap through one state per flow: each
 * Initial with a name in the oracle must give FOUND with that name, one without must give
 * NEED_MORE (the hello goes on), and everything else (Handshake, 1-RTT) NOT_INITIAL.
 */
static void
test_pcap(void **state)
{
	static struct pcap_flow flows[512];
	size_t nb_flows = 0, o = 0, found = 0, more = 0, other = 0, size, off = 24;
	size_t nb_oracle = oracle_load();
	uint8_t *file, key[34];
	uint32_t frame = 0;
	long sz;
	FILE *fp = open_generated(DP_QUIC_TRAFFIC "/mix.pcap", "rb");

	(void)state;
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	assert_true((sz = ftell(fp)) > 24);
	size = (size_t)sz;
	rewind(fp);
	assert_non_null(file = malloc(size));
	assert_int_equal(fread(file, 1, size, fp), size);
	fclose(fp);
	/* little-endian microsecond pcap of Ethernet frames */
	assert_true(memcmp(file, "\xd4\xc3\xb2\xa1", 4) == 0 && file[20] == 1);

	while (off + 16 <= size) {
		uint32_t incl = (uint32_t)file[off + 8] | (uint32_t)file[off + 9] << 8 |
		    (uint32_t)file[off + 10] << 16 | (uint32_t)file[off + 11] << 24;
		const uint8_t *d;
		struct pcap_flow *pf = NULL;
		enum dp_quic_status st, want;
		size_t len;

		assert_true(off + 16 + incl <= size);
		frame++;
		d = qf_udp443(file + off + 16, incl, key, &len);
		off += 16 + incl;
		if (d == NULL)
			continue;
		for (size_t i = 0; i < nb_flows && pf == NULL; i++) {
			if (memcmp(flows[i].key, key, sizeof(key)) == 0)
				pf = &flows[i];
		}
		if (pf == NULL) {
			assert_true(nb_flows < sizeof(flows) / sizeof(flows[0]));
			pf = &flows[nb_flows++];
			memcpy(pf->key, key, sizeof(key));
			qf_flow_init(&pf->f);
		}
		want = DP_QUIC_NOT_INITIAL;
		if (o < nb_oracle && oracle[o].frame == frame)
			want = oracle[o].sni[0] != '\0' ? DP_QUIC_FOUND : DP_QUIC_NEED_MORE;
		st = qf_feed(&pf->f, d, len);
		if (st != want)
			fail_msg("frame %u: %s, want %s", frame, dp_quic_status_str(st),
			    dp_quic_status_str(want));
		if (want == DP_QUIC_FOUND)
			qf_assert_sni(&pf->f, oracle[o].sni);
		if (want != DP_QUIC_NOT_INITIAL)
			o++;
		found += want == DP_QUIC_FOUND;
		more += want == DP_QUIC_NEED_MORE;
		other += want == DP_QUIC_NOT_INITIAL;
	}
	free(file);
	assert_int_equal(o, nb_oracle);
	print_message("mix.pcap: %zu flows, %zu hellos found (%zu over two datagrams), %zu "
	    "other datagrams\n", nb_flows, found, more, other);
	assert_true(found >= 20 && more >= 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real),
		cmocka_unit_test(test_no_alloc_per_packet),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_split_out_of_order),
		cmocka_unit_test(test_shuffled_frames),
		cmocka_unit_test(test_coalesced),
		cmocka_unit_test(test_new_connection_after_verdict),
		cmocka_unit_test(test_key_candidates),
		cmocka_unit_test(test_hello_retry),
		cmocka_unit_test(test_not_initial),
		cmocka_unit_test(test_misc),
		cmocka_unit_test(test_pcap),
	};

	if (!CRYPTO_set_mem_functions(count_malloc, count_realloc, count_free))
		return 1;
	return cmocka_run_group_tests(tests, qf_setup, qf_teardown);
}
