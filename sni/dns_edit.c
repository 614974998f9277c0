/*
 * DNS answer editor (see sni/dns_edit.h). Three passes over the message:
 *
 *  1. check: dns_msg_parse(), then the RDATA the edit must read that it does not, the
 *     names of the types that may hold compressed names and every HTTPS/SVCB RDATA, so a
 *     message found bad later never had keep() called for it;
 *  2. chain: the CNAME chain from the question name, as dns_msg_parse() follows it;
 *  3. build: the message copied to scratch, then written again into msg record by record,
 *     every name label by label through an old -> new offset map (dns_edit_name(), in
 *     dns_edit_write.c).
 *
 * With DNS_EDIT_SAME_LEN the bytes saved become EDNS Padding afterwards (edit_pad).
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

#define DNS_EDNS_PADDING	12	/* RFC 7830 s3 */
#define DNS_TYPE_PAD		65280	/* the first private-use type (RFC 6895 s3.1) */
#define DNS_PAD_RR_MIN		11	/* root owner | type | class | ttl | rdlength */
#define DNS_MSG_MAX		0xffff	/* a UDP payload or a TCP-framed message, RFC 1035 s4.2.2 */

enum edit_section {
	EDIT_ANSWER,
	EDIT_AUTHORITY,
	EDIT_ADDITIONAL,
};

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
struct edit_shape {
	uint16_t type;
	uint8_t pre, strs, names;
	int8_t post;
};

