/*
 * dns_edit(): which addresses are offered and which stay, names through removals
 * (compression kept, moved or written out), what is removed unasked, malformed input and
 * the room it needs. Messages are built by dns_edit_fixture.c; where the result is known to
 * the byte it is built the same way and compared whole. Every result is parsed again by
 * dns_msg_parse() and, as a reference that shares no code with sni/, by ldns_wire2pkt().
 * HTTPS/SVCB params and SAME_LEN padding: test_dns_edit_svcb.c.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dns_edit_fixture.h"

/* ---- cases ---- */

/* 40 A on the question name, keep() says no to every fourth: 30 stay, in order. */
static void
test_forty(void **state)
{
	struct mb in, out;
	struct keeper k = { 0 };
	struct dns_edit_stats st;
	struct dns_msg m;
	ldns_pkt *pkt;
	char addr[32];

	(void)state;
	mb_resp(&in, "a.example", DNS_TYPE_A, 40, 0, 0);
	for (unsigned int i = 0; i < 40; i++) {
		snprintf(addr, sizeof(addr), "10.0.0.%u", i);
		mb_a(&in, "", 12, 300 + i, addr);
		if (i % 4 == 0)
			keeper_refuse(&k, i);
	}
	assert_int_equal(edit(&in, &out, 0, &k, &st), DNS_EDIT_OK);
	assert_int_equal(k.calls, 40);
	assert_int_equal(st.addrs_kept, 30);
	assert_int_equal(st.addrs_removed, 10);
	assert_int_equal(out.len, in.len - 10 * 16);
	for (unsigned int i = 0; i < 40; i++) {
		assert_int_equal(k.seen[i].family, 4);
		assert_int_equal(k.seen[i].addr[3], i);
		assert_int_equal(k.seen[i].ttl, 300 + i);
	}

	parse_ok(out.b, out.len, &m);
	assert_int_equal(m.ancount, 30);
	assert_int_equal(m.nb_addrs, 30);
	pkt = ldns_check(out.b, out.len, 30);
	for (unsigned int i = 0, j = 0; i < 40; i++) {
		ldns_rr *rr;

		if (i % 4 == 0)
			continue;
		assert_int_equal(m.addrs[j].addr[3], i);
		rr = ldns_rr_list_rr(ldns_pkt_answer(pkt), j++);
		snprintf(addr, sizeof(addr), "10.0.0.%u", i);
		ldns_owner_is(rr, "a.example.");
		ldns_rdf_is(rr, 0, addr);
		assert_int_equal(ldns_rr_ttl(rr), 300 + i);
	}
	ldns_pkt_free(pkt);
}

/*
 * www.example -> CNAME cdn.provider.net, written in full in the CNAME RDATA, and A records
 * and an SOA MNAME pointing into it. Removed: an A of the question name before it, one of
 * the target after it, an A in the additional section (never asked). The expected message
 * is the same one built without them.
 */
static void
build_chain(struct mb *m, bool edited)
{
	size_t rd, target;

	mb_resp(m, "www.example", DNS_TYPE_A, edited ? 3 : 5, 1, edited ? 0 : 1);
	if (!edited)
		mb_a(m, "", 12, 60, "192.0.2.1");
	mb_name(m, "", 12);
	rd = mb_rr(m, DNS_TYPE_CNAME, 30);
	target = mb_name(m, "cdn.provider.net", NO_PTR);
	mb_end(m, rd);
	mb_a(m, "", (long)target, 60, "192.0.2.2");
	if (!edited)
		mb_a(m, "", (long)target, 60, "192.0.2.3");
	mb_a(m, "", (long)target, 20, "192.0.2.4");
	mb_name(m, "", (long)target + 4);	/* provider.net */
	rd = mb_rr(m, T_SOA, 60);
	mb_name(m, "ns1", (long)target + 4);
	mb_name(m, "hostmaster", (long)target + 4);
	for (unsigned int i = 0; i < 5; i++)
		mb_u32(m, i);
	mb_end(m, rd);
	if (!edited)
		mb_a(m, "", (long)target, 60, "192.0.2.9");
}

