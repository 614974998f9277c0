/*
 * dns_edit() and frame_udp_resize(). Messages are built by the small writer below; where
 * the result is known to the byte it is built the same way and compared whole. Every
 * result is parsed again by dns_msg_parse() and, as a reference that shares no code with
 * sni/, by ldns_wire2pkt().
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
#include <ldns/ldns.h>

#include "dns_builder.h"
#include "sni/dns.h"
#include "sni/dns_edit.h"
#include "sni/frame.h"
#include "sni/pkt.h"
#include "frame_check.h"

#define RESP		0x8180		/* QR RD RA, NOERROR */
#define T_NS		2
#define T_SOA		6
#define T_TXT		16
#define NO_PTR		(-1)
#define BUF		4096


/* Labels of the dotted name ("" for none), then a pointer to ptr or, with NO_PTR, the root. */
static size_t
mb_name(struct mb *m, const char *s, long ptr)
{
	size_t at = m->len;

	while (*s != '\0') {
		size_t n = strcspn(s, ".");

		mb_u8(m, (unsigned int)n);
		mb_bytes(m, s, n);
		s += n;
		if (*s == '.')
			s++;
	}
	if (ptr >= 0)
		mb_u16(m, 0xc000 | (unsigned int)ptr);
	else
		mb_u8(m, 0);
	return at;
}

static void
mb_hdr(struct mb *m, unsigned int an, unsigned int ns, unsigned int ar)
{
	m->len = 0;
	mb_u16(m, 0x1234);
	mb_u16(m, RESP);
	mb_u16(m, 1);
	mb_u16(m, an);
	mb_u16(m, ns);
	mb_u16(m, ar);
}

/* Header and the question name (offset 12), class IN. */
static void
mb_resp(struct mb *m, const char *qname, unsigned int qtype, unsigned int an, unsigned int ns,
    unsigned int ar)
{
	mb_hdr(m, an, ns, ar);
	mb_name(m, qname, NO_PTR);
	mb_u16(m, qtype);
	mb_u16(m, DNS_CLASS_IN);
}

/* Type, class IN, TTL and an RDLENGTH for mb_end(); returns where RDATA starts. */
static size_t
mb_rr(struct mb *m, unsigned int type, uint32_t ttl)
{
	mb_u16(m, type);
	mb_u16(m, DNS_CLASS_IN);
	mb_u32(m, ttl);
	mb_u16(m, 0);
	return m->len;
}

static void
mb_end(struct mb *m, size_t rdata)
{
	m->b[rdata - 2] = (uint8_t)((m->len - rdata) >> 8);
	m->b[rdata - 1] = (uint8_t)(m->len - rdata);
}

/* An A or AAAA record of the owner (labels, pointer); returns the owner's offset. */
static size_t
mb_a(struct mb *m, const char *labels, long ptr, uint32_t ttl, const char *addr)
{
	uint8_t a[16];
	bool six = strchr(addr, ':') != NULL;
	size_t at = mb_name(m, labels, ptr), rd;

	rd = mb_rr(m, six ? DNS_TYPE_AAAA : DNS_TYPE_A, ttl);
	assert_int_equal(inet_pton(six ? AF_INET6 : AF_INET, addr, a), 1);
	mb_bytes(m, a, six ? 16 : 4);
	mb_end(m, rd);
	return at;
}

static void
mb_opt(struct mb *m, const void *rdata, size_t n)
{
	size_t rd;

	mb_u8(m, 0);
	mb_u16(m, DNS_TYPE_OPT);
	mb_u16(m, 1232);
	mb_u32(m, 0);
	mb_u16(m, 0);
	rd = m->len;
	mb_bytes(m, rdata, n);
	mb_end(m, rd);
}

/* ---- keep(): says no to the calls whose index is in refuse, remembers every call ---- */

struct keeper {
	uint64_t refuse[4];	/* bit i: say no to call i */
	bool refuse_all;
	unsigned int calls;
	struct dns_addr seen[256];
	bool said[256];
};

static bool
keeper_fn(void *arg, const struct dns_addr *a)
{
	struct keeper *k = arg;
	unsigned int i = k->calls++;
	bool yes = !k->refuse_all && (i >= 256 || (k->refuse[i / 64] >> (i % 64) & 1) == 0);

	if (i < 256) {
		k->seen[i] = *a;
		k->said[i] = yes;
	}
	return yes;
}

static void
keeper_refuse(struct keeper *k, unsigned int i)
{
	k->refuse[i / 64] |= (uint64_t)1 << (i % 64);
}

/* ---- checks ---- */

/* The ldns reading of out; its answer count must be an. */
static ldns_pkt *
ldns_check(const uint8_t *out, size_t n, size_t an)
{
	ldns_pkt *pkt = NULL;

	assert_int_equal(ldns_wire2pkt(&pkt, out, n), LDNS_STATUS_OK);
	assert_int_equal(ldns_rr_list_rr_count(ldns_pkt_answer(pkt)), an);
	return pkt;
}

static void
ldns_owner_is(const ldns_rr *rr, const char *text)
{
	char *s = ldns_rdf2str(ldns_rr_owner(rr));

	assert_string_equal(s, text);
	free(s);
}

static void
ldns_rdf_is(const ldns_rr *rr, size_t i, const char *text)
{
	char *s = ldns_rdf2str(ldns_rr_rdf(rr, i));

	assert_string_equal(s, text);
	free(s);
}

static void
parse_ok(const uint8_t *b, size_t n, struct dns_msg *m)
{
	assert_int_equal(dns_msg_parse(b, n, m), DNS_OK);
	assert_int_equal(m->msg_len, n);
}

