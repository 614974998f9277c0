/*
 * frame_icmp_unreach_in_place() and frame_tcp_rst_in_place() against frame_icmp_unreach()
 * and frame_tcp_rst(): for frames of every shape the copying builders take (IPv4 and IPv6,
 * untagged, 802.1Q and QinQ, options, padding, quotes cut at 576 and 1280, each TCP flag)
 * and those they refuse, the reply written over the frame is byte for byte the one built
 * into a buffer of its own, nothing is written before the room it asks for, and a refused
 * frame is left as it was.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "sni/frame.h"
#include "sni/frame_inplace.h"
#include "frame_check.h"
#include "sni/pkt.h"

#define ROOM	128	/* a buffer's headroom, as an mbuf's */
#define GUARD	0xa5

/* f's reply in place, held to the copying builder's */
static void
check_in_place(const struct fc_frame *f)
{
	static uint8_t buf[ROOM + FC_FRAME_MAX], out[FC_FRAME_MAX];
	uint8_t *in = buf + ROOM;
	struct pkt p;
	size_t room;
	int want, n;

	memset(buf, GUARD, sizeof(buf));
	memcpy(in, f->b, f->len);
	assert_int_equal(pkt_decode(in, f->len, &p), f->st);
	want = frame_icmp_unreach(f->b, f->len, &f->p, out, sizeof(out));
	room = frame_icmp_room(&p);
	assert_true(room == (p.family == 4 ? 28u : 48u));
	n = frame_icmp_unreach_in_place(in, f->len, &p);
	assert_int_equal(n, want);
	for (size_t i = 0; i < ROOM - room; i++)
		assert_int_equal(buf[i], GUARD);
	if (n < 0) {
		for (size_t i = ROOM - room; i < ROOM; i++)
			assert_int_equal(buf[i], GUARD);
		assert_memory_equal(in, f->b, f->len);
		return;
	}
	assert_memory_equal(in - room, out, (size_t)n);
}

/* f's RST in place, held to the copying builder's */
static void
check_rst_in_place(const struct fc_frame *f)
{
	static uint8_t buf[FC_FRAME_MAX], out[FC_FRAME_MAX];
	struct pkt p;
	int want, n;

	memcpy(buf, f->b, f->len);
	assert_int_equal(pkt_decode(buf, f->len, &p), f->st);
	want = frame_tcp_rst(f->b, f->len, &f->p, out, sizeof(out));
	n = frame_tcp_rst_in_place(buf, f->len, &p);
	assert_int_equal(n, want);
	if (n < 0)
		assert_memory_equal(buf, f->b, f->len);
	else
		assert_memory_equal(buf, out, (size_t)n);
}

static void
test_rst_in_place(void **state)
{
	static const uint8_t flags[] = { PKT_TCP_SYN, PKT_TCP_ACK, PKT_TCP_SYN | PKT_TCP_ACK,
		PKT_TCP_FIN | PKT_TCP_ACK, PKT_TCP_RST, PKT_TCP_RST | PKT_TCP_ACK, 0 };
	static uint8_t data[300];
	struct fc_frame f;
	(void)state;

	for (uint8_t family = 4; family <= 6; family += 2)
		for (unsigned int tags = 0; tags <= 2; tags++)
			for (size_t k = 0; k < sizeof(flags); k++)
				for (unsigned int v = 0; v < 4; v++) {
					fc_frame_build(&f, &(struct fc_frame_spec){ .family = family,
					    .tags = tags, .proto = PKT_PROTO_TCP, .sport = 50000,
					    .dport = 443, .flags = flags[k], .seq = 1000 + v,
					    .ack = 7000, .payload = data,
					    .payload_len = (v & 1) ? 0 : 200,
					    .ip_opts = v >> 1, .pad = (v & 2) ? 6 : 0 });
					check_rst_in_place(&f);
				}
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 1, .dport = 443 });
	check_rst_in_place(&f);
}

static void
test_in_place_shapes(void **state)
{
	static uint8_t data[1400];
	static const size_t plens[] = { 0, 2, 100, 519, 520, 521, 1183, 1184, 1185, 1350 };
	struct fc_frame f;
	(void)state;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	for (uint8_t family = 4; family <= 6; family += 2)
		for (unsigned int tags = 0; tags <= 2; tags++)
			for (size_t k = 0; k < sizeof(plens) / sizeof(plens[0]); k++)
				for (unsigned int v = 0; v < 4; v++) {
					fc_frame_build(&f, &(struct fc_frame_spec){ .family = family,
					    .tags = tags, .proto = v & 1 ? PKT_PROTO_TCP :
					    PKT_PROTO_UDP, .sport = 50000, .dport = 443,
					    .flags = PKT_TCP_ACK, .payload = data,
					    .payload_len = plens[k], .ip_opts = v >> 1,
					    .pad = (v & 2) ? 6 : 0 });
					check_in_place(&f);
				}
}

static void
test_in_place_refused(void **state)
{
	static const uint8_t mcast4[4] = { 224, 0, 0, 251 }, vm4[4] = { 10, 10, 0, 11 };
	static const uint8_t mcast6[16] = { 0xff, 2, [15] = 0xfb };
	struct fc_frame f;
	(void)state;

	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 1, .dport = 443, .src = vm4, .dst = mcast4 });
	check_in_place(&f);
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 6, .proto = PKT_PROTO_UDP,
	    .sport = 1, .dport = 443, .dst = mcast6 });
	check_in_place(&f);
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP, .sport = 1,
	    .dport = 443, .mf = true });
	check_in_place(&f);
	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = FC_PROTO_ICMP,
	    .payload = (const uint8_t *)"\x03\x03\0\0\0\0\0\0", .payload_len = 8 });
	check_in_place(&f);
}

/*
 * frame_l2_len() takes the link header's length from p (its l3_off), reading only the
 * ethertype that ends it: a p whose l3_off is not the frame's (tags it does not have,
 * more than PKT_VLAN_MAX, past the frame) gets no reply, and the frame is left as it was.
 */
static void
test_in_place_l3_off(void **state)
{
	static const uint16_t wrong[] = { 0, 13, 18, 22, 26, 30, 60000 };
	static uint8_t buf[ROOM + FC_FRAME_MAX], out[FC_FRAME_MAX];
	uint8_t *in = buf + ROOM;
	struct fc_frame f;
	struct pkt p;
	(void)state;

	fc_frame_build(&f, &(struct fc_frame_spec){ .family = 4, .proto = PKT_PROTO_UDP,
	    .sport = 50000, .dport = 443 });
	for (size_t k = 0; k < sizeof(wrong) / sizeof(wrong[0]); k++) {
		memcpy(in, f.b, f.len);
		assert_int_equal(pkt_decode(in, f.len, &p), PKT_OK);
		p.l3_off = wrong[k];
		assert_int_equal(frame_icmp_unreach(f.b, f.len, &p, out, sizeof(out)), -1);
		assert_int_equal(frame_icmp_unreach_in_place(in, f.len, &p), -1);
		assert_memory_equal(in, f.b, f.len);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_place_shapes),
		cmocka_unit_test(test_in_place_refused),
		cmocka_unit_test(test_in_place_l3_off),
		cmocka_unit_test(test_rst_in_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
