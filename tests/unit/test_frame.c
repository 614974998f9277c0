/*
 * Unit tests for sni/frame.c: the TCP RSTs to either end and the ICMP unreachables,
 * on IPv4 and IPv6, untagged, 802.1Q and QinQ, each output decoded again with pkt_decode()
 * and every checksum verified by fc_check_frame() (frame_check.c); and the rebinding table
 * of frame_addr_rebind() row by row at each range's edges.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <string.h>

#include "sni/frame.h"
#include "frame_check.h"
#include "sni/pkt.h"

/* ---- TCP RST ---- */

struct rst_case {
	const char *what;
	uint8_t flags;
	size_t plen;
	uint32_t seq, ack;
	/* to the sender (RFC 9293 s3.10.7.1) */
	uint32_t r_seq, r_ack;
	uint8_t r_flags;
	/* to the receiver: seq when p was dropped, when it was forwarded; ack; flags */
	uint32_t d_seq_drop, d_seq_fwd, d_ack;
	uint8_t d_flags;
};

#define RST	PKT_TCP_RST
#define RA	(PKT_TCP_RST | PKT_TCP_ACK)

static const struct rst_case rst_cases[] = {
	{ "syn", PKT_TCP_SYN, 0, 1000, 0, 0, 1001, RA, 1000, 1001, 0, RST },
	{ "syn+data (tfo)", PKT_TCP_SYN, 10, 1000, 0, 0, 1011, RA, 1000, 1011, 0, RST },
	{ "syn, ack field set but no ACK flag", PKT_TCP_SYN, 0, 1000, 12345, 0, 1001, RA,
	  1000, 1001, 0, RST },
	{ "syn wraps", PKT_TCP_SYN, 0, 0xffffffff, 0, 0, 0, RA, 0xffffffff, 0, 0, RST },
	{ "syn|fin", PKT_TCP_SYN | PKT_TCP_FIN, 3, 50, 0, 0, 55, RA, 50, 55, 0, RST },
	{ "fin+data no ack", PKT_TCP_FIN, 5, 1000, 0, 0, 1006, RA, 1000, 1006, 0, RST },
	{ "syn|ack", PKT_TCP_SYN | PKT_TCP_ACK, 0, 4000, 1001, 1001, 0, RST, 4000, 4001, 1001,
	  RA },
	{ "ack", PKT_TCP_ACK, 0, 1001, 7000, 7000, 0, RST, 1001, 1001, 7000, RA },
	{ "ack+data", PKT_TCP_ACK, 100, 1001, 7000, 7000, 0, RST, 1001, 1101, 7000, RA },
	{ "client hello", PKT_TCP_ACK | PKT_TCP_PSH, 517, 1001, 7001, 7001, 0, RST, 1001, 1518,
	  7001, RA },
	{ "fin|ack", PKT_TCP_FIN | PKT_TCP_ACK, 0, 2000, 8000, 8000, 0, RST, 2000, 2001, 8000,
	  RA },
	{ "fin|ack+data", PKT_TCP_FIN | PKT_TCP_ACK | PKT_TCP_PSH, 20, 2000, 8000, 8000, 0, RST,
	  2000, 2021, 8000, RA },
	{ "ack+data wraps", PKT_TCP_ACK, 0x20, 0xfffffff0, 0, 0, 0, RST, 0xfffffff0, 0x10, 0,
	  RA },
	{ "urg ignored", PKT_TCP_ACK | PKT_TCP_URG, 1, 10, 20, 20, 0, RST, 10, 11, 20, RA },
};