static void
test_cname_chain(void **state)
{
	struct mb in, out, want;
	struct keeper k = { 0 };
	struct dns_edit_stats st;
	struct dns_msg m;
	ldns_pkt *pkt;
	ldns_rr *rr;

	(void)state;
	build_chain(&in, false);
	build_chain(&want, true);
	keeper_refuse(&k, 0);
	keeper_refuse(&k, 2);
	assert_int_equal(edit(&in, &out, 0, &k, &st), DNS_EDIT_OK);
	assert_int_equal(k.calls, 4);
	assert_int_equal(k.seen[3].ttl, 20);		/* min(A 20, CNAME 30) */
	assert_int_equal(k.seen[1].ttl, 30);		/* min(A 60, CNAME 30) */
	assert_int_equal(st.addrs_kept, 2);
	assert_int_equal(st.addrs_removed, 3);
	assert_int_equal(out.len, want.len);
	assert_memory_equal(out.b, want.b, want.len);

	parse_ok(out.b, out.len, &m);
	assert_int_equal(m.chain_len, 1);
	assert_int_equal(m.nb_addrs, 2);
	pkt = ldns_check(out.b, out.len, 3);
	rr = ldns_rr_list_rr(ldns_pkt_answer(pkt), 0);
	ldns_rdf_is(rr, 0, "cdn.provider.net.");
	ldns_owner_is(ldns_rr_list_rr(ldns_pkt_answer(pkt), 2), "cdn.provider.net.");
	rr = ldns_rr_list_rr(ldns_pkt_authority(pkt), 0);
	ldns_owner_is(rr, "provider.net.");
	ldns_rdf_is(rr, 0, "ns1.provider.net.");
	ldns_rdf_is(rr, 1, "hostmaster.provider.net.");
	ldns_pkt_free(pkt);
}

/*
 * The first A spells its owner out (mixed case) and the others point at it; keep() says no
 * to the first and the third. The second must then spell it out itself, the fourth point
 * at the second.
 */
static void
test_expand(void **state)
{
	struct mb in, out, want;
	struct keeper k = { 0 };
	struct dns_msg m;
	ldns_pkt *pkt;
	size_t first;

	(void)state;
	mb_resp(&in, "a.example", DNS_TYPE_A, 4, 0, 0);
	first = mb_a(&in, "A.Example", NO_PTR, 60, "192.0.2.1");
	mb_a(&in, "", (long)first, 60, "192.0.2.2");
	mb_a(&in, "", (long)first, 60, "192.0.2.3");
	mb_a(&in, "", (long)first, 60, "192.0.2.4");

	mb_resp(&want, "a.example", DNS_TYPE_A, 2, 0, 0);
	first = mb_a(&want, "A.Example", NO_PTR, 60, "192.0.2.2");
	mb_a(&want, "", (long)first, 60, "192.0.2.4");

	keeper_refuse(&k, 0);
	keeper_refuse(&k, 2);
	assert_int_equal(edit(&in, &out, 0, &k, NULL), DNS_EDIT_OK);
	assert_int_equal(out.len, want.len);
	assert_memory_equal(out.b, want.b, want.len);
	parse_ok(out.b, out.len, &m);
	assert_int_equal(m.nb_addrs, 2);
	pkt = ldns_check(out.b, out.len, 2);
	ldns_owner_is(ldns_rr_list_rr(ldns_pkt_answer(pkt), 1), "A.Example.");
	ldns_pkt_free(pkt);
}

