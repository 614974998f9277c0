/*
 * DNS answer editor (see sni/dns_edit.h). Two passes over the message dns_msg_parse()
 * accepted:
 *
 *  1. scan (dns_edit_scan.c): the RDATA the edit must read that the parser does not, the
 *     names of the types that may hold compressed names and every HTTPS/SVCB RDATA, so a
 *     message found bad later never had keep() called for it; the CNAME chain from the
 *     question name, as dns_msg_parse() follows it; and whether only keep() could change
 *     the message. If so, keep() is asked, and when it keeps everything the edit is done.
 *     A message the parser found plain (struct dns_msg) is all that already: keep() is
 *     asked at once, and the scan made only when an address goes;
 *  2. build: the message copied to scratch, then written again into msg record by record,
 *     every name label by label through an old -> new offset map (dns_edit_name(), in
 *     dns_edit_write.c), keep()'s answers from pass 1 given again if it was asked there.
 *
 * With DNS_EDIT_SAME_LEN the bytes saved become EDNS Padding afterwards (dns_edit_pad.c).
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

#define DNS_MSG_MAX		0xffff	/* a UDP payload or a TCP-framed message, RFC 1035 s4.2.2 */

enum edit_section {
	EDIT_ANSWER,
	EDIT_AUTHORITY,
	EDIT_ADDITIONAL,
};

static bool
edit_shape_write(struct dns_edit *e, const struct dns_edit_rr *rr,
    const struct dns_edit_shape *s)
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
		if (dns_name_read(e->o, &r, &wire_len) != DNS_OK)
			goto bad;
		if (!dns_edit_name(e, at))
			return false;
	}
	return dns_edit_put(e, r.p, r.len);
bad:
	e->bad = true;	/* dns_edit_scan() read it */
	return false;
}