static void
check_rst(const struct fc_frame *f, const uint8_t *out, int n, bool reply, uint32_t seq,
    uint32_t ack, uint8_t flags)
{
	struct pkt op;
	size_t l4;

	assert_int_equal(n, f->l2 + (f->p.family == 4 ? 20 : 40) + 20);
	l4 = fc_check_frame(f, out, (size_t)n, reply, PKT_PROTO_TCP, &op);
	assert_int_equal(op.tcp_flags, flags);
	assert_int_equal(op.seq, seq);
	assert_int_equal(op.ack, ack);
	assert_int_equal(op.payload_len, 0);
	assert_int_equal(out[l4 + 12], 0x50);
	assert_int_equal(fc_r16(out + l4 + 14), 0);	/* window */
	assert_int_equal(fc_r16(out + l4 + 18), 0);	/* urgent pointer */
}

static void
test_tcp_rst(void **state)
{
	static uint8_t data[600];
	(void)state;

	memset(data, 'x', sizeof(data));
	for (size_t i = 0; i < sizeof(rst_cases) / sizeof(rst_cases[0]); i++) {
		for (unsigned int v = 0; v < 6; v++) {
			const struct rst_case *rc = &rst_cases[i];
			uint8_t out[FC_FRAME_MAX + FC_GUARD];
			struct fc_frame f;
			struct fc_call c = { .kind = FC_CALL_RST, .f = &f };
			int n;

			print_message("rst case %s v%u\n", rc->what, v);
			fc_frame_build(&f, &(struct fc_frame_spec){ .family = v < 3 ? 4 : 6,
			    .tags = v % 3, .proto = PKT_PROTO_TCP, .sport = 51000, .dport = 443,
			    .flags = rc->flags, .seq = rc->seq, .ack = rc->ack, .payload = data,
			    .payload_len = rc->plen, .ip_opts = v % 2 });
			n = fc_call_guarded(&c, out, FC_FRAME_MAX);
			check_rst(&f, out, n, true, rc->r_seq, rc->r_ack, rc->r_flags);
			/* no ACK flag: the ack field is zero, not SEG.ACK leaked through */
			if (!(rc->r_flags & PKT_TCP_ACK))
				assert_int_equal(fc_r32(out + n - 12), 0);
			fc_check_caps(&c, (size_t)n);

			c.kind = FC_CALL_RST_DST;
			n = fc_call_guarded(&c, out, FC_FRAME_MAX);
			check_rst(&f, out, n, false, rc->d_seq_drop, rc->d_ack, rc->d_flags);
			c.fwd = true;
			n = fc_call_guarded(&c, out, FC_FRAME_MAX);
			check_rst(&f, out, n, false, rc->d_seq_fwd, rc->d_ack, rc->d_flags);
			fc_check_caps(&c, (size_t)n);
		}
	}
}

/*
 * A slow writer's bytes sent on before the verdict: the segment as its sender wrote it (IP
 * options and IPv6 extension headers kept), cut short, the FIN gone, every checksum good.
 */
static void
test_tcp_prefix(void **state)
{
	static const size_t keeps[] = { 0, 1, 37, 100 };
	uint8_t data[100], out[FC_FRAME_MAX];
	struct fc_frame f;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	for (unsigned int v = 0; v < 6; v++) {
		fc_frame_build(&f, &(struct fc_frame_spec){ .family = v < 3 ? 4 : 6,
		    .tags = v % 3, .proto = PKT_PROTO_TCP, .sport = 51000, .dport = 80,
		    .flags = PKT_TCP_ACK | PKT_TCP_PSH | PKT_TCP_FIN, .seq = 1000, .ack = 2000,
		    .payload = data, .payload_len = sizeof(data), .ip_opts = v % 2 });
		for (size_t k = 0; k < sizeof(keeps) / sizeof(keeps[0]); k++) {
			const uint8_t *ip = out + f.p.l3_off;
			struct pkt op;
			int n = frame_tcp_prefix(f.b, f.len, &f.p, keeps[k], out, sizeof(out));

			assert_true(n > 0);
			assert_int_equal(pkt_decode(out, (size_t)n, &op), PKT_OK);
			assert_int_equal(op.payload_len, keeps[k]);
			if (keeps[k] > 0)
				assert_memory_equal(op.payload, data, keeps[k]);
			assert_int_equal(op.l4_off, f.p.l4_off);
			assert_int_equal(op.seq, 1000);
			assert_int_equal(op.ack, 2000);
			assert_int_equal(op.tcp_flags, PKT_TCP_ACK | PKT_TCP_PSH);
			if (op.family == 4)
				assert_int_equal(fc_ref_sum(ip, (size_t)(ip[0] & 0xf) * 4, 0), 0xffff);
			assert_int_equal(fc_ref_sum(out + op.l4_off, op.l4_len,
			    fc_ref_pseudo(ip, op.family, PKT_PROTO_TCP, op.l4_len)), 0xffff);
		}
		assert_int_equal(frame_tcp_prefix(f.b, f.len, &f.p, sizeof(data) + 1, out,
		    sizeof(out)), -1);
		assert_int_equal(frame_tcp_prefix(f.b, f.len, &f.p, 37, out, 60), -1);
	}
}

