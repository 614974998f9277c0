/*
 * dns_edit() on HTTPS/SVCB RDATA (hints offered and removed, ech stripped, mandatory kept
 * valid, AliasMode, a record nothing changes left unwritten) and DNS_EDIT_SAME_LEN (EDNS Padding grown or appended, or a record of
 * a private-use type when there is no OPT), each result read again by dns_msg_parse() and
 * ldns.
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

static const uint8_t alpn[] = { 0, 1, 0, 6, 2, 'h', '2', 2, 'h', '3' };
static const uint8_t v4hint[] = { 0, 4, 0, 12, 192, 0, 2, 1, 192, 0, 2, 2, 192, 0, 2, 3 };
static const uint8_t ech[] = { 0, 5, 0, 5, 0xfe, 0x0d, 0, 1, 0xaa };
static const uint8_t v6hint[] = { 0, 6, 0, 16, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 1 };


static void
params(struct mb *p, const uint8_t *a, size_t n)
{
	mb_bytes(p, a, n);
}

/* alpn, ipv4hint (3), ech, ipv6hint: ech stripped, the second v4 hint refused. */
static void
test_https(void **state)
{
	static const uint8_t want_rdata[] = {
		0, 1, 0,
		0, 1, 0, 6, 2, 'h', '2', 2, 'h', '3',
		0, 4, 0, 8, 192, 0, 2, 1, 192, 0, 2, 3,
		0, 6, 0, 16, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
	};
	struct mb in, out, p = { .len = 0 };
	struct keeper k = { 0 };
	struct dns_edit_stats st;
	struct dns_msg m;
	ldns_pkt *pkt;
	size_t rd;

	(void)state;
	params(&p, alpn, sizeof(alpn));
	params(&p, v4hint, sizeof(v4hint));
	params(&p, ech, sizeof(ech));
	params(&p, v6hint, sizeof(v6hint));
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 1, 0, 0);
	mb_https(&in, "", 12, 1, p.b, p.len);
	keeper_refuse(&k, 1);
	assert_int_equal(edit(&in, &out, DNS_EDIT_STRIP_ECH, &k, &st), DNS_EDIT_OK);
	assert_int_equal(k.calls, 4);
	assert_int_equal(k.seen[3].family, 6);
	assert_int_equal(k.seen[3].addr[15], 1);
	assert_int_equal(k.seen[0].ttl, 300);
	assert_int_equal(st.addrs_kept, 3);
	assert_int_equal(st.addrs_removed, 1);
	assert_int_equal(st.ech_removed, 1);
	rd = 12 + 11 + 4 + 2 + 10;
	assert_int_equal(out.len, rd + sizeof(want_rdata));
	assert_int_equal(out.b[rd - 2] << 8 | out.b[rd - 1], sizeof(want_rdata));
	assert_memory_equal(out.b + rd, want_rdata, sizeof(want_rdata));
	parse_ok(out.b, out.len, &m);
	pkt = ldns_check(out.b, out.len, 1);
	ldns_pkt_free(pkt);

	/* Without STRIP_ECH the ech param stays, and keep() saying yes leaves the record whole. */
	memset(&k, 0, sizeof(k));
	assert_int_equal(edit(&in, &out, 0, &k, &st), DNS_EDIT_OK);
	assert_int_equal(out.len, in.len);
	assert_memory_equal(out.b, in.b, in.len);
	assert_int_equal(st.ech_removed, 0);

	/* All hints refused: both params go, the record stays. */
	memset(&k, 0, sizeof(k));
	k.refuse_all = true;
	assert_int_equal(edit(&in, &out, DNS_EDIT_STRIP_ECH, &k, &st), DNS_EDIT_OK);
	assert_int_equal(out.len, rd + 3 + sizeof(alpn));
	assert_memory_equal(out.b + rd + 3, alpn, sizeof(alpn));
	assert_int_equal(st.addrs_removed, 4);
}

