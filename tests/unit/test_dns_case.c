/*
 * Unit tests for sni/dns_case.c and frame_dns_spell(): a name's letter case recorded,
 * folded and given back; an answer's question and its owner copies spelled, pointers left
 * to follow; the UDP checksum kept right by the incremental update at either parity. And
 * dns_lower_wire(), word by word, against dns_lower() byte by byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "dns_builder.h"
#include "dns_int.h"
#include "frame_check.h"
#include "sni/dns.h"
#include "sni/frame.h"

static const uint8_t lower[DNS_CASE_BYTES];

/* A fixed seed: a failure replays the same inputs. */
static uint64_t rng = 0x243f6a8885a308d3ull;

static uint32_t
rnd(void)
{
	return fc_rnd(&rng);
}

#define WWW_MIXED	"\x03WwW\x07" "ExAmPlE\x03" "cOM\x00"
#define WWW_LOWER	"\x03www\x07" "example\x03" "com\x00"
#define WWW_LEN		(sizeof(WWW_LOWER) - 1)

static void
test_caps_round_trip(void **state)
{
	uint8_t name[WWW_LEN], caps[DNS_CASE_BYTES];
	(void)state;

	memcpy(name, WWW_MIXED, WWW_LEN);
	dns_name_caps(name, WWW_LEN, caps);
	dns_name_spell(name, WWW_LEN, lower);
	assert_memory_equal(name, WWW_LOWER, WWW_LEN);
	dns_name_spell(name, WWW_LEN, caps);
	assert_memory_equal(name, WWW_MIXED, WWW_LEN);
	/* the caps say nothing of a name already in lower case */
	dns_name_caps((const uint8_t *)WWW_LOWER, WWW_LEN, caps);
	assert_memory_equal(caps, lower, DNS_CASE_BYTES);
}

/* Only A-Z and a-z have a case (RFC 4343): neighbours, digits, lengths, high bytes stay. */
static void
test_non_letters_stay(void **state)
{
	uint8_t name[256], before[256], caps[DNS_CASE_BYTES];
	(void)state;

	for (unsigned int i = 0; i < 255; i++)
		name[i] = (uint8_t)i;
	memcpy(before, name, 255);
	dns_name_caps(name, 255, caps);
	for (unsigned int i = 0; i < 255; i++)
		assert_int_equal((caps[i / 8] >> (i % 8)) & 1, i >= 'A' && i <= 'Z');
	dns_name_spell(name, 255, lower);
	for (unsigned int i = 0; i < 255; i++)
		assert_int_equal(name[i], i >= 'A' && i <= 'Z' ? i | 0x20 : i);
	dns_name_spell(name, 255, caps);
	assert_memory_equal(name, before, 255);
}

/* The longest name: every byte's bit fits, none past DNS_CASE_BYTES is written. */
static void
test_longest_name(void **state)
{
	uint8_t name[DNS_NAME_WIRE_MAX], caps[DNS_CASE_BYTES + 4];
	(void)state;

	memset(caps, 0xa5, sizeof(caps));
	for (unsigned int i = 0; i < DNS_NAME_WIRE_MAX; i++)
		name[i] = (uint8_t)(rnd() & 1 ? 'Q' : 'q');
	dns_name_caps(name, DNS_NAME_WIRE_MAX, caps);
	for (unsigned int i = DNS_CASE_BYTES; i < sizeof(caps); i++)
		assert_int_equal(caps[i], 0xa5);
	for (unsigned int i = 0; i < DNS_NAME_WIRE_MAX; i++)
		assert_int_equal((caps[i / 8] >> (i % 8)) & 1, name[i] == 'Q');
}