static void
test_tcp_rst_rejects(void **state)
{
	static const uint8_t rst_flags[] = { PKT_TCP_RST, PKT_TCP_RST | PKT_TCP_ACK,
		PKT_TCP_RST | PKT_TCP_SYN };
	struct fc_frame f;
	(void)state;

	for (size_t i = 0; i < sizeof(rst_flags); i++) {
		fc_frame_build(&f, &(struct fc_frame_spec){ .family = 6, .proto = PKT_PROTO_TCP,
		    .sport = 1, .dport = 2, .flags = rst_flags[i], .seq = 1, .ack = 2 });
		fc_check_refused(&(struct fc_call){ .kind = FC_CALL_RST, .f = &f });
		fc_check_refused(&(struct fc_call){ .kind = FC_CALL_RST_DST, .f = &f });
		fc_check_refused(&(struct fc_call){ .kind = FC_CALL_RST_DST, .f = &f,
		    .fwd = true });
	}
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 2 });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_RST, .f = &f });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_RST_DST, .f = &f });
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_TCP, .sport = 1,
	    .dport = 2, .flags = PKT_TCP_ACK, .mf = true });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_RST, .f = &f });
	/* a frame shorter than its own L2 header, whatever p claims */
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .tags = 2, .proto = PKT_PROTO_TCP,
	    .sport = 1, .dport = 2, .flags = PKT_TCP_ACK });
	f.len = 20;
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_RST, .f = &f });
}

/* ---- ICMP ---- */

struct icmp_case {
	const char *what;
	uint8_t family;
	unsigned int tags;
	uint8_t proto;
	size_t plen;
	unsigned int ip_opts;
	size_t pad;
	size_t quote;		/* expected quoted bytes */
};

static const struct icmp_case icmp_cases[] = {
	{ "v4 quic", 4, 0, PKT_PROTO_UDP, 100, 0, 0, 128 },
	{ "v4 tcp", 4, 1, PKT_PROTO_TCP, 0, 0, 0, 40 },
	{ "v4 empty udp, padded frame", 4, 0, PKT_PROTO_UDP, 2, 0, 16, 30 },
	{ "v4 options", 4, 2, PKT_PROTO_UDP, 4, 10, 0, 72 },
	{ "v4 one below 576", 4, 0, PKT_PROTO_UDP, 519, 0, 0, 547 },
	{ "v4 exactly 576", 4, 1, PKT_PROTO_UDP, 520, 0, 0, 548 },
	{ "v4 one above 576", 4, 0, PKT_PROTO_UDP, 521, 0, 0, 548 },
	{ "v4 quic initial 1200", 4, 2, PKT_PROTO_UDP, 1200, 0, 0, 548 },
	{ "v6 quic", 6, 0, PKT_PROTO_UDP, 100, 0, 0, 148 },
	{ "v6 tcp padded", 6, 1, PKT_PROTO_TCP, 0, 0, 4, 60 },
	{ "v6 hop-by-hop", 6, 2, PKT_PROTO_UDP, 10, 1, 0, 66 },
	{ "v6 one below 1280", 6, 0, PKT_PROTO_UDP, 1183, 0, 0, 1231 },
	{ "v6 exactly 1280", 6, 1, PKT_PROTO_UDP, 1184, 0, 0, 1232 },
	{ "v6 one above 1280", 6, 0, PKT_PROTO_UDP, 1185, 0, 0, 1232 },
	{ "v6 quic initial 1350", 6, 2, PKT_PROTO_UDP, 1350, 1, 0, 1232 },
};

