/*
 * Unit tests for sni/frame_csum.c and the DNS ID rewrite in frame_dns.c that rides on
 * it: the one's-complement helpers against fc_ref_sum() (frame_check.c, which shares no code
 * with frame_csum.c) and the RFC 1624 incremental update against full recomputation, including
 * the UDP "0 means none" rule and the odd offsets of DNS over TCP; and sequence number
 * modulation's shifts (frame_tcp_shift.c), SACK blocks at odd offsets too.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "sni/frame.h"
#include "frame_check.h"
#include "sni/dns.h"
#include "sni/pkt.h"

/* A fixed seed: a failure replays the same inputs. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(void)
{
	return fc_rnd(&rng);
}

/* ---- checksums ---- */

static void
test_csum_vectors(void **state)
{
	/* RFC 1071 s3 */
	static const uint8_t rfc1071[8] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	/* an IPv4 header whose checksum is 0xb861 */
	static const uint8_t ip[20] = { 0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0,
		0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7 };
	static const uint8_t odd[3] = { 0xab, 0xcd, 0xef };
	static const uint8_t ones[4] = { 0xff, 0xff, 0xff, 0xff };
	(void)state;

	assert_int_equal(frame_csum_add(0, rfc1071, 8), 0xddf2);
	assert_int_equal(frame_csum_fold(frame_csum_add(0, rfc1071, 8)), 0x220d);
	assert_int_equal(frame_csum_add(frame_csum_add(0, rfc1071, 4), rfc1071 + 4, 4), 0xddf2);
	assert_int_equal(frame_csum_fold(frame_csum_add(0, ip, 20)), 0xb861);
	assert_int_equal(frame_csum_add(0, odd, 3), 0xabcd + 0xef00 - 0xffff);
	assert_int_equal(frame_csum_add(0, odd, 0), 0);
	assert_int_equal(frame_csum_add(0, ones, 4), 0xffff);
	assert_int_equal(frame_csum_fold(0), 0xffff);
	assert_int_equal(frame_csum_fold(0xffff), 0);
	assert_int_equal(frame_csum_fold(0x1fffe), 0);
	assert_int_equal(frame_csum_fold(0xffffffff), 0);
	assert_int_equal(frame_csum_add(0xffff, ones, 2), 0xffff);
}

static void
test_csum_random(void **state)
{
	static uint8_t buf[1600];
	(void)state;

	for (unsigned int it = 0; it < 20000; it++) {
		size_t len = rnd() % sizeof(buf), cut = (rnd() % (len + 1)) & ~(size_t)1;
		uint32_t start = rnd() & 0xffff;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)(it % 7 == 0 ? 0xff : rnd());
		assert_int_equal(frame_csum_add(start, buf, len), fc_ref_sum(buf, len, start));
		assert_int_equal(frame_csum_add(frame_csum_add(start, buf, cut), buf + cut, len - cut),
		    fc_ref_sum(buf, len, start));
		assert_int_equal(frame_csum_fold(frame_csum_add(0, buf, len)),
		    (uint16_t)~fc_ref_sum(buf, len, 0));
	}
}

static void
test_csum_update16_rfc1624(void **state)
{
	(void)state;
	/* RFC 1624 s3: eqn 3 gives 0x0000 where RFC 1141's form gave 0xffff */
	assert_int_equal(frame_csum_update16(0xdd2f, 0x5555, 0x3285), 0x0000);
	assert_int_equal(frame_csum_update16(0x1234, 0xabcd, 0xabcd), 0x1234);
}

/*
 * Against full recomputation. The last word stays 0x0001 so the data is never all zero,
 * the one case where eqn 3 may give the other zero; old and new lean on 0, 0xffff and the
 * value that makes the new checksum 0.
 */