static const struct edit_shape edit_shapes[] = {
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

static const struct edit_shape *
edit_shape(uint16_t type)
{
	for (size_t i = 0; i < sizeof(edit_shapes) / sizeof(edit_shapes[0]); i++) {
		if (edit_shapes[i].type == type)
			return &edit_shapes[i];
	}
	return NULL;
}

/* Where the EDNS OPT record went in the new message, for the padding. */
struct edit_opt {
	bool found;
	size_t rdlen_at;	/* its RDLENGTH */
	size_t end;		/* just past its RDATA */
	unsigned int after;	/* records written after it */
};

/* Resource record (RFC 1035 s4.1.3): name | u16 type | u16 class | u32 ttl | u16 rdlength | rdata */
static bool
edit_rr_read(const uint8_t *o, struct rd *r, struct dns_edit_rr *rr)
{
	struct rd rdata;
	size_t wire_len;

	rr->owner = dns_off(o, r);
	if (dns_name_read(o, r, NULL, &wire_len) != DNS_OK)
		return false;
	rr->fixed = dns_off(o, r);
	if (!rd_u16(r, &rr->type) || !rd_u16(r, &rr->class) || !rd_u32(r, &rr->ttl) ||
	    !rd_vec16(r, &rdata))
		return false;
	rr->rdata = dns_off(o, &rdata);
	rr->rdlen = (uint16_t)rdata.len;
	return true;
}

/*
 * The names of a shaped RDATA, read by dns_name_read()'s rules, and its length exact. An
 * empty RDATA passes (RFC 2136 s2.5 deletions carry none).
 */
static bool
edit_shape_check(const uint8_t *o, const struct dns_edit_rr *rr, const struct edit_shape *s)
{
	struct rd r = rd_make(o + rr->rdata, rr->rdlen), sub;
	size_t wire_len;

	if (rr->rdlen == 0)
		return true;
	if (!rd_skip(&r, s->pre))
		return false;
	for (unsigned int i = 0; i < s->strs; i++) {
		if (!rd_vec8(&r, &sub))
			return false;
	}
	for (unsigned int i = 0; i < s->names; i++) {
		if (dns_name_read(o, &r, NULL, &wire_len) != DNS_OK)
			return false;
	}
	return s->post < 0 || r.len == (size_t)s->post;
}

/* Pass 1, after dns_msg_parse(): the RDATA it does not read and the editor does. */
static bool
edit_check(const uint8_t *o, const struct dns_msg *m)
{
	struct rd r = rd_make(o + m->question_end, m->msg_len - m->question_end);
	uint32_t n = (uint32_t)m->ancount + m->nscount + m->arcount;
	const struct edit_shape *s;
	struct dns_edit_rr rr;

	for (uint32_t i = 0; i < n; i++) {
		if (!edit_rr_read(o, &r, &rr))
			return false;
		if (rr.type == DNS_TYPE_SVCB || rr.type == DNS_TYPE_HTTPS) {
			if (!dns_edit_svcb_check(o + rr.rdata, rr.rdlen))
				return false;
		} else if ((s = edit_shape(rr.type)) != NULL && !edit_shape_check(o, &rr, s)) {
			return false;
		}
	}
	return true;
}

static int
edit_chain_find(const struct dns_edit *e, size_t off)
{
	for (unsigned int k = 0; k < e->nb_chain; k++) {
		if (dns_name_eq(e->o, e->olen, e->chain[k].name, off))
			return (int)k;
	}
	return -1;
}

/*
 * Pass 2: dns_chain() of dns_msg.c over every CNAME of class IN in the answer section, not
 * only those among its first DNS_ANSWERS_MAX records, so no name a client would follow is
 * missed. False when there are more CNAMEs than that to track.
 */
static bool
edit_chain(struct dns_edit *e, const struct dns_msg *m)
{
	struct dns_edit_rr cn[DNS_ANSWERS_MAX], rr;
	struct rd r = rd_make(e->o + m->question_end, m->msg_len - m->question_end);
	unsigned int nb = 0, n = 1;

	for (unsigned int i = 0; i < m->ancount; i++) {
		if (!edit_rr_read(e->o, &r, &rr))
			return false;
		if (rr.type != DNS_TYPE_CNAME || rr.class != DNS_CLASS_IN)
			continue;
		if (nb == DNS_ANSWERS_MAX)
			return false;
		cn[nb++] = rr;
	}
	e->chain[0] = (struct dns_edit_link){ .name = DNS_HDR_LEN, .ttl = UINT32_MAX };
	e->nb_chain = 1;
	while (n <= DNS_CHAIN_MAX) {
		const struct dns_edit_rr *c = NULL;

		for (unsigned int i = 0; i < nb && c == NULL; i++) {
			if (dns_name_eq(e->o, e->olen, cn[i].owner, e->chain[n - 1].name))
				c = &cn[i];
		}
		if (c == NULL || edit_chain_find(e, c->rdata) >= 0)
			break;
		e->chain[n] = (struct dns_edit_link){
			.name = c->rdata,
			.ttl = dns_min(e->chain[n - 1].ttl, dns_ttl(c->ttl)),
		};
		e->nb_chain = ++n;
	}
	return true;
}

static bool
edit_shape_write(struct dns_edit *e, const struct dns_edit_rr *rr, const struct edit_shape *s)
{
	struct rd r = rd_make(e->o + rr->rdata, rr->rdlen), sub;
	size_t at, wire_len;

	if (rr->rdlen == 0)
		return true;
	if (!rd_skip(&r, s->pre))
		goto bad;
	for (unsigned int i = 0; i < s->strs; i++) {
		if (!rd_vec8(&r, &sub))
			goto bad;
	}
	if (!dns_edit_put(e, e->o + rr->rdata, dns_off(e->o, &r) - rr->rdata))
		return false;
	for (unsigned int i = 0; i < s->names; i++) {
		at = dns_off(e->o, &r);
		if (dns_name_read(e->o, &r, NULL, &wire_len) != DNS_OK)
			goto bad;
		if (!dns_edit_name(e, at))
			return false;
	}
	return dns_edit_put(e, r.p, r.len);
bad:
	e->bad = true;	/* edit_check() read it */
	return false;
}

/* One record, its owner and RDATA names compressed anew, RDLENGTH fixed; *rdlen_at set. */
static bool
edit_rr_write(struct dns_edit *e, const struct dns_edit_rr *rr, const uint32_t *chain_ttl,
    size_t *rdlen_at)
{
	const struct edit_shape *s;
	size_t at;
	bool ok;

	if (!dns_edit_name(e, rr->owner) || !dns_edit_put(e, e->o + rr->fixed, 10))
		return false;
	at = e->wlen - 2;
	if (rr->type == DNS_TYPE_SVCB || rr->type == DNS_TYPE_HTTPS)
		ok = dns_edit_svcb_write(e, rr, chain_ttl);
	else if ((s = edit_shape(rr->type)) != NULL)
		ok = edit_shape_write(e, rr, s);
	else
		ok = dns_edit_put(e, e->o + rr->rdata, rr->rdlen);
	if (!ok)
		return false;
	if (e->wlen - at - 2 > 0xffff) {	/* names written out in full */
		e->full = true;
		return false;
	}
	dns_edit_wr16(e->w + at, e->wlen - at - 2);
	*rdlen_at = at;
	return true;
}

/*
 * Pass 3: header, question, then each section. An A/AAAA record stays only if it is in the
 * answer, of class IN, owned by a chain name and keep() says so; the question's own
 * ipv4hint/ipv6hint likewise (dns_edit_svcb_write). Counts are written as they come out.
 */
static bool
edit_build(struct dns_edit *e, const struct dns_msg *m, struct edit_opt *opt)
{
	struct rd r = rd_make(e->o + m->question_end, m->msg_len - m->question_end);
	const uint16_t counts[3] = { m->ancount, m->nscount, m->arcount };
	struct dns_edit_rr rr;
	size_t rdlen_at;

	if (!dns_edit_put(e, e->o, DNS_HDR_LEN) || !dns_edit_name(e, DNS_HDR_LEN) ||
	    !dns_edit_put(e, e->o + m->question_end - 4, 4))
		return false;
	for (unsigned int sec = EDIT_ANSWER; sec <= EDIT_ADDITIONAL; sec++) {
		unsigned int kept = 0;

		for (unsigned int i = 0; i < counts[sec]; i++) {
			int k = -1;

			if (!edit_rr_read(e->o, &r, &rr)) {
				e->bad = true;
				return false;
			}
			if (sec == EDIT_ANSWER && rr.class == DNS_CLASS_IN &&
			    (rr.type == DNS_TYPE_A || rr.type == DNS_TYPE_AAAA ||
			    rr.type == DNS_TYPE_SVCB || rr.type == DNS_TYPE_HTTPS))
				k = edit_chain_find(e, rr.owner);
			if (rr.type == DNS_TYPE_A || rr.type == DNS_TYPE_AAAA) {
				if (k < 0)
					e->st->addrs_removed++;
				if (k < 0 || !dns_edit_offer(e, rr.type == DNS_TYPE_A ? 4 : 6,
				    e->o + rr.rdata, dns_min(dns_ttl(rr.ttl), e->chain[k].ttl)))
					continue;
			}
			if (!edit_rr_write(e, &rr, k >= 0 ? &e->chain[k].ttl : NULL, &rdlen_at))
				return false;
			kept++;
			if (opt->found)
				opt->after++;
			if (sec == EDIT_ADDITIONAL && rr.type == DNS_TYPE_OPT && !opt->found)
				*opt = (struct edit_opt){ .found = true, .rdlen_at = rdlen_at,
				    .end = e->wlen };
		}
		dns_edit_wr16(e->w + 6 + 2 * sec, kept);
	}
	if (e->wlen > DNS_MSG_MAX) {
		e->full = true;
		return false;
	}
	return true;
}

/* Move the in-place pointer of the name at *p by d if it goes to ins or past; step over. */
static bool
edit_shift_name(struct dns_edit *e, size_t *p, size_t ins, size_t d)
{
	size_t q = *p, t;

	while (q < e->wlen) {
		uint8_t b = e->w[q];

		if ((b & 0xc0) == 0xc0) {
			if (q + 1 >= e->wlen)
				return false;
			if ((t = (size_t)(b & 0x3f) << 8 | e->w[q + 1]) >= ins) {
				if ((t += d) >= DNS_PTR_REACH)
					return false;
				dns_edit_wr16(e->w + q, 0xc000 | t);
			}
			*p = q + 2;
			return true;
		}
		q += 1 + (size_t)b;
		if (b == 0) {
			*p = q;
			return true;
		}
	}
	return false;
}

/*
 * d bytes went in at ins, inside the OPT RDATA: the n records from p on, which follow it,
 * may point at names past it. Their names are what edit_build() wrote, so they read.
 */
static bool
edit_shift(struct dns_edit *e, size_t p, unsigned int n, size_t ins, size_t d)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct edit_shape *s;
		uint16_t rdlen;
		size_t q;

		if (!edit_shift_name(e, &p, ins, d) || e->wlen - p < 10)
			return false;
		s = edit_shape(dns_edit_rd16(e->w + p));
		rdlen = dns_edit_rd16(e->w + p + 8);
		p += 10;
		if (s != NULL && rdlen != 0) {
			q = p + s->pre;
			for (unsigned int j = 0; j < s->strs && q < e->wlen; j++)
				q += 1 + (size_t)e->w[q];
			for (unsigned int j = 0; j < s->names; j++) {
				if (!edit_shift_name(e, &q, ins, d))
					return false;
			}
		}
		p += rdlen;
	}
	return true;
}