static void
test_icmp_unreach(void **state)
{
	static uint8_t data[1400];
	(void)state;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	for (size_t i = 0; i < sizeof(icmp_cases) / sizeof(icmp_cases[0]); i++) {
		const struct icmp_case *ic = &icmp_cases[i];
		uint8_t out[FC_FRAME_MAX + FC_GUARD];
		uint8_t proto = ic->family == 4 ? FC_PROTO_ICMP : FC_PROTO_ICMPV6;
		struct fc_frame f;
		struct pkt op;
		struct fc_call c = { .kind = FC_CALL_ICMP, .f = &f };
		size_t l4;
		int n;

		print_message("icmp case %s\n", ic->what);
		fc_frame_build(&f, &(struct fc_frame_spec){ .family = ic->family, .tags = ic->tags,
		    .proto = ic->proto, .sport = 50000, .dport = 443, .flags = PKT_TCP_SYN,
		    .payload = data, .payload_len = ic->plen, .ip_opts = ic->ip_opts,
		    .pad = ic->pad });
		n = fc_call_guarded(&c, out, FC_FRAME_MAX);
		assert_int_equal(n, f.l2 + (ic->family == 4 ? 20 : 40) + 8 + ic->quote);
		l4 = fc_check_frame(&f, out, (size_t)n, true, proto, &op);
		assert_int_equal(out[l4], ic->family == 4 ? 3 : 1);
		assert_int_equal(out[l4 + 1], ic->family == 4 ? 3 : 4);
		assert_int_equal(fc_r32(out + l4 + 4), 0);
		assert_memory_equal(out + l4 + 8, f.b + f.l2, ic->quote);
		if (ic->family == 4)
			assert_true(n - f.l2 <= 576 && ic->quote >= 20 + 4 * ic->ip_opts + 8u);
		else
			assert_true(n - f.l2 <= 1280);
		fc_check_caps(&c, (size_t)n);
	}
}

