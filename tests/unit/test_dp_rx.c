/*
 * dp_rx.h's checksum verdicts on whole IPv4/IPv6 TCP and UDP packets with right and wrong
 * checksums, UDP's "no checksum" included (the sums themselves: test_csum.c), and its
 * checks for the common shape held to the general ones (the lean path's TCP sum too).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sni/frame.h"
#include "frame_int.h"
#include "dp_rx.h"

/* dp_rx.h calls dp_drop; the sums under test never do */
void
dp_drop(struct dp_worker *w, struct rte_mbuf *m, enum dp_drop d)
{
	(void)w;
	(void)m;
	(void)d;
	fail();
}

/* A frame in an mbuf-shaped wrapper, just enough for dp_rx_l4_csum_ok. */
static bool
l4_ok(uint8_t *frame, size_t len)
{
	struct rte_mbuf m;
	struct pkt p;

	memset(&m, 0, sizeof(m));
	m.buf_addr = frame;
	m.data_off = 0;
	m.data_len = (uint16_t)len;
	m.pkt_len = (uint32_t)len;
	assert_int_equal(pkt_decode(frame, len, &p), PKT_OK);
	return dp_rx_l4_csum_ok(&m, &p);
}

static size_t
build(uint8_t *f, int family, uint8_t proto, size_t payload)
{
	static const uint8_t eth4[14] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00 };
	static const uint8_t eth6[14] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd };
	size_t l3 = family == 4 ? 20 : 40, l4 = proto == 6 ? 20 : 8, n = 14 + l3 + l4 + payload;
	uint8_t *ip = f + 14, *th = ip + l3;

	memset(f, 0, n);
	memcpy(f, family == 4 ? eth4 : eth6, 14);
	if (family == 4) {
		ip[0] = 0x45;
		wr16(ip + 2, (uint16_t)(l3 + l4 + payload));
		ip[8] = 64;
		ip[9] = proto;
		memcpy(ip + 12, "\x0a\x4d\x00\x0b\xcb\x00\x71\x0a", 8);
	} else {
		ip[0] = 0x60;
		wr16(ip + 4, (uint16_t)(l4 + payload));
		ip[6] = proto;
		ip[7] = 64;
		ip[8] = 0xfd;
		ip[23] = 0x11;
		ip[24] = 0x20;
		ip[39] = 0x10;
	}
	wr16(th, 40000);
	wr16(th + 2, 443);
	if (proto == 6)
		th[12] = 5 << 4;
	else
		wr16(th + 4, (uint16_t)(l4 + payload));
	for (size_t i = 0; i < payload; i++)
		th[l4 + i] = (uint8_t)(i * 7 + 3);
	wr16(th + (proto == 6 ? 16 : 6), frame_l4_csum(ip, (uint8_t)family, proto, th,
	    l4 + payload));
	return n;
}

static void
test_l4_checksums(void **state)
{
	uint8_t f[1600];

	(void)state;
	for (int family = 4; family <= 6; family += 2)
		for (uint8_t proto = 6; proto <= 17; proto += 11)
			for (size_t payload = 0; payload < 1400; payload += 97) {
				size_t n = build(f, family, proto, payload);
				size_t sum = 14 + (family == 4 ? 20 : 40) + (proto == 6 ? 16 : 6);

				assert_true(l4_ok(f, n));
				f[n - 1] ^= payload ? 0x40 : 0;		/* a payload byte */
				f[sum] ^= payload ? 0 : 0x40;		/* or the sum itself */
				assert_false(l4_ok(f, n));
			}
	/* UDP without a checksum: allowed over IPv4 only (RFC 768, RFC 8200 s8.1) */
	build(f, 4, 17, 10);
	f[14 + 20 + 6] = f[14 + 20 + 7] = 0;
	assert_true(l4_ok(f, 14 + 20 + 8 + 10));
	build(f, 6, 17, 10);
	f[14 + 40 + 6] = f[14 + 40 + 7] = 0;
	assert_false(l4_ok(f, 14 + 40 + 8 + 10));
}

/*
 * dp_rx_decode's checks for a frame of the straight-through decoder's shape say what
 * dp_rx_csums_ok says, whatever the port's offload flags
 */
static void
plain_agrees(struct rte_mbuf *m, const uint8_t *frame, size_t len, const struct pkt *p,
    enum pkt_status st)
{
	static const uint64_t ip[] = { RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, RTE_MBUF_F_RX_IP_CKSUM_BAD,
		RTE_MBUF_F_RX_IP_CKSUM_GOOD, RTE_MBUF_F_RX_IP_CKSUM_NONE };
	static const uint64_t l4[] = { RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN, RTE_MBUF_F_RX_L4_CKSUM_BAD,
		RTE_MBUF_F_RX_L4_CKSUM_GOOD, RTE_MBUF_F_RX_L4_CKSUM_NONE };
	struct pkt fast;