/* edit() of in with flags keeping every address: rewritten or not, after calls to keep(). */
static void
t_edit_all(const struct mb *in, unsigned int flags, uint32_t rewritten, unsigned int calls)
{
	struct keeper k = { 0 };
	struct dns_edit_stats st;
	struct mb out;

	assert_int_equal(edit(in, &out, flags, &k, &st), DNS_EDIT_OK);
	assert_int_equal(st.rewritten, rewritten);
	assert_int_equal(k.calls, calls);
	if (rewritten == 0) {
		assert_int_equal(out.len, in->len);
		assert_memory_equal(out.b, in->b, in->len);
	}
}

/*
 * A message only keep() could change is not written (dns_edit_scan()): an HTTPS record of
 * the question with hints, each kept, is left as it came, keep() asked of its hints in
 * order. Written anew when anything else would change it: ech stripped, AliasMode params,
 * hints of a record off the chain (in the additional section) or of a record not of class
 * IN, a hint refused, an address owned by the TargetName (off the chain).
 */
static void
test_https_unchanged(void **state)
{
	struct mb in, out, p = { .len = 0 };
	struct keeper k = { 0 };
	struct dns_edit_stats st;
	size_t rd;

	(void)state;
	params(&p, alpn, sizeof(alpn));
	params(&p, v4hint, sizeof(v4hint));
	params(&p, v6hint, sizeof(v6hint));
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 2, 0, 0);
	mb_https(&in, "", 12, 1, p.b, p.len);
	rd = in.len - p.len - 1;			/* its TargetName, "." */
	mb_a(&in, "", (long)rd, 60, "192.0.2.9");
	t_edit_all(&in, DNS_EDIT_STRIP_ECH, 1, 4);
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 1, 0, 0);
	mb_https(&in, "", 12, 1, p.b, p.len);
	t_edit_all(&in, DNS_EDIT_STRIP_ECH, 0, 4);
	assert_int_equal(edit(&in, &out, 0, &k, &st), DNS_EDIT_OK);
	assert_int_equal(st.addrs_kept, 4);
	assert_int_equal(k.seen[2].addr[3], 3);
	assert_int_equal(k.seen[3].family, 6);
	assert_int_equal(k.seen[3].ttl, 300);

	/* one refused: written anew, keep() asked once each all the same */
	memset(&k, 0, sizeof(k));
	keeper_refuse(&k, 3);
	assert_int_equal(edit(&in, &out, 0, &k, &st), DNS_EDIT_OK);
	assert_int_equal(st.rewritten, 1);
	assert_int_equal(k.calls, 4);
	assert_int_equal(out.len, in.len - 20);

	/* ech with STRIP_ECH; and without, the record is left as it is */
	p.len = 0;
	params(&p, v4hint, sizeof(v4hint));
	params(&p, ech, sizeof(ech));
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 1, 0, 0);
	mb_https(&in, "", 12, 1, p.b, p.len);
	t_edit_all(&in, DNS_EDIT_STRIP_ECH, 1, 3);
	t_edit_all(&in, 0, 0, 3);

	/* AliasMode with a param; and with none, left as it is */
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 1, 0, 0);
	mb_https(&in, "", 12, 0, alpn, sizeof(alpn));
	t_edit_all(&in, 0, 1, 0);
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 1, 0, 0);
	mb_https(&in, "", 12, 0, alpn, 0);
	t_edit_all(&in, 0, 0, 0);

	/* hints of a record in the additional section, never offered: they go */
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 0, 0, 1);
	mb_https(&in, "", 12, 1, v4hint, sizeof(v4hint));
	t_edit_all(&in, 0, 1, 0);

	/* and of one in the answer not of class IN */
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 1, 0, 0);
	mb_https(&in, "", 12, 1, v4hint, sizeof(v4hint));
	in.b[DNS_HDR_LEN + 11 + 4 + 2 + 2 + 1] = 3;	/* class CH */
	t_edit_all(&in, 0, 1, 0);
}

/*
 * mandatory (RFC 9460 s8) listing a removed key: the key leaves the list, the list leaves
 * the record when empty. Also an HTTPS record off the chain (additional): ech stripped,
 * hints removed without being offered; and an AliasMode record, whose params go.
 */
