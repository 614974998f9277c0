/*
 * dataplane/worker/dp_dns_qread.c, a VM's query read in one pass, held to dns_msg_parse():
 * queries of every shape near the one it reads (names of every length and case, labels at
 * and past 63 bytes, names at and past 255, pointers, OPT records whole, cut, or of another
 * type and owner, more records, other counts and flags, messages cut anywhere or with bytes
 * after them) give the same status and the same struct dns_msg, field by field. A name it
 * says holds no capital has caps of all zero.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "dp_dns_int.h"

#define T_STEPS		200000
#define T_MSG_MAX	600

/* Every field dns_msg_parse() fills for a query, the name's bytes as long as it is. */
static void
t_same(const struct dns_msg *a, const struct dns_msg *b)
{
	assert_int_equal(a->id, b->id);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->qr, b->qr);
	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->rcode, b->rcode);
	assert_int_equal(a->qdcount, b->qdcount);
	assert_int_equal(a->ancount, b->ancount);
	assert_int_equal(a->nscount, b->nscount);
	assert_int_equal(a->arcount, b->arcount);
	assert_int_equal(a->has_question, b->has_question);
	assert_int_equal(a->qname_len, b->qname_len);
	assert_memory_equal(a->qname, b->qname, a->qname_len);
	assert_int_equal(a->qtype, b->qtype);
	assert_int_equal(a->qclass, b->qclass);
	assert_int_equal(a->question_end, b->question_end);
	assert_int_equal(a->edns, b->edns);
	assert_int_equal(a->edns_udp_size, b->edns_udp_size);
	assert_int_equal(a->nb_addrs, b->nb_addrs);
	assert_int_equal(a->addrs_more, b->addrs_more);
	assert_int_equal(a->chain_len, b->chain_len);
	assert_int_equal(a->an_owners_inline, b->an_owners_inline);
	assert_int_equal(a->plain, b->plain);
	assert_int_equal(a->msg_len, b->msg_len);
}

/* A byte of a label: letters of both cases the most, and a few of any value. */
static uint8_t
t_label_byte(void)
{
	static const char some[] = "abcxyzABCXYZ09-_.@[`{";

	return rand() % 8 == 0 ? (uint8_t)rand() : (uint8_t)some[rand() % (sizeof(some) - 1)];
}

/* A name at m (room for T_MSG_MAX - at): labels of every length, to 255 bytes and past. */
static size_t
t_name(uint8_t *m, size_t room)
{
	unsigned int labels = (unsigned int)(rand() % 9);
	size_t n = 0, len;

	for (unsigned int i = 0; i < labels; i++) {
		len = rand() % 4 == 0 ? (size_t)(55 + rand() % 10) : (size_t)(1 + rand() % 12);
		if (n + 1 + len + 1 > room)
			break;
		m[n++] = (uint8_t)len;
		for (size_t k = 0; k < len; k++)
			m[n++] = t_label_byte();
	}
	if (rand() % 16 == 0 && n + 2 <= room) {
		m[n++] = (uint8_t)(0xc0 | rand() % 2);	/* a pointer, or a reserved type */
		m[n++] = (uint8_t)rand();
		return n;
	}
	m[n++] = 0;
	return n;
}

/* A 16-bit word at m, big-endian. */
static void
t_u16(uint8_t *m, unsigned int v)
{
	m[0] = (uint8_t)(v >> 8);
	m[1] = (uint8_t)v;
}

/* An OPT record (now and then another record, or an owner not the root) at m. */
static size_t
t_opt(uint8_t *m)
{
	size_t rdlen = rand() % 4 == 0 ? (size_t)(rand() % 12) : 0;

	m[0] = rand() % 16 == 0 ? 1 : 0;
	t_u16(m + 1, rand() % 8 == 0 ? (unsigned int)(rand() % 50) : DNS_TYPE_OPT);
	t_u16(m + 3, (unsigned int)rand());
	t_u16(m + 5, (unsigned int)rand());
	t_u16(m + 7, (unsigned int)rand());
	t_u16(m + 9, (unsigned int)rdlen);
	for (size_t k = 0; k < rdlen; k++)
		m[11 + k] = (uint8_t)rand();
	return 11 + rdlen;
}

