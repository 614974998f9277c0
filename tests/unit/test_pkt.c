/*
 * Unit tests for sni/pkt.c, the frame decoder: every header layout it accepts, every
 * length it must refuse, every truncation of a valid frame, and the straight-through
 * decoder of the common shape against the general walk on frames of every shape, mutated.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "pkt_int.h"
#include "sni/pkt.h"

/* A frame under construction. */
struct fb {
	uint8_t b[512];
	size_t n;
};

static void
put(struct fb *f, const void *p, size_t n)
{
	assert_true(f->n + n <= sizeof(f->b));
	memcpy(f->b + f->n, p, n);
	f->n += n;
}

static void
put16(struct fb *f, uint16_t v)
{
	uint8_t b[2] = { v >> 8, v & 0xff };

	put(f, b, 2);
}

static void
eth(struct fb *f, const uint16_t *tags, size_t nb_tags, uint16_t type)
{
	static const uint8_t macs[12] = { 2, 0, 0, 0xee, 0xee, 1, 0x52, 0x54, 0, 0x10, 0, 0 };

	put(f, macs, sizeof(macs));
	for (size_t i = 0; i < nb_tags; i++) {
		put16(f, 0x8100);
		put16(f, tags[i]);
	}
	put16(f, type);
}

static void
ipv4(struct fb *f, uint8_t proto, size_t l4_len, uint16_t frag, size_t opt_words)
{
	uint8_t h[20] = { 0x45 + (uint8_t)opt_words, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0,
		10, 10, 0, 11, 192, 0, 2, 10 };
	size_t total = 20 + opt_words * 4 + l4_len;

	h[2] = (uint8_t)(total >> 8);
	h[3] = (uint8_t)total;
	h[6] = (uint8_t)(frag >> 8);
	h[7] = (uint8_t)frag;
	put(f, h, sizeof(h));
	for (size_t i = 0; i < opt_words; i++)
		put(f, "\x01\x01\x01\x01", 4);	/* NOPs */
}

static void
ipv6(struct fb *f, uint8_t next, size_t plen)
{
	uint8_t h[40] = { 0x60, 0, 0, 0, (uint8_t)(plen >> 8), (uint8_t)plen, next, 64,
		0xfd, 0, 0, 0x10, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11,
		0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10 };

	put(f, h, sizeof(h));
}

static void
tcp(struct fb *f, uint16_t dport, uint8_t flags, const char *payload)
{
	uint8_t h[20] = { 0x9c, 0x41, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0x50, 0, 0xff, 0xff };

	h[2] = (uint8_t)(dport >> 8);
	h[3] = (uint8_t)dport;
	h[13] = flags;
	put(f, h, sizeof(h));
	put(f, payload, strlen(payload));
}

static void
udp(struct fb *f, uint16_t dport, const char *payload)
{
	size_t len = 8 + strlen(payload);

	put16(f, 5300);
	put16(f, dport);
	put16(f, (uint16_t)len);
	put16(f, 0);
	put(f, payload, strlen(payload));
}

static void
test_ipv4_tcp(void **state)
{
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f, NULL, 0, 0x0800);
	ipv4(&f, 6, 20 + 5, 0x4000, 0);		/* DF set: not a fragment */
	tcp(&f, 443, PKT_TCP_SYN, "hello");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_int_equal(p.family, 4);
	assert_int_equal(p.proto, PKT_PROTO_TCP);
	assert_int_equal(p.sport, 40001);
	assert_int_equal(p.dport, 443);
	assert_int_equal(p.seq, 0x1000);
	assert_int_equal(p.tcp_flags, PKT_TCP_SYN);
	assert_false(p.fragment);
	assert_int_equal(p.payload_len, 5);
	assert_memory_equal(p.payload, "hello", 5);
	assert_memory_equal(p.dst, "\xc0\x00\x02\x0a", 4);
}

static void
test_ipv4_options_and_padding(void **state)
{
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f, NULL, 0, 0x0800);
	ipv4(&f, 17, 8 + 2, 0, 2);
	udp(&f, 53, "hi");
	put(&f, "\0\0\0\0\0\0\0\0\0\0", 10);	/* Ethernet padding past the IP length */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_int_equal(p.proto, PKT_PROTO_UDP);
	assert_int_equal(p.dport, 53);
	assert_int_equal(p.payload_len, 2);
}

