/*
 * The DNS answer editor's first pass (see dns_edit.c): one walk over the records of a
 * message dns_msg_parse() accepted that checks what the parser does not read (the names
 * of the types that may hold compressed ones, HTTPS/SVCB RDATA), follows the CNAME chain
 * from the question name, and finds out whether anything but keep() could change the
 * message. When nothing could, the editor only asks keep() and writes nothing unless it
 * says no: rebuilding such a message writes it out byte for byte as it was.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/dns.h"
#include "sni/dns_edit.h"
#include "sni/rd.h"
#include "dns_edit_int.h"
#include "dns_int.h"

/*
 * RDATA that holds names a sender may have compressed: the types of RFC 1035 s3.3, which
 * RFC 3597 s4 calls well known, and those it says receivers should decompress too (RP,
 * AFSDB, RT, SIG, PX, NXT, NAPTR, SRV). Their RDATA is: pre fixed bytes, strs
 * character-strings, names names, then exactly post bytes (-1: any). DNAME, RRSIG and NSEC
 * names are never compressed, but a later name may be compressed against them, so they are
 * written (and mapped) the same way. Every other type is copied as it is: RFC 3597 s4
 * forbids compression in it, and SVCB's TargetName is never compressed (RFC 9460 s2.2)
 * but is mapped too (dns_edit_svcb_write).
 */
static const struct dns_edit_shape edit_shapes[] = {
	{ 2, 0, 0, 1, 0 },	/* NS */
	{ 3, 0, 0, 1, 0 },	/* MD */
	{ 4, 0, 0, 1, 0 },	/* MF */
	{ 5, 0, 0, 1, 0 },	/* CNAME */
	{ 6, 0, 0, 2, 20 },	/* SOA: MNAME RNAME, 5 u32 */
	{ 7, 0, 0, 1, 0 },	/* MB */
	{ 8, 0, 0, 1, 0 },	/* MG */
	{ 9, 0, 0, 1, 0 },	/* MR */
	{ 12, 0, 0, 1, 0 },	/* PTR */
	{ 14, 0, 0, 2, 0 },	/* MINFO */
	{ 15, 2, 0, 1, 0 },	/* MX */
	{ 17, 0, 0, 2, 0 },	/* RP */
	{ 18, 2, 0, 1, 0 },	/* AFSDB */
	{ 21, 2, 0, 1, 0 },	/* RT */
	{ 24, 18, 0, 1, -1 },	/* SIG: signer, then the signature */
	{ 26, 2, 0, 2, 0 },	/* PX */
	{ 30, 0, 0, 1, -1 },	/* NXT: next name, then the bitmap */
	{ 33, 6, 0, 1, 0 },	/* SRV */
	{ 35, 4, 3, 1, 0 },	/* NAPTR: order, pref, flags, services, regexp, replacement */
	{ 39, 0, 0, 1, 0 },	/* DNAME (RFC 6672 s2.5), and: */
	{ 46, 18, 0, 1, -1 },	/* RRSIG signer (RFC 4034 s3.1.7), then the signature */
	{ 47, 0, 0, 1, -1 },	/* NSEC next name (RFC 4034 s4.1.1), then the bitmap */
};

/* Every type of the table is below 48: one bit each, so that most records ask one test. */
#define EDIT_SHAPE_TYPES	48

const struct dns_edit_shape *
dns_edit_shape(uint16_t type)
{
	static const uint64_t shaped = (1ull << 2) | (1ull << 3) | (1ull << 4) | (1ull << 5) |
	    (1ull << 6) | (1ull << 7) | (1ull << 8) | (1ull << 9) | (1ull << 12) | (1ull << 14) |
	    (1ull << 15) | (1ull << 17) | (1ull << 18) | (1ull << 21) | (1ull << 24) |
	    (1ull << 26) | (1ull << 30) | (1ull << 33) | (1ull << 35) | (1ull << 39) |
	    (1ull << 46) | (1ull << 47);

	if (type >= EDIT_SHAPE_TYPES || (shaped >> type & 1) == 0)
		return NULL;
	for (size_t i = 0; i < sizeof(edit_shapes) / sizeof(edit_shapes[0]); i++) {
		if (edit_shapes[i].type == type)
			return &edit_shapes[i];
	}
	return NULL;
}