static void
test_csum_update16_random(void **state)
{
	uint8_t buf[128];
	unsigned int zero_results = 0, ffff_results = 0;
	(void)state;

	for (unsigned int it = 0; it < 300000; it++) {
		size_t words = 2 + rnd() % 63, w = rnd() % (words - 1);
		uint16_t old, new, full_old, full_new, rest;

		for (size_t i = 0; i < words - 1; i++) {
			uint16_t v = (uint16_t)rnd();

			if (it % 5 == 0)	/* runs of 0 and 0xffff words */
				v = rnd() & 1 ? 0xffff : 0;
			fc_w16(buf + 2 * i, v);
		}
		fc_w16(buf + 2 * (words - 1), 1);
		switch (rnd() % 8) {
		case 0:
			fc_w16(buf + 2 * w, 0);
			break;
		case 1:
			fc_w16(buf + 2 * w, 0xffff);
			break;
		default:
			break;
		}
		old = fc_r16(buf + 2 * w);
		full_old = (uint16_t)~fc_ref_sum(buf, 2 * words, 0);
		fc_w16(buf + 2 * w, 0);
		rest = fc_ref_sum(buf, 2 * words, 0);
		switch (rnd() % 6) {
		case 0:
			new = 0;
			break;
		case 1:
			new = 0xffff;
			break;
		case 2:
			new = (uint16_t)(0xffff - rest);	/* the sum becomes 0xffff */
			break;
		default:
			new = (uint16_t)rnd();
			break;
		}
		fc_w16(buf + 2 * w, new);
		full_new = (uint16_t)~fc_ref_sum(buf, 2 * words, 0);
		assert_int_equal(frame_csum_update16(full_old, old, new), full_new);
		zero_results += full_new == 0;
		ffff_results += full_new == 0xffff;
	}
	assert_true(zero_results > 1000);
	/* 0xffff needs a sum of 0, i.e. all-zero data, which the anchor rules out */
	assert_int_equal(ffff_results, 0);

	/* All-zero data: the two zeroes differ in bits and are equal in one's complement. */
	assert_int_equal(frame_csum_update16(0xfffe, 0x0001, 0x0000), 0x0000);
	assert_int_equal((uint16_t)~fc_ref_sum((const uint8_t *)"\0\0", 2, 0), 0xffff);
}

/* ---- DNS ID rewrite ---- */

/*
 * Every ID in turn on one datagram, the checksum compared with a recomputation each time;
 * set: by frame_dns_udp_set_id_port(), the dataplane's inline one, which returns no old ID
 * and sets a port with it, the source and the destination in turn, to values of all kinds.
 */
static void
check_rewrite_all(uint8_t family, bool set)
{
	uint8_t query[64];
	struct fc_frame f;
	size_t qlen = fc_dns_query(query, 0x1234, 0x0100, "www.example.com", DNS_TYPE_A, 1, true);
	uint8_t *ip, *udp;
	size_t l4_len;
	unsigned int mapped = 0;
	uint16_t prev = 0x1234;

	fc_frame_build(&f, &(struct fc_frame_spec){ .family = family, .tags = 1,
	    .proto = PKT_PROTO_UDP, .sport = 33333, .dport = 53, .payload = query,
	    .payload_len = qlen });
	ip = f.b + f.l2;
	udp = f.b + f.l4;
	l4_len = 8 + qlen;
	for (uint32_t k = 0; k <= 0xffff; k++) {
		uint16_t id = (uint16_t)(k * 40503u + 1), expect;
		uint8_t copy[FC_FRAME_MAX];

		if (set) {
			uint16_t port = (uint16_t)(k * 2654435761u >> 7);

			frame_dns_udp_set_id_port(udp + 8, id, udp + 2 * (k & 1), port);
			assert_int_equal(fc_r16(udp + 2 * (k & 1)), port);
		} else
			assert_int_equal(frame_dns_rewrite_id(udp, udp + 8, id), prev);
		prev = id;
		assert_int_equal(fc_r16(udp + 8), id);
		memcpy(copy, udp, l4_len);
		fc_w16(copy + 6, 0);
		expect = fc_ref_csum(copy, l4_len,
		    fc_ref_pseudo(ip, family, PKT_PROTO_UDP, l4_len));
		if (expect == 0) {
			expect = 0xffff;
			mapped++;
		}
		assert_int_equal(fc_r16(udp + 6), expect);
		assert_int_equal(fc_ref_sum(udp, l4_len,
		    fc_ref_pseudo(ip, family, PKT_PROTO_UDP, l4_len)), 0xffff);
	}
	assert_true(mapped >= 1);	/* the computed-0 case was met, and sent as 0xffff */
}