/* An answer: the question, then records owned by a pointer, a copy, another name. */
static size_t
answer(struct mb *m, const char *qname, unsigned int extra_an)
{
	static const uint8_t rdata[4] = { 'A', 'b', 'C', 'd' };	/* letters, not a name */

	m->len = 0;
	mb_u16(m, 0x4242);
	mb_u16(m, 0x8180);
	mb_u16(m, 1);
	mb_u16(m, 4 + extra_an);
	mb_u16(m, 0);
	mb_u16(m, 0);
	mb_bytes(m, qname, WWW_LEN);
	mb_u16(m, DNS_TYPE_A);
	mb_u16(m, DNS_CLASS_IN);
	mb_u16(m, 0xc00c);				/* owner: a pointer to the question */
	mb_u16(m, DNS_TYPE_A); mb_u16(m, 1); mb_u32(m, 60); mb_u16(m, 4);
	mb_bytes(m, rdata, 4);
	mb_bytes(m, "\x03WWW\x07" "EXAMPLE\x03" "COM\x00", WWW_LEN);	/* a copy */
	mb_u16(m, DNS_TYPE_A); mb_u16(m, 1); mb_u32(m, 60); mb_u16(m, 4);
	mb_bytes(m, rdata, 4);
	mb_bytes(m, "\x03WWW\x07" "EXAMPLE\x03" "NET\x00", WWW_LEN);	/* not the name */
	mb_u16(m, DNS_TYPE_A); mb_u16(m, 1); mb_u32(m, 60); mb_u16(m, 4);
	mb_bytes(m, rdata, 4);
	mb_bytes(m, "\x03WWW\xc0\x10", 6);		/* some labels, then a pointer */
	mb_u16(m, DNS_TYPE_A); mb_u16(m, 1); mb_u32(m, 60); mb_u16(m, 4);
	mb_bytes(m, rdata, 4);
	return m->len;
}

static void
test_msg_spell(void **state)
{
	struct mb m, want;
	uint8_t caps[DNS_CASE_BYTES];
	struct dns_msg a;
	size_t len = answer(&m, WWW_LOWER, 0);
	(void)state;

	dns_name_caps((const uint8_t *)WWW_MIXED, WWW_LEN, caps);
	answer(&want, WWW_MIXED, 0);
	memcpy(want.b + DNS_HDR_LEN + WWW_LEN + 4 + 16, WWW_MIXED, WWW_LEN);
	dns_msg_spell(m.b, len, WWW_LEN, caps);
	assert_memory_equal(m.b, want.b, len);
	assert_int_equal(dns_msg_parse(m.b, len, &a), DNS_OK);
	assert_int_equal(a.nb_addrs, 3);	/* all but the .net one own the question name */
	/* and back to lower case, all of it */
	dns_msg_spell(m.b, len, WWW_LEN, lower);
	answer(&want, WWW_LOWER, 0);
	memcpy(want.b + DNS_HDR_LEN + WWW_LEN + 4 + 16, WWW_LOWER, WWW_LEN);
	assert_memory_equal(m.b, want.b, len);
}

/* An ANCOUNT the message does not hold: everything that fits is spelled, nothing past len. */
static void
test_msg_spell_short(void **state)
{
	struct mb m;
	uint8_t caps[DNS_CASE_BYTES], copy[sizeof(m.b)];
	size_t len = answer(&m, WWW_LOWER, 3);
	(void)state;

	dns_name_caps((const uint8_t *)WWW_MIXED, WWW_LEN, caps);
	for (size_t cut = 0; cut <= len; cut++) {
		struct mb t = m;

		memset(t.b + cut, 0x55, sizeof(t.b) - cut);
		memcpy(copy, t.b, sizeof(t.b));
		dns_msg_spell(t.b, cut, WWW_LEN, caps);
		assert_memory_equal(t.b + cut, copy + cut, sizeof(t.b) - cut);
		if (cut >= DNS_HDR_LEN + WWW_LEN + 4)
			assert_memory_equal(t.b + DNS_HDR_LEN, WWW_MIXED, WWW_LEN);
		else
			assert_memory_equal(t.b, copy, cut);
	}
}