static void
test_vlan_tags(void **state)
{
	static const uint16_t one[] = { 42 }, two[] = { 7, 42 }, three[] = { 1, 2, 3 };
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f, one, 1, 0x0800);
	ipv4(&f, 17, 8, 0, 0);
	udp(&f, 53, "");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_int_equal(p.vlan, 42);
	assert_int_equal(p.nb_vlans, 1);
	assert_int_equal(p.hop_limit, 64);

	f.n = 0;
	eth(&f, two, 2, 0x0800);
	ipv4(&f, 17, 8, 0, 0);
	udp(&f, 53, "");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_int_equal(p.vlan, 7);		/* the outer tag: the one the switch delivered on */
	assert_int_equal(p.nb_vlans, 2);

	f.n = 0;
	eth(&f, three, 3, 0x0800);
	ipv4(&f, 17, 8, 0, 0);
	udp(&f, 53, "");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_MALFORMED);
}

static void
test_ipv6_extension_headers(void **state)
{
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f, NULL, 0, 0x86dd);
	ipv6(&f, 0, 8 + 16 + 20 + 3);			/* hop-by-hop, then dest opts */
	put(&f, "\x3c\x00\x01\x04\x00\x00\x00\x00", 8);
	put(&f, "\x06\x01\x01\x0c\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 16);
	tcp(&f, 8443, PKT_TCP_ACK, "abc");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_int_equal(p.family, 6);
	assert_int_equal(p.dport, 8443);
	assert_int_equal(p.payload_len, 3);
}

static void
test_fragments_are_other(void **state)
{
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f, NULL, 0, 0x0800);
	ipv4(&f, 17, 8, 0x2000, 0);			/* MF: first fragment */
	udp(&f, 53, "");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OTHER);
	assert_true(p.fragment);

	f.n = 0;
	eth(&f, NULL, 0, 0x86dd);
	ipv6(&f, 44, 8 + 8);
	put(&f, "\x11\x00\x00\x01\x00\x00\x00\x01", 8);
	udp(&f, 53, "");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OTHER);
	assert_true(p.fragment);
}

static void
test_ipv6_atomic_fragment_is_whole(void **state)
{
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f, NULL, 0, 0x86dd);
	ipv6(&f, 44, 8 + 8 + 3);
	put(&f, "\x11\x00\x00\x00\x12\x34\x56\x78", 8);	/* offset 0, M clear */
	udp(&f, 53, "abc");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_false(p.fragment);
	assert_int_equal(p.proto, 17);
	assert_int_equal(p.l4_off, 14 + 40 + 8);
	assert_int_equal(p.l4_len, 8 + 3);
	assert_int_equal(p.payload_len, 3);
}

static void
test_source_routes(void **state)
{
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	/* IPv4 LSRR (131), one address: type | len 7 | ptr 4 | addr, then EOL */
	eth(&f, NULL, 0, 0x0800);
	ipv4(&f, 6, 20, 0, 0);
	f.b[14] = 0x47;				/* ihl 7: two option words */
	f.b[14 + 3] = (uint8_t)(f.b[14 + 3] + 8);
	put(&f, "\x83\x07\x04\xc6\x33\x64\x07\x00", 8);
	tcp(&f, 443, 0x02, "");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_true(p.src_route);
	assert_int_equal(p.l4_off, 14 + 28);

	/* SSRR (137) the same */
	f.b[14 + 20] = 0x89;
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_true(p.src_route);

	/* record route (7) is not a source route */
	f.b[14 + 20] = 0x07;
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_false(p.src_route);

	/* an option whose length runs past the header: the receiver drops the packet */
	f.b[14 + 21] = 9;
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_MALFORMED);

	/* IPv6 routing header type 0 (RFC 5095), and type 4 with segments left */
	f.n = 0;
	eth(&f, NULL, 0, 0x86dd);
	ipv6(&f, 43, 24 + 20);
	put(&f, "\x06\x02\x00\x01\x00\x00\x00\x00", 8);
	put(&f, "\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x07", 16);
	tcp(&f, 443, 0x02, "");
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_true(p.src_route);
	f.b[14 + 40 + 2] = 4;
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_true(p.src_route);
	f.b[14 + 40 + 3] = 0;			/* type 4, no segments left: routes nothing */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_false(p.src_route);
}