/* Resource record (RFC 1035 s4.1.3): name | u16 type | u16 class | u32 ttl | u16 rdlength | rdata */
bool
dns_edit_rr_read(const uint8_t *o, struct rd *r, struct dns_edit_rr *rr)
{
	struct rd rdata;
	size_t wire_len;

	rr->owner = dns_off(o, r);
	if (dns_name_read(o, r, &wire_len) != DNS_OK)
		return false;
	rr->fixed = dns_off(o, r);
	if (!rd_u16(r, &rr->type) || !rd_u16(r, &rr->class) || !rd_u32(r, &rr->ttl) ||
	    !rd_vec16(r, &rdata))
		return false;
	rr->rdata = dns_off(o, &rdata);
	rr->rdlen = (uint16_t)rdata.len;
	return true;
}

int
dns_edit_chain_find(const uint8_t *o, size_t olen, const struct dns_edit_link *chain,
    unsigned int n, size_t off)
{
	size_t to = dns_name_ptr_at(o, olen, off);

	for (unsigned int k = 0; to != 0 && k < n; k++) {
		if (chain[k].name == to)
			return (int)k;	/* dns_name_ptr_at(): the only link it can equal */
	}
	for (unsigned int k = 0; k < n; k++) {
		if (dns_name_eq(o, olen, chain[k].name, off))
			return (int)k;
	}
	return -1;
}

/* The labels the editor would map writing the name at off (dns_edit_name()). */
static bool
scan_name(struct dns_edit_scan *s, const uint8_t *o, size_t off)
{
	return dns_name_mark(s->labels, o, off);
}

/*
 * The names of a shaped RDATA, read by dns_name_read()'s rules, and its length exact. An
 * empty RDATA passes (RFC 2136 s2.5 deletions carry none). Each name is scanned as the
 * editor writes it while s->same holds.
 */
static bool
scan_shape(struct dns_edit_scan *s, const uint8_t *o, const struct dns_edit_rr *rr,
    const struct dns_edit_shape *sh)
{
	struct rd r = rd_make(o + rr->rdata, rr->rdlen), sub;
	size_t at, wire_len;

	if (rr->rdlen == 0)
		return true;
	if (!rd_skip(&r, sh->pre))
		return false;
	for (unsigned int i = 0; i < sh->strs; i++) {
		if (!rd_vec8(&r, &sub))
			return false;
	}
	for (unsigned int i = 0; i < sh->names; i++) {
		at = dns_off(o, &r);
		if (dns_name_read(o, &r, &wire_len) != DNS_OK)
			return false;
		if (s->same && !scan_name(s, o, at))
			s->same = false;
	}
	return sh->post < 0 || r.len == (size_t)sh->post;
}

/*
 * An A/AAAA record: one the editor offers (in the answer, of class IN) is listed, to be
 * offered in this order; any other is removed, a change.
 */
static void
scan_addr(struct dns_edit_scan *s, const struct dns_edit_rr *rr, bool answer)
{
	if (!answer || rr->class != DNS_CLASS_IN || s->nb_addrs == DNS_ANSWERS_MAX) {
		s->same = false;
		return;
	}
	s->addrs[s->nb_addrs++] = (struct dns_edit_addr){ .owner = rr->owner,
	    .rdata = rr->rdata, .ttl = dns_ttl(rr->ttl),
	    .family = rr->type == DNS_TYPE_A ? 4 : 6 };
}

/*
 * dns_chain() of dns_msg.c over every CNAME of class IN in the answer section (cn, nb),
 * not only those among its first DNS_ANSWERS_MAX records, so no name a client would
 * follow is missed. Then each listed address takes the least TTL on its owner's path; an
 * owner off the chain is a record the editor removes.
 */