/* A/AAAA off the chain (answer, authority, additional) go without keep() being asked. */
static void
test_off_chain(void **state)
{
	struct mb in, out, want;
	struct keeper k = { 0 };
	struct dns_edit_stats st;
	struct dns_msg m;

	(void)state;
	mb_resp(&in, "a.example", DNS_TYPE_A, 3, 1, 2);
	mb_a(&in, "", 12, 300, "192.0.2.1");
	mb_a(&in, "b", 14, 300, "192.0.2.66");		/* b.example */
	mb_a(&in, "", 12, 300, "2001:db8::1");
	mb_a(&in, "", 12, 300, "192.0.2.67");		/* authority */
	mb_a(&in, "", 12, 300, "192.0.2.68");		/* additional */
	mb_a(&in, "ns", 14, 300, "2001:db8::53");

	mb_resp(&want, "a.example", DNS_TYPE_A, 2, 0, 0);
	mb_a(&want, "", 12, 300, "192.0.2.1");
	mb_a(&want, "", 12, 300, "2001:db8::1");

	assert_int_equal(edit(&in, &out, 0, &k, &st), DNS_EDIT_OK);
	assert_int_equal(k.calls, 2);
	assert_int_equal(k.seen[1].family, 6);
	assert_int_equal(st.addrs_kept, 2);
	assert_int_equal(st.addrs_removed, 4);
	assert_int_equal(out.len, want.len);
	assert_memory_equal(out.b, want.b, want.len);
	parse_ok(out.b, out.len, &m);
	ldns_pkt_free(ldns_check(out.b, out.len, 2));

	/* keep() says no to all: NODATA shape, the rcode as it was. */
	memset(&k, 0, sizeof(k));
	k.refuse_all = true;
	assert_int_equal(edit(&in, &out, 0, &k, &st), DNS_EDIT_OK);
	assert_int_equal(out.len, 12 + 15);
	parse_ok(out.b, out.len, &m);
	assert_int_equal(m.ancount, 0);
	assert_int_equal(m.flags, RESP);
}

/* Bad SvcParams, a compressed TargetName, a query: MALFORMED, keep() never asked. */
static void
test_malformed(void **state)
{
	static const uint8_t unordered[] = { 0, 4, 0, 4, 192, 0, 2, 1, 0, 1, 0, 3, 2, 'h', '2' };
	static const uint8_t dup[] = { 0, 1, 0, 3, 2, 'h', '2', 0, 1, 0, 3, 2, 'h', '3' };
	static const uint8_t hint5[] = { 0, 4, 0, 5, 192, 0, 2, 1, 9 };
	static const uint8_t hint6[] = { 0, 6, 0, 4, 192, 0, 2, 1 };
	static const uint8_t empty4[] = { 0, 4, 0, 0 };
	static const uint8_t mand_odd[] = { 0, 0, 0, 3, 0, 1, 0 };
	static const uint8_t mand_self[] = { 0, 0, 0, 2, 0, 0 };
	static const uint8_t cut[] = { 0, 1, 0, 9, 2, 'h', '2' };
	static const struct {
		const uint8_t *p;
		size_t n;
	} bad[] = {
		{ unordered, sizeof(unordered) }, { dup, sizeof(dup) }, { hint5, sizeof(hint5) },
		{ hint6, sizeof(hint6) }, { empty4, sizeof(empty4) },
		{ mand_odd, sizeof(mand_odd) }, { mand_self, sizeof(mand_self) },
		{ cut, sizeof(cut) },
	};
	struct mb in, out;
	struct keeper k = { 0 };
	size_t rd;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 2, 0, 0);
		mb_a(&in, "", 12, 300, "192.0.2.1");
		mb_https(&in, "", 12, 1, bad[i].p, bad[i].n);
		assert_int_equal(edit(&in, &out, DNS_EDIT_STRIP_ECH, &k, NULL),
		    DNS_EDIT_MALFORMED);
		/* The same off the chain, in the additional section. */
		mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 0, 0, 1);
		mb_https(&in, "zz", NO_PTR, 1, bad[i].p, bad[i].n);
		assert_int_equal(edit(&in, &out, 0, &k, NULL), DNS_EDIT_MALFORMED);
	}
	/* TargetName compressed. */
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 1, 0, 0);
	mb_name(&in, "", 12);
	rd = mb_rr(&in, DNS_TYPE_HTTPS, 300);
	mb_u16(&in, 1);
	mb_name(&in, "", 12);
	mb_end(&in, rd);
	assert_int_equal(edit(&in, &out, 0, &k, NULL), DNS_EDIT_MALFORMED);
	/* An SOA whose RDATA is not two names and 20 bytes. */
	mb_resp(&in, "a.example", DNS_TYPE_A, 0, 1, 0);
	mb_name(&in, "", 12);
	rd = mb_rr(&in, T_SOA, 300);
	mb_name(&in, "", 12);
	mb_name(&in, "", 12);
	mb_u32(&in, 1);
	mb_end(&in, rd);
	assert_int_equal(edit(&in, &out, 0, &k, NULL), DNS_EDIT_MALFORMED);
	/* A query; dns_msg_parse() refusing. */
	mb_resp(&in, "a.example", DNS_TYPE_A, 1, 0, 0);
	mb_a(&in, "", 12, 300, "192.0.2.1");
	in.b[2] &= 0x7f;
	assert_int_equal(edit(&in, &out, 0, &k, NULL), DNS_EDIT_MALFORMED);
	in.b[2] |= 0x80;
	in.len--;
	assert_int_equal(edit(&in, &out, 0, &k, NULL), DNS_EDIT_MALFORMED);
	assert_int_equal(k.calls, 0);
}