/*
 * A datagram whose checksum is right, the message at dns_off from its header (odd in DNS
 * over TCP's sense, to cover both parities): after any spelling it sums to 0xffff again.
 */
static void
check_spell_csum(size_t dns_off)
{
	uint8_t buf[128], caps[DNS_CASE_BYTES];
	size_t n = dns_off + 60, len = 60;
	uint16_t csum;

	for (unsigned int round = 0; round < 5000; round++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)rnd();
		memcpy(buf + dns_off + DNS_HDR_LEN, WWW_MIXED, WWW_LEN);
		fc_w16(buf + dns_off + 6, 0);	/* ANCOUNT 0 */
		fc_w16(buf + 6, 0);
		csum = (uint16_t)~fc_ref_sum(buf, n, 0);
		fc_w16(buf + 6, csum == 0 ? 0xffff : csum);
		for (unsigned int i = 0; i < DNS_CASE_BYTES; i++)
			caps[i] = (uint8_t)rnd();
		frame_dns_spell(buf, buf + dns_off, len, WWW_LEN, round & 1 ? caps : lower);
		assert_int_equal(fc_ref_sum(buf, n, 0), 0xffff);
		assert_int_not_equal(fc_r16(buf + 6), 0);	/* 0 would mean "none" */
		if (!(round & 1))
			assert_memory_equal(buf + dns_off + DNS_HDR_LEN, WWW_LOWER, WWW_LEN);
	}
}

static void
test_spell_csum(void **state)
{
	(void)state;
	check_spell_csum(8);	/* UDP */
	check_spell_csum(9);
}

/* RFC 768: an IPv4 datagram without a checksum keeps none. */
static void
test_spell_no_csum(void **state)
{
	uint8_t buf[8 + 64] = { 0 };
	(void)state;

	memcpy(buf + 8 + DNS_HDR_LEN, WWW_MIXED, WWW_LEN);
	frame_dns_spell(buf, buf + 8, DNS_HDR_LEN + WWW_LEN + 4, WWW_LEN, lower);
	assert_memory_equal(buf + 8 + DNS_HDR_LEN, WWW_LOWER, WWW_LEN);
	assert_int_equal(fc_r16(buf + 6), 0);
}

/*
 * An answer whose records copy the question in full (the names summed one by one) and one
 * with more copies than frame_dns_spell() lists (the whole message summed), at either
 * parity: the checksum is right after each spelling, and the copies are spelled.
 */
static void
test_spell_csum_copies(void **state)
{
	static const unsigned int extra[] = { 0, 3, 40 };
	uint8_t buf[8 + 2048 + 1], caps[DNS_CASE_BYTES];
	struct mb m;
	(void)state;

	for (size_t dns_off = 8; dns_off <= 9; dns_off++)
		for (unsigned int x = 0; x < sizeof(extra) / sizeof(extra[0]); x++) {
			size_t len = answer(&m, WWW_MIXED, extra[x]), n = dns_off + len;
			uint16_t csum;

			for (unsigned int i = 0; i < extra[x]; i++) {
				mb_bytes(&m, "\x03Www\x07" "exAMPLE\x03" "coM\x00", WWW_LEN);
				mb_u16(&m, DNS_TYPE_A); mb_u16(&m, 1); mb_u32(&m, 60); mb_u16(&m, 4);
				mb_u32(&m, 0x01020304);
			}
			len = m.len;
			n = dns_off + len;
			assert_true(n <= sizeof(buf));
			memset(buf, 0x5a, dns_off);
			memcpy(buf + dns_off, m.b, len);
			fc_w16(buf + 6, 0);
			csum = (uint16_t)~fc_ref_sum(buf, n, 0);
			fc_w16(buf + 6, csum == 0 ? 0xffff : csum);
			for (unsigned int round = 0; round < 50; round++) {
				for (unsigned int i = 0; i < DNS_CASE_BYTES; i++)
					caps[i] = (uint8_t)rnd();
				frame_dns_spell(buf, buf + dns_off, len, WWW_LEN,
				    round & 1 ? caps : lower);
				assert_int_equal(fc_ref_sum(buf, n, 0), 0xffff);
				if (!(round & 1) && extra[x] > 0)	/* the last copy */
					assert_memory_equal(buf + n - 14 - WWW_LEN, WWW_LOWER,
					    WWW_LEN);
			}
		}
}