static void
test_tcp_window_scale(void **state)
{
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f, NULL, 0, 0x0800);
	ipv4(&f, 6, 28, 0, 0);
	tcp(&f, 443, 0x02, "");
	f.b[14 + 20 + 12] = 0x70;		/* data offset 7: two option words */
	put(&f, "\x02\x04\x05\xb4\x01\x03\x03\x07", 8);	/* MSS 1460, NOP, wscale 7 */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_int_equal(p.tcp_wscale, 7);
	assert_int_equal(p.tcp_win, 0xffff);
	assert_int_equal(p.payload_len, 0);

	f.b[f.n - 1] = 20;			/* RFC 7323: more than 14 is 14 */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_int_equal(p.tcp_wscale, 14);

	f.b[14 + 20 + 13] = 0x10;		/* an ACK: only a SYN's option counts */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OK);
	assert_int_equal(p.tcp_wscale, PKT_WSCALE_NONE);
}

static void
test_not_ip(void **state)
{
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f, NULL, 0, 0x0806);
	put(&f, "\x00\x01\x08\x00\x06\x04\x00\x01", 8);
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OTHER);
	assert_int_equal(p.ethertype, 0x0806);

	f.n = 0;
	eth(&f, NULL, 0, 0x0800);
	ipv4(&f, 1, 8, 0, 0);				/* ICMP */
	put(&f, "\x08\x00\x00\x00\x00\x00\x00\x00", 8);
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_OTHER);
	assert_int_equal(p.proto, 1);
}

static void
test_bad_lengths(void **state)
{
	struct fb f = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f, NULL, 0, 0x0800);
	ipv4(&f, 6, 20, 0, 0);
	tcp(&f, 443, 0, "");
	f.b[14] = 0x44;					/* IHL 4 */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_MALFORMED);
	f.b[14] = 0x45;
	f.b[17] = 41;					/* total length past the frame */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_MALFORMED);
	f.b[17] = 40;
	f.b[14 + 20 + 12] = 0x40;			/* TCP data offset 4 */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_MALFORMED);
	f.b[14 + 20 + 12] = 0x60;			/* TCP data offset past the segment */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_MALFORMED);

	f.n = 0;
	eth(&f, NULL, 0, 0x0800);
	ipv4(&f, 17, 8, 0, 0);
	udp(&f, 53, "");
	f.b[14 + 20 + 5] = 9;				/* UDP length past the IP payload */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_MALFORMED);
	f.b[14 + 20 + 5] = 7;				/* shorter than its own header */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_MALFORMED);

	f.n = 0;
	eth(&f, NULL, 0, 0x86dd);
	ipv6(&f, 17, 0);				/* jumbogram length */
	assert_int_equal(pkt_decode(f.b, f.n, &p), PKT_MALFORMED);
}

static void
test_every_truncation(void **state)
{
	struct fb f4 = { .n = 0 }, f6 = { .n = 0 };
	struct pkt p;

	(void)state;
	eth(&f4, NULL, 0, 0x0800);
	ipv4(&f4, 6, 20 + 4, 0, 1);
	tcp(&f4, 443, PKT_TCP_ACK, "data");
	eth(&f6, NULL, 0, 0x86dd);
	ipv6(&f6, 17, 8 + 4);
	udp(&f6, 53, "data");
	assert_int_equal(pkt_decode(f4.b, f4.n, &p), PKT_OK);
	assert_int_equal(pkt_decode(f6.b, f6.n, &p), PKT_OK);
	for (size_t k = 0; k < f4.n; k++)
		assert_int_equal(pkt_decode(f4.b, k, &p), PKT_MALFORMED);
	for (size_t k = 0; k < f6.n; k++)
		assert_int_equal(pkt_decode(f6.b, k, &p), PKT_MALFORMED);
}

/* pkt_decode (its fast shape first) and the general walk: the same status and fields */
static void
same_as_walk(const uint8_t *b, size_t n)
{
	struct pkt fast, walked;
	enum pkt_status st = pkt_decode(b, n, &fast);

	assert_int_equal(st, pkt_decode_walk(b, n, &walked));
	if (st != PKT_MALFORMED)
		assert_true(pkt_same(&fast, &walked));
}

/*
 * Frames of every shape the fast decoder takes or must hand over (tags, options, SYNs,
 * IPv6 extension headers, ICMP, fragments, padding), each truncated at every length and
 * with each header byte set to values that sit on the checks' edges.
 */