static void
test_dns_rewrite_id_udp(void **state)
{
	(void)state;
	check_rewrite_all(4, false);
	check_rewrite_all(6, false);
	check_rewrite_all(4, true);
	check_rewrite_all(6, true);
}

static void
test_dns_rewrite_id_udp_nocsum(void **state)
{
	uint8_t query[64];
	struct fc_frame f;
	size_t qlen = fc_dns_query(query, 0xaaaa, 0x0100, "example.com", DNS_TYPE_A, 1, false);
	uint8_t *udp;
	(void)state;

	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 53, .payload = query, .payload_len = qlen });
	udp = f.b + f.l4;
	fc_w16(udp + 6, 0);	/* RFC 768: none */
	for (unsigned int i = 0; i < 1000; i++) {
		uint16_t id = (uint16_t)rnd(), old = fc_r16(udp + 8);

		assert_int_equal(frame_dns_rewrite_id(udp, udp + 8, id), old);
		assert_int_equal(fc_r16(udp + 8), id);
		assert_int_equal(fc_r16(udp + 6), 0);
		frame_dns_udp_set_id_port(udp + 8, (uint16_t)~id, udp, id);
		assert_int_equal(fc_r16(udp + 8), (uint16_t)~id);
		assert_int_equal(fc_r16(udp), id);
		assert_int_equal(fc_r16(udp + 6), 0);
	}
}

/* DNS over TCP: the second message of a segment sits at an odd offset after a 13-byte one. */
static void
test_dns_rewrite_id_tcp(void **state)
{
	uint8_t seg[128];
	struct fc_frame f;
	size_t l1 = 13, l2;
	uint8_t *ip, *th, *m1, *m2;
	size_t l4_len;
	(void)state;

	memset(seg + 2, 0, l1);
	fc_w16(seg, (uint16_t)l1);
	l2 = fc_dns_query(seg + 4 + l1, 0x7777, 0x0100, "odd.example", DNS_TYPE_A, 1, false);
	fc_w16(seg + 2 + l1, (uint16_t)l2);
	for (uint8_t family = 4; family <= 6; family += 2) {
		fc_frame_build(&f, &(struct fc_frame_spec){ .family = family, .tags = 2,
		    .proto = PKT_PROTO_TCP, .sport = 1, .dport = 53, .flags = PKT_TCP_ACK,
		    .payload = seg, .payload_len = l1 + l2 + 4 });
		ip = f.b + f.l2;
		th = f.b + f.l4;
		m1 = th + 20 + 2;
		m2 = th + 20 + 4 + l1;
		l4_len = 20 + l1 + l2 + 4;
		assert_true(((m2 - th) & 1) == 1 && ((m1 - th) & 1) == 0);
		for (unsigned int i = 0; i < 20000; i++) {
			uint8_t *m = i & 1 ? m2 : m1;
			uint16_t id = (uint16_t)rnd();
			uint16_t old = fc_r16(m);

			if (i % 97 == 0)
				id = i & 2 ? 0 : 0xffff;
			assert_int_equal(frame_dns_rewrite_id_tcp(th, m, id), old);
			assert_int_equal(fc_r16(m), id);
			assert_int_equal(fc_ref_sum(th, l4_len,
			    fc_ref_pseudo(ip, family, PKT_PROTO_TCP, l4_len)), 0xffff);
		}
	}
}

/* ---- sequence number modulation (frame_tcp_shift.c) ---- */

#define T_PSEUDO	0x2b7e1516u	/* any pseudo-header's sum: both sides add the same */

/*
 * A TCP segment with options opts (olen bytes, a multiple of 4) and a few payload bytes,
 * its checksum set by the reference; its length.
 */
static size_t
t_tcp_seg(uint8_t *seg, const uint8_t *opts, size_t olen, uint32_t seq, uint32_t ack)
{
	size_t len = 20 + olen + 7;

	memset(seg, 0, len);
	fc_w16(seg, 53);
	fc_w16(seg + 2, 40000);
	fc_w32(seg + 4, seq);
	fc_w32(seg + 8, ack);
	seg[12] = (uint8_t)(((20 + olen) / 4) << 4);
	seg[13] = PKT_TCP_ACK;
	memcpy(seg + 20, opts, olen);
	memcpy(seg + 20 + olen, "payload", 7);
	fc_w16(seg + 16, fc_ref_csum(seg, len, T_PSEUDO));
	return len;
}

