/* The dns_edit unit tests' fixture (dns_edit_fixture.h). */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "dns_edit_fixture.h"

/* Labels of the dotted name ("" for none), then a pointer to ptr or, with NO_PTR, the root. */
size_t
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

void
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
void
mb_resp(struct mb *m, const char *qname, unsigned int qtype, unsigned int an, unsigned int ns,
    unsigned int ar)
{
	mb_hdr(m, an, ns, ar);
	mb_name(m, qname, NO_PTR);
	mb_u16(m, qtype);
	mb_u16(m, DNS_CLASS_IN);
}

/* Type, class IN, TTL and an RDLENGTH for mb_end(); returns where RDATA starts. */
size_t
mb_rr(struct mb *m, unsigned int type, uint32_t ttl)
{
	mb_u16(m, type);
	mb_u16(m, DNS_CLASS_IN);
	mb_u32(m, ttl);
	mb_u16(m, 0);
	return m->len;
}

void
mb_end(struct mb *m, size_t rdata)
{
	m->b[rdata - 2] = (uint8_t)((m->len - rdata) >> 8);
	m->b[rdata - 1] = (uint8_t)(m->len - rdata);
}

/* An A or AAAA record of the owner (labels, pointer); returns the owner's offset. */
size_t
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

void
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


bool
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

void
keeper_refuse(struct keeper *k, unsigned int i)
{
	k->refuse[i / 64] |= (uint64_t)1 << (i % 64);
}

/* ---- checks ---- */

/* The ldns reading of out; its answer count must be an. */
ldns_pkt *
ldns_check(const uint8_t *out, size_t n, size_t an)
{
	ldns_pkt *pkt = NULL;

	assert_int_equal(ldns_wire2pkt(&pkt, out, n), LDNS_STATUS_OK);
	assert_int_equal(ldns_rr_list_rr_count(ldns_pkt_answer(pkt)), an);
	return pkt;
}

void
ldns_owner_is(const ldns_rr *rr, const char *text)
{
	char *s = ldns_rdf2str(ldns_rr_owner(rr));

	assert_string_equal(s, text);
	free(s);
}

void
ldns_rdf_is(const ldns_rr *rr, size_t i, const char *text)
{
	char *s = ldns_rdf2str(ldns_rr_rdf(rr, i));

	assert_string_equal(s, text);
	free(s);
}

void
parse_ok(const uint8_t *b, size_t n, struct dns_msg *m)
{
	assert_int_equal(dns_msg_parse(b, n, m), DNS_OK);
	assert_int_equal(m->msg_len, n);
}

/* dns_edit() of in into a copy; cap BUF. */
enum dns_edit_status
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

/* An HTTPS record: owner (labels, pointer), priority, TargetName ".", params. */
void
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