static void
scan_chain(struct dns_edit_scan *s, const uint8_t *o, size_t olen,
    const struct dns_edit_rr *cn, unsigned int nb)
{
	unsigned int n = 1;
	int k;

	s->chain[0] = (struct dns_edit_link){ .name = DNS_HDR_LEN, .ttl = UINT32_MAX };
	s->nb_chain = 1;
	while (n <= DNS_CHAIN_MAX) {
		const struct dns_edit_rr *c = NULL;

		for (unsigned int i = 0; i < nb && c == NULL; i++) {
			if (dns_name_eq(o, olen, cn[i].owner, s->chain[n - 1].name))
				c = &cn[i];
		}
		if (c == NULL || dns_edit_chain_find(o, olen, s->chain, s->nb_chain, c->rdata) >= 0)
			break;
		s->chain[n] = (struct dns_edit_link){
			.name = c->rdata,
			.ttl = dns_min(s->chain[n - 1].ttl, dns_ttl(c->ttl)),
		};
		s->nb_chain = ++n;
	}
	for (unsigned int i = 0; s->same && i < s->nb_addrs; i++) {
		if ((k = dns_edit_chain_find(o, olen, s->chain, s->nb_chain, s->addrs[i].owner)) < 0)
			s->same = false;
		else
			s->addrs[i].ttl = dns_min(s->addrs[i].ttl, s->chain[k].ttl);
	}
}

bool
dns_edit_scan(const uint8_t *o, size_t olen, const struct dns_msg *m, unsigned int flags,
    struct dns_edit_scan *s)
{
	struct rd r = rd_make(o + m->question_end, m->msg_len - m->question_end);
	uint32_t n = (uint32_t)m->ancount + m->nscount + m->arcount;
	struct dns_edit_rr cn[DNS_ANSWERS_MAX], rr;
	const struct dns_edit_shape *sh;
	unsigned int nb = 0;

	/*
	 * A pointer reaches 14 bits of offset, so past them the editor maps nothing; and with
	 * SAME_LEN, trailing bytes become padding.
	 */
	s->same = olen < DNS_PTR_REACH && (flags & DNS_EDIT_REBUILD) == 0 &&
	    ((flags & DNS_EDIT_SAME_LEN) == 0 || m->msg_len == olen);
	s->too_many = false;
	s->nb_addrs = 0;
	if (s->same) {
		memset(s->labels, 0, (olen / 64 + 1) * sizeof(s->labels[0]));
		(void)scan_name(s, o, DNS_HDR_LEN);	/* the question: never a pointer */
	}
	for (uint32_t i = 0; i < n; i++) {
		bool answer = i < m->ancount;

		if (!dns_edit_rr_read(o, &r, &rr))
			return false;
		if (s->same && !scan_name(s, o, rr.owner))
			s->same = false;
		if (rr.type == DNS_TYPE_SVCB || rr.type == DNS_TYPE_HTTPS) {
			if (!dns_edit_svcb_check(o + rr.rdata, rr.rdlen))
				return false;
			/* hints listed in s->addrs in record order, as the build offers them */
			dns_edit_svcb_scan(s, o, &rr, flags, answer);
		} else if ((sh = dns_edit_shape(rr.type)) != NULL && !scan_shape(s, o, &rr, sh)) {
			return false;
		}
		if (rr.type == DNS_TYPE_A || rr.type == DNS_TYPE_AAAA)
			scan_addr(s, &rr, answer);
		if (!answer || rr.type != DNS_TYPE_CNAME || rr.class != DNS_CLASS_IN)
			continue;
		if (nb == DNS_ANSWERS_MAX)
			s->too_many = true;
		else
			cn[nb++] = rr;
	}
	if (!s->too_many)
		scan_chain(s, o, olen, cn, nb);
	return true;
}