static void
test_mandatory(void **state)
{
	static const uint8_t mand15[] = { 0, 0, 0, 4, 0, 1, 0, 5 };
	static const uint8_t mand45[] = { 0, 0, 0, 4, 0, 4, 0, 5 };
	static const uint8_t v4one[] = { 0, 4, 0, 4, 192, 0, 2, 7 };
	static const uint8_t want1[] = { 0, 1, 0, 0, 0, 0, 2, 0, 1,
		0, 1, 0, 6, 2, 'h', '2', 2, 'h', '3' };
	static const uint8_t want2[] = { 0, 2, 0 };
	static const uint8_t want3[] = { 0, 3, 0 };
	static const uint8_t want4[] = { 0, 0, 1, 'x', 0 };
	struct mb in, out, p1 = { .len = 0 }, p2 = { .len = 0 }, p3 = { .len = 0 };
	struct keeper k = { .refuse_all = true };
	struct dns_edit_stats st;
	struct dns_msg m;
	ldns_pkt *pkt;
	size_t rd, off;

	(void)state;
	params(&p1, mand15, sizeof(mand15));
	params(&p1, alpn, sizeof(alpn));
	params(&p1, ech, sizeof(ech));
	params(&p2, mand45, sizeof(mand45));
	params(&p2, v4one, sizeof(v4one));
	params(&p2, ech, sizeof(ech));
	params(&p3, v4one, sizeof(v4one));
	params(&p3, ech, sizeof(ech));
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 3, 0, 1);
	mb_https(&in, "", 12, 1, p1.b, p1.len);
	mb_https(&in, "", 12, 2, p2.b, p2.len);
	mb_name(&in, "", 12);				/* AliasMode to x. with params */
	rd = mb_rr(&in, DNS_TYPE_HTTPS, 300);
	mb_u16(&in, 0);
	mb_name(&in, "x", NO_PTR);
	mb_bytes(&in, p3.b, p3.len);
	mb_end(&in, rd);
	mb_https(&in, "other", 12, 3, p3.b, p3.len);	/* additional */

	assert_int_equal(edit(&in, &out, DNS_EDIT_STRIP_ECH, &k, &st), DNS_EDIT_OK);
	assert_int_equal(k.calls, 1);			/* the v4 hint of record 2 */
	assert_int_equal(st.ech_removed, 4);
	assert_int_equal(st.addrs_removed, 3);		/* record 2's, AliasMode's, other's */
	off = 12 + 11 + 4;
	for (unsigned int i = 0; i < 4; i++) {
		const uint8_t *w[] = { want1, want2, want4, want3 };
		size_t wl[] = { sizeof(want1), sizeof(want2), sizeof(want4), sizeof(want3) };

		off += i == 3 ? 8 : 2;			/* "other" + pointer, or a pointer */
		off += 10;
		assert_int_equal(out.b[off - 2] << 8 | out.b[off - 1], wl[i]);
		assert_memory_equal(out.b + off, w[i], wl[i]);
		off += wl[i];
	}
	assert_int_equal(off, out.len);
	parse_ok(out.b, out.len, &m);
	pkt = ldns_check(out.b, out.len, 3);
	ldns_pkt_free(pkt);
}

/*
 * SAME_LEN with an OPT record: the 160 bytes freed become a Padding option of 156 zeroes;
 * an existing Padding option grows instead, the option after it untouched.
 */