/*
 * DNS_EDIT_SAME_LEN without an OPT record: the query had none, so RFC 6891 s7 forbids
 * adding one. The d bytes saved become one record of a private-use type, owned by the root,
 * at the end of the additional section: a record of a type it does not know is one a
 * client skips (RFC 3597), and nothing before it moves.
 */
static enum dns_edit_status
edit_pad_rr(struct dns_edit *e, size_t d)
{
	uint8_t *r = e->w + e->wlen;
	uint16_t arcount = dns_edit_rd16(e->w + 10);

	if (d < DNS_PAD_RR_MIN || d - DNS_PAD_RR_MIN > 0xffff || arcount == 0xffff)
		return DNS_EDIT_NO_ROOM;
	memset(r, 0, d);			/* the root, a TTL of 0, zero RDATA */
	dns_edit_wr16(r + 1, DNS_TYPE_PAD);
	dns_edit_wr16(r + 3, DNS_CLASS_IN);
	dns_edit_wr16(r + 9, d - DNS_PAD_RR_MIN);
	dns_edit_wr16(e->w + 10, arcount + 1u);
	e->wlen += d;
	return DNS_EDIT_OK;
}

/*
 * DNS_EDIT_SAME_LEN: the message is len - wlen bytes short. The first Padding option of
 * the OPT RDATA (RFC 7830: zero bytes, u16 code 12 | u16 length | padding) grows by that
 * much, or one is appended; an OPT whose options do not parse is not padded. len <= cap.
 */