/* One answer record of a random shape: its owner kind, then type A and four letters. */
static void
random_record(struct mb *m, size_t *inline_at)
{
	static const char *const copies[] = { WWW_LOWER, WWW_MIXED,
		"\x03WWW\x07" "EXAMPLE\x03" "COM\x00" };
	size_t at = m->len;

	switch (rnd() % 6) {
	case 0:
		mb_u16(m, 0xc00c);			/* a pointer to the question */
		break;
	case 1:
		mb_bytes(m, copies[rnd() % 3], WWW_LEN);	/* a copy, in some case */
		*inline_at = at;
		break;
	case 2:
		mb_bytes(m, "\x03WwW\x07" "EXAMPLE\x03" "NET\x00", WWW_LEN);	/* another */
		*inline_at = at;
		break;
	case 3:
		mb_bytes(m, "\x03WWW\xc0\x10", 6);	/* some labels, then a pointer */
		break;
	case 4:
		mb_u8(m, 0);				/* the root */
		break;
	default:
		mb_u16(m, 0xc000 | (unsigned int)*inline_at);	/* an earlier owner */
		break;
	}
	mb_u16(m, DNS_TYPE_A); mb_u16(m, 1); mb_u32(m, 60); mb_u16(m, 4);
	for (int i = 0; i < 4; i++)
		mb_u8(m, 'A' + rnd() % 58);
}

/*
 * An answer with no owner that starts in place (dns_msg.an_owners_inline 0) has no copy of
 * the question to spell: frame_dns_spell() given only the question (dp_dns.c does, for a
 * message the editor did not write anew) spells and sums as given all of it. Random
 * answers of up to eight records of every owner shape, random caps, either parity.
 */
static void
test_spell_question_only(void **state)
{
	uint8_t whole[8 + 512], question[8 + 512], caps[DNS_CASE_BYTES];
	unsigned int none = 0, some = 0;
	(void)state;

	for (unsigned int round = 0; round < 20000; round++) {
		size_t off = 8 + (round & 1), inline_at = DNS_HDR_LEN, n = rnd() % 9;
		struct dns_msg a;
		struct mb m;

		m.len = 0;
		mb_u16(&m, 0x4242);
		mb_u16(&m, 0x8180);
		mb_u16(&m, 1);
		mb_u16(&m, (unsigned int)n);
		mb_u16(&m, 0);
		mb_u16(&m, 0);
		mb_bytes(&m, round & 2 ? WWW_MIXED : WWW_LOWER, WWW_LEN);
		mb_u16(&m, DNS_TYPE_A);
		mb_u16(&m, DNS_CLASS_IN);
		for (size_t i = 0; i < n; i++)
			random_record(&m, &inline_at);
		assert_int_equal(dns_msg_parse(m.b, m.len, &a), DNS_OK);
		if (a.an_owners_inline != 0) {
			some++;
			continue;
		}
		none++;
		for (size_t i = 0; i < off; i++)
			whole[i] = (uint8_t)rnd();
		memcpy(whole + off, m.b, m.len);
		memcpy(question, whole, sizeof(whole));
		for (unsigned int i = 0; i < DNS_CASE_BYTES; i++)
			caps[i] = round % 3 == 0 ? 0 : (uint8_t)rnd();
		frame_dns_spell(whole, whole + off, m.len, WWW_LEN, caps);
		frame_dns_spell(question, question + off, a.question_end, WWW_LEN, caps);
		assert_memory_equal(whole, question, off + m.len);
	}
	assert_true(none > 1000 && some > 1000);
}