/* One record, its owner and RDATA names compressed anew, RDLENGTH fixed; *rdlen_at set. */
static bool
edit_rr_write(struct dns_edit *e, const struct dns_edit_rr *rr, const uint32_t *chain_ttl,
    size_t *rdlen_at)
{
	const struct dns_edit_shape *s;
	size_t at;
	bool ok;

	if (!dns_edit_name(e, rr->owner) || !dns_edit_put(e, e->o + rr->fixed, 10))
		return false;
	at = e->wlen - 2;
	if (rr->type == DNS_TYPE_SVCB || rr->type == DNS_TYPE_HTTPS)
		ok = dns_edit_svcb_write(e, rr, chain_ttl);
	else if ((s = dns_edit_shape(rr->type)) != NULL)
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
edit_build(struct dns_edit *e, const struct dns_msg *m, struct dns_edit_opt *opt)
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

			if (!dns_edit_rr_read(e->o, &r, &rr)) {
				e->bad = true;
				return false;
			}
			if (sec == EDIT_ANSWER && rr.class == DNS_CLASS_IN &&
			    (rr.type == DNS_TYPE_A || rr.type == DNS_TYPE_AAAA ||
			    rr.type == DNS_TYPE_SVCB || rr.type == DNS_TYPE_HTTPS))
				k = dns_edit_chain_find(e->o, e->olen, e->chain, e->nb_chain,
				    rr.owner);
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
				*opt = (struct dns_edit_opt){ .found = true, .rdlen_at = rdlen_at,
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

/* keep()'s answers in pass 1, given again in the same order by the build. */
struct edit_replay {
	uint64_t kept;			/* bit i: the i-th address offered was kept */
	unsigned int i;
};

static bool
edit_replay_keep(void *arg, const struct dns_addr *a)
{
	struct edit_replay *r = arg;

	(void)a;
	return r->i < 64 && (r->kept >> r->i++ & 1) != 0;
}

/* Were all n addresses offered kept (r->kept)? */
static bool
edit_kept_all(const struct edit_replay *r, unsigned int n)
{
	return n == 64 ? r->kept == UINT64_MAX : r->kept == (1ull << n) - 1;
}

/*
 * Pass 1's shortcut: offer s's addresses (in the order the build would) and record the
 * answers in *r. True when every one was kept: the message stays as it is.
 */
static bool
edit_offer_all(struct dns_edit *e, const struct dns_edit_scan *s, const uint8_t *msg,
    struct edit_replay *r)
{
	*r = (struct edit_replay){ .kept = 0 };
	for (unsigned int i = 0; i < s->nb_addrs; i++)
		if (dns_edit_offer(e, s->addrs[i].family, msg + s->addrs[i].rdata, s->addrs[i].ttl))
			r->kept |= 1ull << i;
	return edit_kept_all(r, s->nb_addrs);
}

/*
 * The shortcut for a message the parser found plain (struct dns_msg), with no scan at all:
 * its addresses are the ones the scan would list, in its order and with its TTLs.
 */
static bool
edit_offer_plain(struct dns_edit *e, const struct dns_msg *m, struct edit_replay *r)
{
	*r = (struct edit_replay){ .kept = 0 };
	for (unsigned int i = 0; i < m->nb_addrs; i++)
		if (dns_edit_offer_addr(e, &m->addrs[i]))
			r->kept |= 1ull << i;
	return edit_kept_all(r, m->nb_addrs);
}

/*
 * The edit past the plain shortcut: the scan, then the build. e holds the message (w, olen:
 * len bytes), flags, keep() and st; asked, when not NULL, keep()'s answers to a plain
 * message's addresses already, which the build is given again rather than ask twice.
 */
static enum dns_edit_status
edit_rest(struct dns_edit *e, const struct dns_msg *m, size_t cap, uint8_t *scratch,
    size_t scratch_len, size_t *out_len, const struct edit_replay *asked)
{
	uint16_t map[DNS_PTR_REACH];
	struct dns_edit_opt opt = { .found = false };
	struct dns_edit_scan s;
	struct edit_replay replay;
	uint8_t *msg = e->w;
	size_t len = e->olen;
	enum dns_edit_status rc = DNS_EDIT_OK;

	/* Never longer than it came: the client's EDNS UDP size (or 512) holds it. */
	*e = (struct dns_edit){
		.o = scratch, .olen = len, .w = msg, .cap = len, .map = map,
		.map_len = len < DNS_PTR_REACH ? len : DNS_PTR_REACH,
		.flags = e->flags, .keep = e->keep, .arg = e->arg, .st = e->st,
	};
	if (!dns_edit_scan(msg, len, m, e->flags, &s))
		return DNS_EDIT_MALFORMED;
	if (len > cap || scratch == NULL || scratch_len < len || s.too_many)
		return DNS_EDIT_NO_ROOM;
	e->chain = s.chain;
	e->nb_chain = s.nb_chain;
	/* never (what is plain is same), and keep() is not asked twice: fail closed */
	if (asked != NULL && !s.same)
		return DNS_EDIT_NO_ROOM;
	if (asked != NULL) {
		replay = *asked;
	} else if (s.same && edit_offer_all(e, &s, msg, &replay)) {
		*out_len = m->msg_len;
		return DNS_EDIT_OK;
	}
	if (s.same) {
		/* an address goes: the build asks again, and gets the same answers */
		*e->st = (struct dns_edit_stats){ 0 };
		replay.i = 0;
		e->keep = edit_replay_keep;
		e->arg = &replay;
	}
	memcpy(scratch, msg, len);
	memset(map, 0, e->map_len * sizeof(map[0]));
	if (!edit_build(e, m, &opt))
		rc = e->bad ? DNS_EDIT_MALFORMED : DNS_EDIT_NO_ROOM;
	else if ((e->flags & DNS_EDIT_SAME_LEN) != 0)
		rc = dns_edit_pad(e, &opt, len);
	if (rc != DNS_EDIT_OK) {
		memcpy(msg, scratch, len);
		return rc;
	}
	*out_len = e->wlen;
	e->st->rewritten = 1;
	return DNS_EDIT_OK;
}

_Static_assert(DNS_EDIT_PLAIN_REACH == DNS_PTR_REACH, "dns_edit_plain() tests the parser's reach");

enum dns_edit_status
dns_edit_parsed(uint8_t *msg, size_t len, const struct dns_msg *m, size_t cap,
    unsigned int flags, dns_keep_fn keep, void *arg, uint8_t *scratch, size_t scratch_len,
    size_t *out_len, struct dns_edit_stats *st)
{
	struct dns_edit_stats none;
	struct edit_replay replay;
	struct dns_edit e;
	bool asked = false;

	if (st == NULL)
		st = &none;
	*st = (struct dns_edit_stats){ 0 };
	if (!m->qr || !m->has_question)
		return DNS_EDIT_MALFORMED;
	/*
	 * What the scan would find of a plain message, the parser found: it checks, and is
	 * same. Only keep() and the counts are the shortcut's; the rest of e is set after.
	 */
	e.keep = keep;
	e.arg = arg;
	e.st = st;
	if (dns_edit_plain(m, len, cap, flags, scratch, scratch_len)) {
		if (edit_offer_plain(&e, m, &replay)) {
			*out_len = m->msg_len;
			return DNS_EDIT_OK;
		}
		asked = true;
	}
	e.w = msg;
	e.olen = len;
	e.flags = flags;
	return edit_rest(&e, m, cap, scratch, scratch_len, out_len, asked ? &replay : NULL);
}

enum dns_edit_status
dns_edit_asked_rest(uint8_t *msg, size_t len, const struct dns_msg *m, size_t cap,
    unsigned int flags, uint64_t kept, uint8_t *scratch, size_t scratch_len, size_t *out_len,
    struct dns_edit_stats *st)
{
	struct dns_edit_stats none;
	struct edit_replay asked = { .kept = kept };
	struct dns_edit e = { .w = msg, .olen = len, .flags = flags, .st = st != NULL ? st : &none };

	*e.st = (struct dns_edit_stats){ 0 };
	if (!dns_edit_plain(m, len, cap, flags, scratch, scratch_len))
		return DNS_EDIT_NO_ROOM;	/* not the caller's to ask: fail closed */
	return edit_rest(&e, m, cap, scratch, scratch_len, out_len, &asked);
}

enum dns_edit_status
dns_edit(uint8_t *msg, size_t len, size_t cap, unsigned int flags, dns_keep_fn keep, void *arg,
    uint8_t *scratch, size_t scratch_len, size_t *out_len, struct dns_edit_stats *st)
{
	struct dns_msg m;

	if (dns_msg_parse(msg, len, &m) != DNS_OK) {
		if (st != NULL)
			*st = (struct dns_edit_stats){ 0 };
		return DNS_EDIT_MALFORMED;
	}
	return dns_edit_parsed(msg, len, &m, cap, flags, keep, arg, scratch, scratch_len,
	    out_len, st);
}