static enum dns_edit_status
edit_pad(struct dns_edit *e, const struct edit_opt *opt, size_t len)
{
	uint8_t *w = e->w;
	size_t d, rdlen, ins = 0, pad_at = 0;
	struct rd r, v;
	uint16_t code;

	if (e->wlen > len)
		return DNS_EDIT_NO_ROOM;
	if ((d = len - e->wlen) == 0)
		return DNS_EDIT_OK;
	if (!opt->found)
		return edit_pad_rr(e, d);
	rdlen = dns_edit_rd16(w + opt->rdlen_at);
	r = rd_make(w + opt->rdlen_at + 2, rdlen);
	while (r.len > 0) {
		if (!rd_u16(&r, &code) || !rd_vec16(&r, &v))
			return DNS_EDIT_NO_ROOM;
		if (code == DNS_EDNS_PADDING && pad_at == 0) {
			pad_at = (size_t)(v.p - w) - 2;
			ins = (size_t)(v.p - w) + v.len;
		}
	}
	if (rdlen + d > 0xffff || (pad_at != 0 && dns_edit_rd16(w + pad_at) + d > 0xffff) ||
	    (pad_at == 0 && d < 4))
		return DNS_EDIT_NO_ROOM;
	if (pad_at == 0)
		ins = opt->end;
	memmove(w + ins + d, w + ins, e->wlen - ins);
	memset(w + ins, 0, d);
	if (pad_at != 0) {
		dns_edit_wr16(w + pad_at, dns_edit_rd16(w + pad_at) + d);
	} else {
		dns_edit_wr16(w + ins, DNS_EDNS_PADDING);
		dns_edit_wr16(w + ins + 2, d - 4);
	}
	dns_edit_wr16(w + opt->rdlen_at, rdlen + d);
	e->wlen += d;
	return edit_shift(e, opt->end + d, opt->after, ins, d) ? DNS_EDIT_OK : DNS_EDIT_NO_ROOM;
}

enum dns_edit_status
dns_edit(uint8_t *msg, size_t len, size_t cap, unsigned int flags, dns_keep_fn keep, void *arg,
    uint8_t *scratch, size_t scratch_len, size_t *out_len, struct dns_edit_stats *st)
{
	uint16_t map[DNS_PTR_REACH];
	struct dns_edit_stats none;
	struct edit_opt opt = { .found = false };
	struct dns_msg m;
	struct dns_edit e;
	enum dns_edit_status rc = DNS_EDIT_OK;

	if (st == NULL)
		st = &none;
	*st = (struct dns_edit_stats){ 0 };
	if (dns_msg_parse(msg, len, &m) != DNS_OK || !m.qr || !m.has_question ||
	    !edit_check(msg, &m))
		return DNS_EDIT_MALFORMED;
	if (len > cap || scratch == NULL || scratch_len < len)
		return DNS_EDIT_NO_ROOM;
	/* Never longer than it came: the client's EDNS UDP size (or 512) holds it. */
	e = (struct dns_edit){
		.o = scratch, .olen = len, .w = msg, .cap = len, .map = map,
		.map_len = len < DNS_PTR_REACH ? len : DNS_PTR_REACH,
		.flags = flags, .keep = keep, .arg = arg, .st = st,
	};
	memcpy(scratch, msg, len);
	if (!edit_chain(&e, &m))
		return DNS_EDIT_NO_ROOM;
	memset(map, 0, e.map_len * sizeof(map[0]));
	if (!edit_build(&e, &m, &opt))
		rc = e.bad ? DNS_EDIT_MALFORMED : DNS_EDIT_NO_ROOM;
	else if ((flags & DNS_EDIT_SAME_LEN) != 0)
		rc = edit_pad(&e, &opt, len);
	if (rc != DNS_EDIT_OK) {
		memcpy(msg, scratch, len);
		return rc;
	}
	*out_len = e.wlen;
	return DNS_EDIT_OK;
}
