/*
 * Unit tests for a SYN's window scale in sni/pkt.c: the decoder's option walk against a
 * model written from RFC 7323 and RFC 9293 s3.1 alone, over SYNs whose options are drawn
 * at random from the kinds and lengths that matter (EOL, NOP, window scale of every
 * length, lengths 0 and 1, lengths past the header) and followed by payload bytes that
 * spell a window scale: a walk that reads past the TCP header finds them. Both decoders
 * are asked (the straight-through one, and the general walk a frame with IPv4 options
 * takes).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "sni/pkt.h"

#define ROUNDS		200000
#define WSCALE_MAX	14

/* The model: the option at i is kind | len | body, EOL and NOP one byte; malformed ends it. */
static uint8_t
model_wscale(const uint8_t *o, size_t len)
{
	size_t i = 0, n;

	for (;;) {
		if (i >= len || o[i] == 0)
			return PKT_WSCALE_NONE;
		if (o[i] == 1) {
			i++;
			continue;
		}
		if (i + 1 >= len)
			return PKT_WSCALE_NONE;
		n = o[i + 1];
		if (n < 2 || i + n > len)
			return PKT_WSCALE_NONE;
		if (o[i] == 3 && n == 3)
			return o[i + 2] > WSCALE_MAX ? WSCALE_MAX : o[i + 2];
		i += n;
	}
}

/* An option's bytes at o (room for 40): one of the shapes a walk must tell apart. */
static size_t
draw_option(uint8_t *o, size_t room)
{
	static const uint8_t kinds[] = { 0, 1, 1, 2, 3, 3, 3, 4, 8, 30, 254 };
	size_t n;

	o[0] = kinds[rand() % (int)sizeof(kinds)];
	if (o[0] <= 1 || room < 2)
		return 1;
	switch (rand() % 8) {
	case 0:
		o[1] = (uint8_t)(rand() % 4);	/* 0, 1: malformed; 2, 3 */
		break;
	case 1:
		o[1] = (uint8_t)(room + (size_t)(rand() % 3));	/* to the end, or past it */
		break;
	default:
		o[1] = o[0] == 3 ? 3 : (uint8_t)(2 + rand() % 9);
	}
	n = o[1] < 2 ? 2 : o[1];
	for (size_t i = 2; i < n && i < room; i++)
		o[i] = (uint8_t)rand();
	if (o[0] == 3 && o[1] == 3 && room >= 3)
		o[2] = (uint8_t)(rand() % 20);
	return n < room ? n : room;
}

/* A SYN with words option words of opts, ip_opt_words of IPv4 options, and payload. */
static size_t
syn_frame(uint8_t *f, const uint8_t *opts, unsigned int words, unsigned int ip_opt_words,
    const uint8_t *payload, size_t payload_len)
{
	size_t ip_len = 20 + ip_opt_words * 4, tcp_len = 20 + words * 4;
	size_t total = ip_len + tcp_len + payload_len;
	uint8_t *ip = f + 14, *tcp = ip + ip_len;

	memset(f, 0, 14 + total);
	memcpy(f, "\x02\x00\x00\xee\xee\x01\x52\x54\x00\x10\x00\x00\x08\x00", 14);
	ip[0] = (uint8_t)(0x45 + ip_opt_words);
	ip[2] = (uint8_t)(total >> 8);
	ip[3] = (uint8_t)total;
	ip[8] = 64;
	ip[9] = 6;
	memcpy(ip + 12, "\x0a\x0a\x00\x0b\xc0\x00\x02\x0a", 8);
	for (unsigned int i = 0; i < ip_opt_words * 4; i++)
		ip[20 + i] = 1;			/* NOP: options the fast decoder leaves to the walk */
	tcp[0] = 0xc0;			/* from 49152 to 443 */
	tcp[2] = 443 >> 8;
	tcp[3] = 443 & 0xff;
	tcp[12] = (uint8_t)((5 + words) << 4);
	tcp[13] = 0x02;
	tcp[14] = 0xff;
	tcp[15] = 0xff;
	memcpy(tcp + 20, opts, words * 4);
	memcpy(tcp + tcp_len, payload, payload_len);
	return 14 + total;
}

static void
check(const uint8_t *opts, unsigned int words, const uint8_t *payload, size_t payload_len)
{
	uint8_t f[14 + 60 + 60 + 64];
	uint8_t want = model_wscale(opts, words * 4u);
	struct pkt p;

	for (unsigned int ip_opt_words = 0; ip_opt_words <= 1; ip_opt_words++) {
		size_t n = syn_frame(f, opts, words, ip_opt_words, payload, payload_len);

		assert_int_equal(pkt_decode(f, n, &p), PKT_OK);
		assert_int_equal(p.tcp_flags, 0x02);
		if (p.tcp_wscale != want)
			fail_msg("words %u ip options %u: wscale %u, the model %u", words,
			    ip_opt_words, p.tcp_wscale, want);
	}
}