static void
test_same_len_opt(void **state)
{
	static const uint8_t cookie_pad[] = { 0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8,
		0, 12, 0, 2, 0, 0, 0, 9, 0, 1, 0xee };
	struct mb in, out;
	struct keeper k = { 0 };
	struct dns_msg m;
	ldns_pkt *pkt;
	size_t opt;
	char addr[32];

	(void)state;
	for (int pass = 0; pass < 2; pass++) {
		mb_resp(&in, "a.example", DNS_TYPE_A, 40, 0, 1);
		for (unsigned int i = 0; i < 40; i++) {
			snprintf(addr, sizeof(addr), "10.0.1.%u", i);
			mb_a(&in, "", 12, 300, addr);
		}
		opt = in.len;
		if (pass == 0)
			mb_opt(&in, NULL, 0);
		else
			mb_opt(&in, cookie_pad, sizeof(cookie_pad));
		memset(&k, 0, sizeof(k));
		for (unsigned int i = 0; i < 40; i += 4)
			keeper_refuse(&k, i);
		assert_int_equal(edit(&in, &out, DNS_EDIT_SAME_LEN, &k, NULL), DNS_EDIT_OK);
		assert_int_equal(out.len, in.len);
		opt -= 160;
		if (pass == 0) {
			assert_int_equal(out.b[opt + 9] << 8 | out.b[opt + 10], 160);
			assert_int_equal(out.b[opt + 11] << 8 | out.b[opt + 12], 12);
			assert_int_equal(out.b[opt + 13] << 8 | out.b[opt + 14], 156);
			for (size_t i = opt + 15; i < out.len; i++)
				assert_int_equal(out.b[i], 0);
		} else {
			const uint8_t *o = out.b + opt + 11;

			assert_int_equal(out.b[opt + 9] << 8 | out.b[opt + 10],
			    sizeof(cookie_pad) + 160);
			assert_memory_equal(o, cookie_pad, 12);
			assert_int_equal(o[12] << 8 | o[13], 12);
			assert_int_equal(o[14] << 8 | o[15], 2 + 160);
			for (size_t i = 0; i < 2 + 160; i++)
				assert_int_equal(o[16 + i], 0);
			assert_memory_equal(o + 16 + 162, cookie_pad + 18, 5);
		}
		parse_ok(out.b, out.len, &m);
		assert_true(m.edns);
		assert_int_equal(m.nb_addrs, 30);
		pkt = ldns_check(out.b, out.len, 30);
		assert_true(ldns_pkt_edns(pkt));
		assert_int_equal(ldns_rdf_size(ldns_pkt_edns_data(pkt)),
		    (pass == 0 ? 0 : sizeof(cookie_pad)) + 160);
		ldns_pkt_free(pkt);
	}
}

/*
 * SAME_LEN with the OPT record not last: records after it, and their pointers to names
 * after it, move by the padding. Built again with the padding in place, byte for byte.
 */