static void
test_icmp_unreach_rejects(void **state)
{
	static const struct {
		uint8_t family;
		const char *src, *dst;
	} bad[] = {
		{ 4, "10.10.0.11", "224.0.0.251" },
		{ 4, "10.10.0.11", "239.255.255.250" },
		{ 4, "10.10.0.11", "240.0.0.1" },
		{ 4, "10.10.0.11", "255.255.255.255" },
		{ 4, "0.0.0.0", "192.0.2.10" },
		{ 4, "127.0.0.1", "192.0.2.10" },
		{ 4, "224.0.0.1", "192.0.2.10" },
		{ 4, "255.255.255.255", "192.0.2.10" },
		{ 6, "fd00:10:10::11", "ff02::fb" },
		{ 6, "fd00:10:10::11", "ff0e::1" },
		{ 6, "::", "2001:db8::10" },
		{ 6, "::1", "2001:db8::10" },
		{ 6, "ff02::1", "2001:db8::10" },
	};
	static const struct {
		uint8_t family;
		const char *src, *dst;
	} good[] = {
		{ 4, "10.10.0.11", "223.255.255.255" },
		{ 4, "1.0.0.0", "192.0.2.10" },
		{ 4, "126.255.255.255", "192.0.2.10" },
		{ 4, "128.0.0.0", "192.0.2.10" },
		{ 4, "223.255.255.255", "192.0.2.10" },
		{ 6, "fe80::1", "2001:db8::10" },
		{ 6, "::2", "feff::1" },
	};
	uint8_t src[16], dst[16], out[FC_FRAME_MAX + FC_GUARD];
	struct fc_frame f;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int af = bad[i].family == 4 ? AF_INET : AF_INET6;

		assert_int_equal(inet_pton(af, bad[i].src, src), 1);
		assert_int_equal(inet_pton(af, bad[i].dst, dst), 1);
		fc_frame_build(&f, &(struct fc_frame_spec){ .family = bad[i].family,
		    .proto = PKT_PROTO_UDP, .sport = 1, .dport = 443, .src = src, .dst = dst });
		fc_check_refused(&(struct fc_call){ .kind = FC_CALL_ICMP, .f = &f });
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int af = good[i].family == 4 ? AF_INET : AF_INET6;
		struct pkt op;
		int n;

		assert_int_equal(inet_pton(af, good[i].src, src), 1);
		assert_int_equal(inet_pton(af, good[i].dst, dst), 1);
		fc_frame_build(&f, &(struct fc_frame_spec){ .family = good[i].family,
		    .proto = PKT_PROTO_UDP, .sport = 1, .dport = 443, .src = src, .dst = dst });
		n = fc_call_guarded(&(struct fc_call){ .kind = FC_CALL_ICMP, .f = &f }, out,
		    FC_FRAME_MAX);
		assert_true(n > 0);
		fc_check_frame(&f, out, (size_t)n, true, good[i].family == 4 ? FC_PROTO_ICMP :
		    FC_PROTO_ICMPV6, &op);
	}
	/* a fragment, and an ICMP message itself (never an error about an error) */
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 443, .mf = true });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_ICMP, .f = &f });
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = FC_PROTO_ICMP,
	    .payload = (const uint8_t *)"\x03\x03\0\0\0\0\0\0", .payload_len = 8 });
	assert_int_equal(f.st, PKT_OTHER);
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_ICMP, .f = &f });
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 6, .proto = FC_PROTO_ICMPV6,
	    .payload = (const uint8_t *)"\x01\x04\0\0\0\0\0\0", .payload_len = 8 });
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_ICMP, .f = &f });
	/* p from a longer frame than in: the IP length runs past len */
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 443, .payload = src, .payload_len = 16 });
	f.len--;
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_ICMP, .f = &f });
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 6, .tags = 1, .proto = PKT_PROTO_UDP,
	    .sport = 1, .dport = 443, .payload = src, .payload_len = 16 });
	f.len--;
	fc_check_refused(&(struct fc_call){ .kind = FC_CALL_ICMP, .f = &f });
}

/* ---- rebinding ---- */