	if (!pkt_decode_fast(frame, len, &fast))
		return;
	assert_int_equal(st, PKT_OK);
	for (size_t i = 0; i < 4; i++)
		for (size_t j = 0; j < 4; j++) {
			m->ol_flags = ip[i] | l4[j];
			assert_int_equal(dp_rx_csums_plain_ok(m, frame, &fast),
			    dp_rx_csums_ok(m, p, st));
		}
	m->ol_flags = 0;
}

/* dp_rx_csums_ok's verdict on frame (its one pass for IPv4 without options), or -1 */
static int
csums_ok(uint8_t *frame, size_t len, bool *general)
{
	struct rte_mbuf m;
	struct pkt p;
	enum pkt_status st;

	memset(&m, 0, sizeof(m));
	m.buf_addr = frame;
	m.data_len = (uint16_t)len;
	m.pkt_len = (uint32_t)len;
	if ((st = pkt_decode(frame, len, &p)) == PKT_MALFORMED)
		return -1;
	/* the two checks one after the other, as a frame with IP options takes them */
	*general = (p.family != 4 || dp_rx_ip4_csum_ok(&m, &p)) &&
	    (st != PKT_OK || p.src_route || dp_rx_l4_csum_ok(&m, &p));
	plain_agrees(&m, frame, len, &p, st);
	return dp_rx_csums_ok(&m, &p, st);
}

/*
 * IPv4 and IPv6 TCP and UDP frames: right, then with every byte from the IP header on
 * flipped in turn (its checksum, its addresses, the ports, the payload): the one pass says
 * what the separate checks say, and a flip either check sees is refused.
 */
static void
test_one_pass(void **state)
{
	uint8_t f[400];
	unsigned int refused = 0;

	(void)state;
	for (int family = 4; family <= 6; family += 2)
	for (uint8_t proto = 6; proto <= 17; proto += 11)
		for (size_t payload = 0; payload < 300; payload += 37) {
			size_t n = build(f, family, proto, payload);
			bool general;

			if (family == 4)
				wr16(f + 14 + 10, frame_csum_fold(frame_csum_add(0, f + 14, 20)));
			assert_int_equal(csums_ok(f, n, &general), 1);
			assert_true(general);
			for (size_t at = 14; at < n; at++) {
				int fused;

				f[at] ^= 0x21;
				if ((fused = csums_ok(f, n, &general)) >= 0) {
					assert_int_equal(fused, general);
					refused += fused == 0;
				}
				f[at] ^= 0x21;
			}
		}
	assert_true(refused > 2000);
}

/* one random byte from a xorshift state */
static uint8_t
rnd8(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint8_t)(*x >> 24);
}

/*
 * dp_rx_csums4_tcp_ok(), the lean path's sum, says what dp_rx_csums4_len_ok() does for
 * IPv4 TCP packets of every total length from 40 (a bare header) to 300 (both sides of
 * its inline tail and its call), random bytes with both sums made right, then with each
 * byte flipped in turn, and random bytes with the sums left as they fall. Each packet is
 * its own allocation of exactly its length, so a sanitizer sees a read past its end.
 */
static void
test_lean_tcp_sums(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int refused = 0, right = 0;

	(void)state;
	for (uint32_t total = 40; total <= 300; total++)
		for (int round = 0; round < 6; round++) {
			uint8_t *ip = malloc(total);

			assert_non_null(ip);
			for (uint32_t i = 0; i < total; i++)
				ip[i] = rnd8(&x);
			wr16(ip + 2, (uint16_t)total);	/* the length it is called with */
			if (round < 4) {
				wr16(ip + 10, 0);
				wr16(ip + 10, frame_csum_fold(frame_csum_add(0, ip, 20)));
				wr16(ip + 36, 0);
				wr16(ip + 36, frame_l4_csum(ip, 4, PKT_PROTO_TCP, ip + 20,
				    total - 20));
				assert_true(dp_rx_csums4_tcp_ok(ip, total));
			}
			for (uint32_t at = 0; at <= (round == 0 ? total : 0); at++) {
				uint8_t flip = at < total ? (uint8_t)(1 + rnd8(&x) % 255) : 0;
				bool lean, general;

				if (round == 0)
					ip[at % total] ^= flip;
				lean = dp_rx_csums4_tcp_ok(ip, total);
				general = dp_rx_csums4_len_ok(ip, PKT_PROTO_TCP, total - 20);
				if (lean != general)
					fail_msg("total %u round %d byte %u: %d", total, round,
					    at, lean);
				if (round == 0)
					ip[at % total] ^= flip;
				refused += !lean;
				right += lean;
			}
			free(ip);
		}
	/* every flip is refused; the sums made right are taken */
	assert_true(refused > 44000 && right >= 261 * 4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_l4_checksums),
		cmocka_unit_test(test_one_pass),
		cmocka_unit_test(test_lean_tcp_sums),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