static void
test_fast_agrees_with_walk(void **state)
{
	static const uint8_t edges[] = { 0x00, 0x01, 0x02, 0x05, 0x06, 0x11, 0x14, 0x3a,
		0x40, 0x45, 0x46, 0x4f, 0x50, 0x60, 0x81, 0x86, 0xdd, 0xf0, 0xff };
	static const uint16_t one_tag[1] = { 7 };
	struct fb frames[13];
	unsigned int nf = 0, cases = 0;

	(void)state;
	memset(frames, 0, sizeof(frames));
	eth(&frames[nf], NULL, 0, 0x0800);	/* IPv4 TCP data */
	ipv4(&frames[nf], 6, 20 + 4, 0, 0);
	tcp(&frames[nf++], 443, PKT_TCP_ACK | PKT_TCP_PSH, "data");
	eth(&frames[nf], one_tag, 1, 0x0800);	/* tagged, an ACK with link padding */
	ipv4(&frames[nf], 6, 20, 0, 0);
	tcp(&frames[nf], 443, PKT_TCP_ACK, "");
	put(&frames[nf++], "\0\0\0\0\0\0", 6);
	eth(&frames[nf], NULL, 0, 0x0800);	/* a SYN without options */
	ipv4(&frames[nf], 6, 20, 0, 0);
	tcp(&frames[nf++], 443, PKT_TCP_SYN, "");
	eth(&frames[nf], NULL, 0, 0x0800);	/* a SYN with its window scale among options */
	ipv4(&frames[nf], 6, 28, 0, 0);
	tcp(&frames[nf], 443, PKT_TCP_SYN, "");
	frames[nf].b[14 + 20 + 12] = 0x70;
	put(&frames[nf++], "\x02\x04\x05\xb4\x01\x03\x03\x07", 8);
	eth(&frames[nf], NULL, 0, 0x0800);	/* IPv4 options */
	ipv4(&frames[nf], 6, 20, 0, 1);
	tcp(&frames[nf++], 443, PKT_TCP_ACK, "");
	eth(&frames[nf], NULL, 0, 0x0800);	/* UDP */
	ipv4(&frames[nf], 17, 8 + 5, 0, 0);
	udp(&frames[nf++], 53, "query");
	eth(&frames[nf], NULL, 0, 0x0800);	/* a first fragment */
	ipv4(&frames[nf], 17, 8 + 5, 0x2000, 0);
	udp(&frames[nf++], 53, "query");
	eth(&frames[nf], NULL, 0, 0x0800);	/* ICMP */
	ipv4(&frames[nf], 1, 8, 0, 0);
	put(&frames[nf++], "\x08\0\0\0\0\0\0\0", 8);
	eth(&frames[nf], one_tag, 1, 0x86dd);	/* IPv6 TCP, tagged */
	ipv6(&frames[nf], 6, 20 + 3);
	tcp(&frames[nf++], 443, PKT_TCP_ACK, "abc");
	eth(&frames[nf], NULL, 0, 0x86dd);	/* IPv6 UDP */
	ipv6(&frames[nf], 17, 8 + 2);
	udp(&frames[nf++], 443, "qu");
	eth(&frames[nf], NULL, 0, 0x86dd);	/* IPv6 hop-by-hop, then UDP */
	ipv6(&frames[nf], 0, 8 + 8);
	put(&frames[nf], "\x11\0\x01\x04\0\0\0\0", 8);
	udp(&frames[nf++], 53, "");
	eth(&frames[nf], NULL, 0, 0x86dd);	/* ICMPv6 */
	ipv6(&frames[nf], 58, 8);
	put(&frames[nf++], "\x80\0\0\0\0\0\0\0", 8);
	eth(&frames[nf], NULL, 0, 0x0806);	/* ARP-ish */
	put(&frames[nf++], "\0\x01\x08\0\x06\x04\0\x01", 8);
	for (unsigned int i = 0; i < nf; i++) {
		struct fb *f = &frames[i];
		size_t hdr_end = f->n < 80 ? f->n : 80;

		for (size_t k = 0; k <= f->n; k++, cases++)
			same_as_walk(f->b, k);
		for (size_t at = 12; at < hdr_end; at++)
			for (size_t e = 0; e < sizeof(edges); e++, cases++) {
				uint8_t was = f->b[at];

				f->b[at] = edges[e];
				same_as_walk(f->b, f->n);
				f->b[at] = was;
			}
	}
	assert_true(cases > 5000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_tcp),
		cmocka_unit_test(test_ipv4_options_and_padding),
		cmocka_unit_test(test_vlan_tags),
		cmocka_unit_test(test_ipv6_extension_headers),
		cmocka_unit_test(test_fragments_are_other),
		cmocka_unit_test(test_ipv6_atomic_fragment_is_whole),
		cmocka_unit_test(test_source_routes),
		cmocka_unit_test(test_tcp_window_scale),
		cmocka_unit_test(test_not_ip),
		cmocka_unit_test(test_bad_lengths),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_fast_agrees_with_walk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