static void
t_csum_good(const uint8_t *seg, size_t len)
{
	assert_int_equal(fc_ref_sum(seg, len, T_PSEUDO), 0xffff);
}

static void
test_tcp_seq_add(void **state)
{
	uint8_t seg[64];
	(void)state;

	for (unsigned int i = 0; i < 20000; i++) {
		uint32_t seq = rnd(), ack = rnd(), delta = i % 101 == 0 ? (uint32_t)-seq : rnd();
		size_t len = t_tcp_seg(seg, NULL, 0, seq, ack);

		frame_tcp_seq_add(seg, delta);
		assert_int_equal(fc_r32(seg + 4), seq + delta);
		assert_int_equal(fc_r32(seg + 8), ack);	/* the other stream's, untouched */
		t_csum_good(seg, len);
	}
}

/*
 * The ACK and every SACK edge move, aligned (NOP NOP SACK) or at odd offsets (NOP SACK),
 * a timestamp option (another clock) does not; the checksum stays right.
 */
static void
test_tcp_ack_add_sack(void **state)
{
	static const uint8_t aligned[] = { 1, 1, 5, 18, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3,
		0, 0, 0, 4, 1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 9 };
	static const uint8_t odd[] = { 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2, 8, 10, 0, 0, 0, 9,
		0, 0, 0, 9, 0, 0, 0 };
	const struct { const uint8_t *o; size_t len; size_t edge[4]; unsigned int n;
		size_t ts; } cases[] = {
		{ aligned, sizeof(aligned), { 24, 28, 32, 36 }, 4, 44 },
		{ odd, sizeof(odd), { 23, 27 }, 2, 33 },
	};
	uint8_t seg[96];
	(void)state;

	for (unsigned int c = 0; c < 2; c++)
		for (unsigned int i = 0; i < 5000; i++) {
			uint32_t ack = rnd(), delta = rnd();
			size_t len = t_tcp_seg(seg, cases[c].o, cases[c].len, 7, ack);
			uint32_t edge[4];

			for (unsigned int e = 0; e < cases[c].n; e++) {
				fc_w32(seg + cases[c].edge[e], rnd());
				edge[e] = fc_r32(seg + cases[c].edge[e]);
			}
			fc_w16(seg + 16, 0);
			fc_w16(seg + 16, fc_ref_csum(seg, len, T_PSEUDO));
			frame_tcp_ack_add(seg, 20 + cases[c].len, delta);
			assert_int_equal(fc_r32(seg + 8), ack + delta);
			assert_int_equal(fc_r32(seg + 4), 7);
			for (unsigned int e = 0; e < cases[c].n; e++)
				assert_int_equal(fc_r32(seg + cases[c].edge[e]), edge[e] + delta);
			assert_int_equal(fc_r32(seg + cases[c].ts), 0x9);
			t_csum_good(seg, len);
		}
}

/* A SACK option longer than the header: nothing of it moves, nor past it; the ACK does. */
static void
test_tcp_ack_add_bad_option(void **state)
{
	static const uint8_t opts[] = { 1, 1, 5, 26, 0, 0, 0, 1, 0, 0, 0, 2 };
	uint8_t seg[64];
	size_t len = t_tcp_seg(seg, opts, sizeof(opts), 7, 100);
	(void)state;

	frame_tcp_ack_add(seg, 20 + sizeof(opts), 5);
	assert_int_equal(fc_r32(seg + 8), 105);
	assert_int_equal(fc_r32(seg + 24), 1);
	assert_int_equal(fc_r32(seg + 28), 2);
	t_csum_good(seg, len);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csum_vectors),
		cmocka_unit_test(test_csum_random),
		cmocka_unit_test(test_csum_update16_rfc1624),
		cmocka_unit_test(test_csum_update16_random),
		cmocka_unit_test(test_dns_rewrite_id_udp),
		cmocka_unit_test(test_dns_rewrite_id_udp_nocsum),
		cmocka_unit_test(test_dns_rewrite_id_tcp),
		cmocka_unit_test(test_tcp_seq_add),
		cmocka_unit_test(test_tcp_ack_add_sack),
		cmocka_unit_test(test_tcp_ack_add_bad_option),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