static void
build_opt_middle(struct mb *m, bool edited)
{
	static const uint8_t pad12[] = { 0, 12, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	size_t zz, rd;

	mb_resp(m, "a.example", DNS_TYPE_A, edited ? 1 : 2, 0, 3);
	if (!edited)
		mb_a(m, "", 12, 300, "192.0.2.1");
	mb_a(m, "", 12, 300, "192.0.2.2");
	if (edited)
		mb_opt(m, pad12, sizeof(pad12));
	else
		mb_opt(m, NULL, 0);
	zz = mb_name(m, "zz", 12);
	rd = mb_rr(m, T_TXT, 60);
	mb_u8(m, 1);
	mb_u8(m, 'x');
	mb_end(m, rd);
	mb_name(m, "", (long)zz);
	rd = mb_rr(m, T_NS, 60);
	mb_name(m, "ns", (long)zz);
	mb_end(m, rd);
}

static void
test_same_len_opt_middle(void **state)
{
	struct mb in, out, want;
	struct keeper k = { 0 };
	struct dns_msg m;
	ldns_pkt *pkt;
	ldns_rr *rr;

	(void)state;
	build_opt_middle(&in, false);
	build_opt_middle(&want, true);
	keeper_refuse(&k, 0);
	assert_int_equal(edit(&in, &out, DNS_EDIT_SAME_LEN, &k, NULL), DNS_EDIT_OK);
	assert_int_equal(out.len, want.len);
	assert_int_equal(out.len, in.len);
	assert_memory_equal(out.b, want.b, want.len);
	parse_ok(out.b, out.len, &m);
	pkt = ldns_check(out.b, out.len, 1);
	rr = ldns_rr_list_rr(ldns_pkt_additional(pkt), 1);
	ldns_owner_is(rr, "zz.a.example.");
	ldns_rdf_is(rr, 0, "ns.zz.a.example.");
	ldns_pkt_free(pkt);
}

/*
 * SAME_LEN with no OPT record to pad: the 16 bytes of a removed A record become a record of
 * type 65280 owned by the root (5 bytes of zero RDATA) at the end; fewer than its 11
 * bytes freed is NO_ROOM, the message as it was.
 */
static void
test_same_len_no_opt(void **state)
{
	static const uint8_t pad_rr[] = { 0, 0xff, 0x00, 0, 1, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0 };
	struct mb in, out;
	struct keeper k = { 0 };
	struct dns_msg m;
	ldns_pkt *pkt;
	size_t n, rd;

	(void)state;
	mb_resp(&in, "a.example", DNS_TYPE_A, 2, 0, 0);
	mb_a(&in, "", 12, 300, "192.0.2.1");
	mb_a(&in, "", 12, 300, "192.0.2.2");
	keeper_refuse(&k, 0);
	assert_int_equal(edit(&in, &out, DNS_EDIT_SAME_LEN, &k, NULL), DNS_EDIT_OK);
	assert_int_equal(k.calls, 2);
	assert_int_equal(out.len, in.len);
	parse_ok(out.b, out.len, &m);
	assert_int_equal(m.ancount, 1);
	assert_int_equal(m.arcount, 1);
	assert_int_equal(m.nb_addrs, 1);
	assert_int_equal(m.addrs[0].addr[3], 2);
	assert_memory_equal(out.b + out.len - sizeof(pad_rr), pad_rr, sizeof(pad_rr));
	pkt = ldns_check(out.b, out.len, 1);
	assert_int_equal(ldns_rr_get_type(ldns_rr_list_rr(ldns_pkt_additional(pkt), 0)), 65280);
	ldns_pkt_free(pkt);
	/* an ipv4hint address alone (8 bytes freed with its param) cannot hold that record */
	mb_resp(&in, "a.example", DNS_TYPE_HTTPS, 1, 0, 0);
	mb_name(&in, "", 12);
	rd = mb_rr(&in, DNS_TYPE_HTTPS, 300);
	mb_bytes(&in, "\x00\x01\x00\x00\x04\x00\x04\xc0\x00\x02\x01", 11);
	mb_end(&in, rd);
	memset(&k, 0, sizeof(k));
	keeper_refuse(&k, 0);
	assert_int_equal(edit(&in, &out, DNS_EDIT_SAME_LEN, &k, NULL), DNS_EDIT_NO_ROOM);
	assert_int_equal(k.calls, 1);
	assert_memory_equal(out.b, in.b, in.len);
	mb_resp(&in, "a.example", DNS_TYPE_A, 2, 0, 0);
	mb_a(&in, "", 12, 300, "192.0.2.1");
	mb_a(&in, "", 12, 300, "192.0.2.2");
	/* Nothing removed: the same length without padding. */
	memset(&k, 0, sizeof(k));
	assert_int_equal(edit(&in, &out, DNS_EDIT_SAME_LEN, &k, NULL), DNS_EDIT_OK);
	assert_int_equal(out.len, in.len);
	assert_memory_equal(out.b, in.b, in.len);
	/* Trailing bytes are not the message: SAME_LEN has them to pad, and no OPT. */
	n = in.len;
	mb_u8(&in, 0);
	assert_int_equal(edit(&in, &out, 0, &k, NULL), DNS_EDIT_OK);
	assert_int_equal(out.len, n);
	assert_int_equal(edit(&in, &out, DNS_EDIT_SAME_LEN, &k, NULL), DNS_EDIT_NO_ROOM);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_https),
		cmocka_unit_test(test_https_unchanged),
		cmocka_unit_test(test_mandatory),
		cmocka_unit_test(test_same_len_opt),
		cmocka_unit_test(test_same_len_opt_middle),
		cmocka_unit_test(test_same_len_no_opt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