/* Options drawn as a walk would meet them, then payload that spells a window scale of 9. */
static void
test_wscale_random(void **state)
{
	static const uint8_t lure[] = { 3, 3, 9, 3, 3, 9, 3, 3, 9, 3, 3, 9 };
	unsigned int found = 0, none = 0;

	(void)state;
	srand(4242);
	for (int r = 0; r < ROUNDS; r++) {
		uint8_t opts[40];
		unsigned int words = (unsigned int)(rand() % 11);
		size_t at = 0, len = words * 4u;

		while (at < len)
			at += draw_option(opts + at, len - at);
		check(opts, words, lure + rand() % 3, 8);
		if (model_wscale(opts, len) == PKT_WSCALE_NONE)
			none++;
		else
			found++;
	}
	/* both answers drawn often: the walk is held to the model on each */
	assert_true(found > ROUNDS / 10 && none > ROUNDS / 10);
}

/* Each shape where a walk stops or goes on, written out. */
static void
test_wscale_edges(void **state)
{
	static const struct {
		uint8_t o[12];
		unsigned int words;
		uint8_t want;
	} cases[] = {
		{ { 2, 4, 5, 0xb4, 1, 3, 3, 7 }, 2, 7 },
		{ { 2, 4, 5, 0xb4, 4, 2, 8, 10, 1, 1, 1, 1 }, 3, PKT_WSCALE_NONE },
		{ { 1, 1, 1, 3, 3, 20, 0, 0 }, 2, WSCALE_MAX },
		{ { 0, 3, 3, 7 }, 1, PKT_WSCALE_NONE },			/* after EOL */
		{ { 3, 4, 7, 0, 3, 3, 5, 0 }, 2, 5 },			/* a length of 4 is not it */
		{ { 2, 0, 3, 3, 7, 0, 0, 0 }, 2, PKT_WSCALE_NONE },	/* length 0 ends */
		{ { 2, 1, 3, 3, 7, 0, 0, 0 }, 2, PKT_WSCALE_NONE },	/* length 1 ends */
		{ { 1, 1, 1, 3 }, 1, PKT_WSCALE_NONE },			/* no length byte */
		{ { 1, 1, 3, 3 }, 1, PKT_WSCALE_NONE },			/* its value past the end */
		{ { 8, 9, 0, 0, 0, 0, 0, 0 }, 2, PKT_WSCALE_NONE },	/* past the header */
		{ { 8, 8, 0, 0, 0, 0, 0, 0 }, 2, PKT_WSCALE_NONE },	/* to its end exactly */
		{ { 3, 3, 1, 3, 3, 2, 0, 0 }, 2, 1 },			/* the first of two */
	};
	static const uint8_t lure[] = { 3, 3, 9, 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(model_wscale(cases[i].o, cases[i].words * 4u), cases[i].want);
		check(cases[i].o, cases[i].words, lure, sizeof(lure));
	}
}

/*
 * The layouts the decoder tells by their fixed bytes (MSS, NOP, window scale; Linux's MSS,
 * SACK-permitted, timestamps, NOP, window scale), each byte of them set to every value in
 * turn, and cut short: whatever is no longer the layout must still read as the walk reads it.
 */
static void
test_wscale_layouts(void **state)
{
	static const struct {
		uint8_t o[20];
		unsigned int words;
	} base[] = {
		{ { 2, 4, 5, 0xb4, 1, 3, 3, 7 }, 2 },
		{ { 2, 4, 5, 0xb4, 1, 3, 3, 8, 1, 1, 4, 2 }, 3 },
		{ { 2, 4, 5, 0xb4, 4, 2, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8, 1, 3, 3, 7 }, 5 },
		{ { 2, 4, 5, 0xb4, 4, 2, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8, 1, 3, 3, 20 }, 5 },
	};
	/* what a layout's last word would be: the payload spells it for a cut one */
	static const uint8_t lure[] = { 1, 3, 3, 9 };

	(void)state;
	for (size_t b = 0; b < sizeof(base) / sizeof(base[0]); b++) {
		uint8_t o[20];

		for (unsigned int words = 0; words <= base[b].words; words++)
			check(base[b].o, words, lure, sizeof(lure));
		for (unsigned int at = 0; at < base[b].words * 4; at++) {
			memcpy(o, base[b].o, sizeof(o));
			for (unsigned int v = 0; v < 256; v++) {
				o[at] = (uint8_t)v;
				check(o, base[b].words, lure, sizeof(lure));
			}
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wscale_edges),
		cmocka_unit_test(test_wscale_random),
		cmocka_unit_test(test_wscale_layouts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