/* dns_edit() of in into a copy; cap BUF. */
static enum dns_edit_status
edit(const struct mb *in, struct mb *out, unsigned int flags, struct keeper *k,
    struct dns_edit_stats *st)
{
	static uint8_t scratch[BUF];
	enum dns_edit_status rc;
	size_t n = 0;

	*out = *in;
	rc = dns_edit(out->b, in->len, sizeof(out->b), flags, keeper_fn, k, scratch,
	    sizeof(scratch), &n, st);
	if (rc == DNS_EDIT_OK)
		out->len = n;
	else
		assert_memory_equal(out->b, in->b, in->len);	/* msg as it was */
	return rc;
}

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

static const uint8_t alpn[] = { 0, 1, 0, 6, 2, 'h', '2', 2, 'h', '3' };
static const uint8_t v4hint[] = { 0, 4, 0, 12, 192, 0, 2, 1, 192, 0, 2, 2, 192, 0, 2, 3 };
static const uint8_t ech[] = { 0, 5, 0, 5, 0xfe, 0x0d, 0, 1, 0xaa };
static const uint8_t v6hint[] = { 0, 6, 0, 16, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 1 };

/* An HTTPS record: owner (labels, pointer), priority, TargetName ".", params. */
static void
mb_https(struct mb *m, const char *labels, long ptr, uint16_t prio, const uint8_t *params,
    size_t n)
{
	size_t rd;

	mb_name(m, labels, ptr);
	rd = mb_rr(m, DNS_TYPE_HTTPS, 300);
	mb_u16(m, prio);
	mb_u8(m, 0);
	mb_bytes(m, params, n);
	mb_end(m, rd);
}

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

/* ---- frame_udp_resize ---- */

static void
check_udp(const uint8_t *ip, uint8_t family, size_t iphl, size_t dns_len)
{
	uint8_t copy[FC_FRAME_MAX];
	const uint8_t *udp = ip + iphl;
	size_t udp_len = 8 + dns_len;
	uint16_t csum;

	assert_int_equal(fc_r16(udp + 4), udp_len);
	if (family == 4) {
		assert_int_equal(fc_r16(ip + 2), iphl + udp_len);
		memcpy(copy, ip, iphl);
		fc_w16(copy + 10, 0);
		assert_int_equal(fc_r16(ip + 10), fc_ref_csum(copy, iphl, 0));
	} else {
		assert_int_equal(fc_r16(ip + 4), iphl - 40 + udp_len);
	}
	memcpy(copy, udp, udp_len);
	fc_w16(copy + 6, 0);
	csum = fc_ref_csum(copy, udp_len, fc_ref_pseudo(ip, family, PKT_PROTO_UDP, udp_len));
	assert_int_equal(fc_r16(udp + 6), csum == 0 ? 0xffff : csum);
}

static void
test_udp_resize(void **state)
{
	uint8_t payload[300];

	(void)state;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	for (uint8_t family = 4; family <= 6; family += 2) {
		for (unsigned int opts = 0; opts <= 1; opts++) {
			for (size_t n = 1; n <= sizeof(payload); n += 37) {
				struct fc_frame f;
				struct pkt p;
				uint8_t *ip, *udp;
				size_t iphl, ret;

				fc_frame_build(&f, &(struct fc_frame_spec){ .family = family,
				    .tags = opts, .proto = PKT_PROTO_UDP, .sport = 5353,
				    .dport = 53, .payload = payload, .payload_len = sizeof(payload),
				    .ip_opts = opts });
				ip = f.b + f.l2;
				udp = f.b + f.l4;
				iphl = f.l4 - f.l2;
				if (n == 1 && family == 4)
					fc_w16(udp + 6, 0);	/* "none": computed all the same */
				udp[8] ^= 0x5a;			/* the payload changed too */
				ret = frame_udp_resize(ip, family, udp, n);
				assert_int_equal(ret, iphl + 8 + n);
				check_udp(ip, family, iphl, n);
				assert_int_equal(pkt_decode(f.b, f.l4 + 8 + n, &p), PKT_OK);
				assert_int_equal(p.payload_len, n);
			}
		}
	}
}

/* A datagram whose checksum computes to 0 is sent with 0xffff (RFC 768). */
static void
test_udp_resize_zero(void **state)
{
	uint8_t payload[64] = { 1, 2, 3, 4 };

	(void)state;
	for (uint8_t family = 4; family <= 6; family += 2) {
		struct fc_frame f;
		uint8_t *ip, *udp;
		size_t n = 40, udp_len = 8 + n;
		uint16_t s;

		fc_frame_build(&f, &(struct fc_frame_spec){ .family = family,
		    .proto = PKT_PROTO_UDP, .sport = 5353, .dport = 53, .payload = payload,
		    .payload_len = sizeof(payload) });
		ip = f.b + f.l2;
		udp = f.b + f.l4;
		/* Sum with the last word 0, then make it the word that brings the sum to 0xffff. */
		fc_w16(udp + 4, (uint16_t)udp_len);
		fc_w16(udp + 6, 0);
		fc_w16(udp + udp_len - 2, 0);
		s = fc_ref_sum(udp, udp_len, fc_ref_pseudo(ip, family, PKT_PROTO_UDP, udp_len));
		fc_w16(udp + udp_len - 2, (uint16_t)(0xffff - s));
		frame_udp_resize(ip, family, udp, n);
		assert_int_equal(fc_r16(udp + 6), 0xffff);
		check_udp(ip, family, f.l4 - f.l2, n);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forty),
		cmocka_unit_test(test_cname_chain),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_https),
		cmocka_unit_test(test_mandatory),
		cmocka_unit_test(test_same_len_opt),
		cmocka_unit_test(test_same_len_opt_middle),
		cmocka_unit_test(test_same_len_no_opt),
		cmocka_unit_test(test_off_chain),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_udp_resize),
		cmocka_unit_test(test_udp_resize_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