/*
 * Every byte value at every position of names of every length to 24: capitals found, and
 * their bits set, as one byte at a time finds them.
 */
static void
test_has_upper(void **state)
{
	uint8_t name[24], caps[DNS_CASE_BYTES];
	(void)state;

	for (size_t len = 0; len <= sizeof(name); len++)
		for (size_t at = 0; at < len; at++)
			for (unsigned int c = 0; c < 256; c++) {
				memset(name, (int)(rnd() & 1 ? 'a' : 0xc1), sizeof(name));
				name[at] = (uint8_t)c;
				assert_int_equal(dns_name_has_upper(name, len), c >= 'A' && c <= 'Z');
				dns_name_caps(name, len, caps);
				for (size_t i = 0; i < len; i++)
					assert_int_equal(caps[i / 8] >> (i % 8) & 1,
					    name[i] >= 'A' && name[i] <= 'Z');
				for (size_t i = len; i < 8 * DNS_CASE_BYTES; i++)
					assert_int_equal(caps[i / 8] >> (i % 8) & 1, 0);
			}
	memcpy(name, WWW_MIXED, WWW_LEN);
	assert_true(dns_name_has_upper(name, WWW_LEN));
	assert_false(dns_name_has_upper((const uint8_t *)WWW_LOWER, WWW_LEN));
}

/*
 * Every byte value at every place of every length up to three blocks and a tail, copied
 * lower case by copy8() and by copy16_lower() (the parser's and the query reader's
 * question name): no byte of the copy's buffer past its length written, and
 * copy16_lower() true exactly when one was an upper-case letter.
 */
static void
test_copy_lower(void **state)
{
	uint8_t from[64], to[64], to16[64], want[64];

	(void)state;

	for (unsigned int c = 0; c < 256; c++)
		for (size_t n = 1; n <= 52; n++)
			for (size_t at = 0; at < n; at++) {
				bool up = false;

				for (size_t i = 0; i < sizeof(from); i++) {
					from[i] = (uint8_t)(rnd() >> 7);
					to[i] = to16[i] = (uint8_t)(rnd() >> 7);
				}
				from[at] = (uint8_t)c;
				memcpy(want, to, sizeof(to));
				for (size_t i = 0; i < n; i++) {
					want[i] = dns_lower(from[i]);
					up |= from[i] >= 'A' && from[i] <= 'Z';
				}
				copy8(to, from, n, true);
				assert_memory_equal(to, want, sizeof(to));
				assert_int_equal(copy16_lower(to16, from, n), up);
				assert_memory_equal(to16, want, sizeof(to16));
			}
}

/*
 * copy16() of every length up to five blocks and a tail, under and past a block, into a
 * buffer of random bytes: the n bytes as they were, none past them written.
 */
static void
test_copy16(void **state)
{
	uint8_t from[96], to[96], want[96];

	(void)state;

	for (size_t n = 0; n <= 90; n++) {
		for (size_t i = 0; i < sizeof(from); i++) {
			from[i] = (uint8_t)(rnd() >> 7);
			to[i] = (uint8_t)(rnd() >> 7);
		}
		memcpy(want, to, sizeof(to));
		memcpy(want, from, n);
		copy16(to, from, n);
		assert_memory_equal(to, want, sizeof(to));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps_round_trip),
		cmocka_unit_test(test_non_letters_stay),
		cmocka_unit_test(test_longest_name),
		cmocka_unit_test(test_msg_spell),
		cmocka_unit_test(test_spell_question_only),
		cmocka_unit_test(test_msg_spell_short),
		cmocka_unit_test(test_spell_csum),
		cmocka_unit_test(test_spell_no_csum),
		cmocka_unit_test(test_spell_csum_copies),
		cmocka_unit_test(test_has_upper),
		cmocka_unit_test(test_copy_lower),
		cmocka_unit_test(test_copy16),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