/*
 * A result longer than the message. A CNAME's target points into a TXT RDATA (legal for
 * dns_msg_parse(), if odd): those bytes were never written as a name, so the target would
 * be spelt out, 11 bytes longer than it came. Whatever cap, that is NO_ROOM and msg is as
 * it was; so is a cap below len, and a scratch below len.
 */
static void
test_cap(void **state)
{
	static uint8_t scratch[BUF];
	struct mb in, out;
	struct keeper k = { 0 };
	struct dns_msg m;
	size_t rd, txt, n;

	(void)state;
	mb_resp(&in, "a.example", DNS_TYPE_A, 3, 0, 0);
	mb_name(&in, "", 12);
	rd = mb_rr(&in, T_TXT, 60);
	mb_u8(&in, 13);
	txt = mb_name(&in, "foo.example", NO_PTR);
	mb_end(&in, rd);
	mb_name(&in, "", 12);
	rd = mb_rr(&in, DNS_TYPE_CNAME, 60);
	mb_name(&in, "", (long)txt);
	mb_end(&in, rd);
	mb_a(&in, "", (long)txt, 60, "192.0.2.1");
	assert_int_equal(dns_msg_parse(in.b, in.len, &m), DNS_OK);
	assert_int_equal(m.nb_addrs, 1);
	for (size_t cap = in.len; cap < in.len + 20; cap++) {
		out = in;
		assert_int_equal(dns_edit(out.b, in.len, cap, 0, keeper_fn, &k, scratch,
		    sizeof(scratch), &n, NULL), DNS_EDIT_NO_ROOM);
		assert_memory_equal(out.b, in.b, sizeof(in.b));
	}

	/* A plain answer: cap below len, scratch below len. */
	mb_resp(&in, "a.example", DNS_TYPE_A, 2, 0, 0);
	mb_a(&in, "", 12, 60, "192.0.2.1");
	mb_a(&in, "", 12, 60, "192.0.2.2");
	out = in;
	assert_int_equal(dns_edit(out.b, in.len, in.len - 1, 0, keeper_fn, &k, scratch,
	    sizeof(scratch), &n, NULL), DNS_EDIT_NO_ROOM);
	assert_int_equal(dns_edit(out.b, in.len, BUF, 0, keeper_fn, &k, scratch, in.len - 1, &n,
	    NULL), DNS_EDIT_NO_ROOM);
	assert_memory_equal(out.b, in.b, in.len);
	assert_int_equal(dns_edit(out.b, in.len, in.len, 0, keeper_fn, &k, scratch, in.len, &n,
	    NULL), DNS_EDIT_OK);
	assert_int_equal(n, in.len);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forty),
		cmocka_unit_test(test_cname_chain),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_off_chain),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