static void
test_addr_rebind(void **state)
{
	static const struct {
		const char *addr;
		bool rebind;
	} rows[] = {
		/* 0/8 */
		{ "0.0.0.0", true }, { "0.255.255.255", true }, { "1.0.0.0", false },
		/* 127/8 */
		{ "126.255.255.255", false }, { "127.0.0.0", true }, { "127.0.0.1", true },
		{ "127.255.255.255", true }, { "128.0.0.0", false },
		/* 169.254/16 */
		{ "169.253.255.255", false }, { "169.254.0.0", true },
		{ "169.254.169.254", true }, { "169.254.255.255", true },
		{ "169.255.0.0", false }, { "168.254.0.1", false },
		/* 224/4 */
		{ "223.255.255.255", false }, { "224.0.0.0", true }, { "239.255.255.255", true },
		{ "240.0.0.0", false },
		/* 255.255.255.255 */
		{ "255.255.255.254", false }, { "255.255.255.255", true },
		/* the VM and private-address checks are the caller's */
		{ "8.8.8.8", false }, { "10.0.0.1", false }, { "192.168.1.1", false },
		{ "100.64.0.1", false },
		/* :: and ::1 */
		{ "::", true }, { "::1", true }, { "::2", true }, { "::100", true },	/* ::/96: 0.0.0.2, 0.0.1.0 */
		{ "1::", false }, { "1::1", false },
		/* fe80::/10 */
		{ "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false }, { "fe80::", true },
		{ "fe80::1", true }, { "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
		{ "fec0::", false },
		/* ff00::/8 */
		{ "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false }, { "ff00::", true },
		{ "ff02::1", true }, { "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
		{ "2001:db8::1", false }, { "fd00::1", false },
		/* ::ffff:0:0/96 follows IPv4 */
		{ "::ffff:0.0.0.0", true }, { "::ffff:0.255.255.255", true },
		{ "::ffff:1.0.0.0", false }, { "::ffff:127.0.0.1", true },
		{ "::ffff:128.0.0.0", false }, { "::ffff:169.254.0.0", true },
		{ "::ffff:169.255.0.0", false }, { "::ffff:223.255.255.255", false },
		{ "::ffff:224.0.0.0", true }, { "::ffff:239.255.255.255", true },
		{ "::ffff:240.0.0.0", false }, { "::ffff:255.255.255.254", false },
		{ "::ffff:255.255.255.255", true }, { "::ffff:8.8.8.8", false },
		/* neighbours of the mapped prefix are plain IPv6 */
		{ "::fffe:127.0.0.1", false }, { "::1:ffff:127.0.0.1", false },
		{ "0:0:0:1:0:ffff:7f00:1", false }, { "1::ffff:7f00:1", false },
		/* IPv4 embedded in IPv6 follows IPv4: compatible, NAT64, 6to4, Teredo */
		{ "::127.0.0.1", true }, { "::8.8.8.8", false },
		{ "64:ff9b::127.0.0.1", true }, { "64:ff9b::169.254.169.254", true },
		{ "64:ff9b::8.8.8.8", false }, { "64:ff9a::169.254.169.254", false },
		{ "64:ff9b:1:a9fe:a9:fe00::", true },		/* /48 layout, u octet skipped */
		{ "64:ff9b:1:00a9:fe:a9fe::", true },		/* /56 */
		{ "64:ff9b:1::a9:fea9:fe00:0", true },		/* /64 */
		{ "64:ff9b:1::169.254.169.254", true },		/* /96 */
		{ "64:ff9b:1:808:8:800::", false }, { "64:ff9b:1::8.8.8.8", false },
		{ "64:ff9b:1::a:808:808:0", false }, { "64:ff9b:2::169.254.169.254", false },
		{ "2002:a9fe:a9fe::1", true }, { "2002:7f00:1::", true },
		{ "2002:808:808::1", false }, { "2003:a9fe:a9fe::1", false },
		{ "2001:0:a9fe:a9fe::1", true },		/* Teredo server */
		{ "2001:0:808:808:0:0:5601:5601", true },	/* client ~86.1.86.1 */
		{ "2001:0:808:808:0:0:f7f7:f7f7", false },	/* client 8.8.8.8 */
		{ "2001:1:a9fe:a9fe::1", false },
	};
	uint8_t a[16];
	(void)state;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool v6 = strchr(rows[i].addr, ':') != NULL;

		memset(a, 0xee, sizeof(a));
		assert_int_equal(inet_pton(v6 ? AF_INET6 : AF_INET, rows[i].addr, a), 1);
		print_message("%s\n", rows[i].addr);
		assert_int_equal(frame_addr_rebind(v6 ? 6 : 4, a), rows[i].rebind);
	}
	memset(a, 0, sizeof(a));
	a[0] = 8;
	assert_true(frame_addr_rebind(0, a));
	assert_true(frame_addr_rebind(5, a));
	assert_false(frame_addr_rebind(4, a));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_rst),
		cmocka_unit_test(test_tcp_rst_rejects),
		cmocka_unit_test(test_tcp_prefix),
		cmocka_unit_test(test_icmp_unreach),
		cmocka_unit_test(test_icmp_unreach_rejects),
		cmocka_unit_test(test_addr_rebind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