/* A query near the usual shape, then perhaps cut, lengthened or changed: its length. */
static size_t
t_query(uint8_t *m)
{
	size_t n = DNS_HDR_LEN;
	unsigned int ar = rand() % 3 != 0 ? 1 : 0;

	memset(m, 0, T_MSG_MAX);
	t_u16(m, (unsigned int)rand());
	t_u16(m + 2, rand() % 8 == 0 ? (unsigned int)rand() : (unsigned int)(rand() & 0x0110));
	t_u16(m + 4, rand() % 16 == 0 ? (unsigned int)(rand() % 3) : 1);
	t_u16(m + 6, rand() % 16 == 0 ? 1 : 0);
	t_u16(m + 8, rand() % 16 == 0 ? 1 : 0);
	t_u16(m + 10, rand() % 16 == 0 ? (unsigned int)(rand() % 3 + (rand() % 2) * 256) : ar);
	n += t_name(m + n, 300);
	t_u16(m + n, rand() % 2 == 0 ? DNS_TYPE_A : (unsigned int)rand());
	t_u16(m + n + 2, rand() % 8 == 0 ? (unsigned int)rand() : DNS_CLASS_IN);
	n += 4;
	for (unsigned int i = 0; i < 2 && (i == 0 ? ar : rand() % 8 == 0); i++)
		n += t_opt(m + n);
	if (rand() % 8 == 0)
		n += (size_t)(rand() % 8);	/* bytes after the message */
	if (rand() % 6 == 0)
		n = (size_t)rand() % (n + 1);	/* cut anywhere */
	return n;
}

/*
 * No capital in q's question name: both readers lower it, and the judge's match of its
 * text takes it so (pol_match_lower_and_ports()).
 */
static void
t_no_capital(const struct dns_msg *q)
{
	for (size_t k = 0; k < q->qname_len; k++)
		assert_false(q->qname[k] >= 'A' && q->qname[k] <= 'Z');
}

/* The reader against the parser on queries of every nearby shape. */
static void
test_qread_as_the_parser(void **state)
{
	static uint8_t m[T_MSG_MAX];
	uint8_t caps[DNS_CASE_BYTES], none[DNS_CASE_BYTES] = { 0 };
	struct dns_msg a, b;
	unsigned int ok = 0, lower = 0;
	enum dns_status sa, sb;
	bool upper;

	(void)state;
	srand(5452);
	for (unsigned int step = 0; step < T_STEPS; step++) {
		size_t len = t_query(m);

		memset(&a, 0x5a, sizeof(a));
		memset(&b, 0xa5, sizeof(b));
		sa = dp_dns_query_read(m, len, &a, &upper);
		sb = dns_msg_parse(m, len, &b);
		assert_int_equal(sa, sb);
		if (sa != DNS_OK)
			continue;
		ok++;
		t_same(&a, &b);
		t_no_capital(&b);
		if (!upper) {
			lower++;
			dns_name_caps(m + DNS_HDR_LEN, a.qname_len, caps);
			assert_memory_equal(caps, none, sizeof(caps));
		}
	}
	/* both sides of each answer were asked */
	assert_true(ok > T_STEPS / 4 && ok < T_STEPS - T_STEPS / 10);
	assert_true(lower > T_STEPS / 100);
}

/* Names of every length from the root to 255 bytes, each of one case or with a capital. */
static void
test_qread_every_length(void **state)
{
	static uint8_t m[T_MSG_MAX];
	uint8_t caps[DNS_CASE_BYTES], none[DNS_CASE_BYTES] = { 0 };
	enum dns_status st;
	struct dns_msg a, b;
	bool upper;

	(void)state;
	for (size_t name = 1; name <= DNS_NAME_WIRE_MAX + 2; name++) {
		for (size_t cap = 0; cap <= name; cap++) {
			size_t n = DNS_HDR_LEN, left = name - 1;

			memset(m, 0, sizeof(m));
			t_u16(m + 4, 1);
			while (left > 0) {
				size_t label = left - 1 > 63 ? 63 : left - 1;

				if (label == 0)
					label = 1;	/* one byte left: a label longer than it */
				m[n++] = (uint8_t)label;
				memset(m + n, 'q', label);
				n += label;
				left = left > label + 1 ? left - label - 1 : 0;
			}
			m[n++] = 0;
			if (cap < name && m[DNS_HDR_LEN + cap] == 'q')
				m[DNS_HDR_LEN + cap] = 'Q';
			n += 4;
			st = dp_dns_query_read(m, n, &a, &upper);
			assert_int_equal(st, dns_msg_parse(m, n, &b));
			if (st != DNS_OK)
				continue;
			t_same(&a, &b);
			t_no_capital(&b);
			dns_name_caps(m + DNS_HDR_LEN, b.qname_len, caps);
			if (!upper)
				assert_memory_equal(caps, none, sizeof(caps));
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qread_as_the_parser),
		cmocka_unit_test(test_qread_every_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
