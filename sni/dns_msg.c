/*
 * DNS message reader (RFC 1035 s4): header, question, every resource record walked and
 * checked, and the A/AAAA addresses on the CNAME chain from the question name.
 *
 * Names are never decompressed except the question name: records are remembered by the
 * offset of their owner name and compared in place (dns_name_eq), so a response costs no copy
 * per record and the parser needs only a small, fixed stack.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/dns.h"
#include "sni/rd.h"
#include "dns_int.h"
#include "dns_chain.h"
#include "dns_fast.h"
#include "dns_owner.h"

/*
 * What makes a response plain (struct dns_msg), as its records are read: the labels the
 * editor would write names at (dns_name_mark()), and the address records seen.
 */
struct dns_plain {
	bool ok;
	bool q_marked;		/* the lone question's labels are marked in labels */
	unsigned int addrs;
	unsigned int cnames;	/* CNAME records, any section: none, no chain to follow */
	uint64_t labels[DNS_PTR_REACH / 64];
};

/*
 * The name of a lone question, at the end of the header: as dns_name_read_hops() reads it,
 * copied out lower-cased (*upper: it held a capital) and its labels marked in labels (as
 * dns_name_mark() would), in one walk. A pointer there could only go back into the header,
 * which no pointer may, so any byte above 63 ends it malformed; so does a label past the
 * message or past 255 bytes: a label other than the root must leave room for the length
 * byte after it, the one test for both that it fits and that the next one can be read.
 */
static inline enum dns_status
dns_question_name(const uint8_t *msg, struct rd *r, uint8_t *out, size_t *wire_len,
    uint64_t *labels, bool *upper)
{
	const size_t n = r->len < DNS_NAME_WIRE_MAX ? r->len : DNS_NAME_WIRE_MAX;
	const size_t off = dns_off(msg, r);
	size_t at = 0;
	uint8_t b;

	if (n == 0)
		return DNS_MALFORMED;
	for (;;) {
		if ((b = r->p[at]) > 63)
			return DNS_MALFORMED;
		labels[(off + at) / 64] |= 1ull << ((off + at) % 64);
		at += 1 + (size_t)b;
		if (b == 0)
			break;
		if (at >= n)
			return DNS_MALFORMED;
	}
	*upper = copy16_lower(out, r->p, at);
	*wire_len = at;
	return rd_skip(r, at) ? DNS_OK : DNS_MALFORMED;
}

/*
 * Question (RFC 1035 s4.1.2): name | u16 qtype | u16 qclass. Only a lone question is kept:
 * with two, which one a resolver answers is its choice, so has_question stays false and
 * the dataplane refuses the query. Inline: one call a message, whose spills cost more than
 * it does.
 */
static inline __attribute__((always_inline)) enum dns_status
dns_questions(const uint8_t *msg, struct rd *r, struct dns_msg *out, struct dns_plain *pl)
{
	size_t wire_len;
	uint16_t qtype, qclass;

	if (out->qdcount == 1) {
		/*
		 * its labels marked as they are read (dns_name_mark()); marked whatever pl->ok
		 * says (no test a label), and read only while it holds
		 */
		pl->q_marked = pl->ok;
		if (dns_question_name(msg, r, out->qname, &wire_len, pl->labels,
		    &out->qname_upper) != DNS_OK || r->len < 4)
			return DNS_MALFORMED;
		out->has_question = true;
		out->qname_len = (uint8_t)wire_len;
		out->qtype = rd_be16(r->p);
		out->qclass = rd_be16(r->p + 2);
		out->question_end = dns_off(msg, r) + 4;
		return rd_skip(r, 4) ? DNS_OK : DNS_MALFORMED;
	}
	for (unsigned int i = 0; i < out->qdcount; i++) {
		if (dns_name_read(msg, r, &wire_len) != DNS_OK ||
		    !rd_u16(r, &qtype) || !rd_u16(r, &qclass))
			return DNS_MALFORMED;
	}
	out->question_end = dns_off(msg, r);
	return DNS_OK;
}

/*
 * A record's part in whether the response is plain: its names and its type. An owner that
 * is a pointer to the question, or the pointer an earlier owner was (owner_seen), points
 * at a marked label: the lone question's labels were marked while pl->ok held, the
 * earlier owner's target was found marked, and pl->ok never holds again once it fails.
 */
static void
dns_plain_rr(struct dns_plain *pl, const uint8_t *msg, size_t owner, bool owner_seen,
    uint16_t type, const struct rd *rdata)
{
	if (!pl->ok)
		return;
	if (!owner_seen && !dns_name_mark(pl->labels, msg, owner)) {
		pl->ok = false;
		return;
	}
	switch (type) {
	case DNS_TYPE_A:
	case DNS_TYPE_AAAA:
		/*
		 * all of them: dns_msg.addrs lists those in the answer, of class IN and on the
		 * chain, and the editor removes any other
		 */
		pl->addrs++;
		break;
	case DNS_TYPE_CNAME:
		pl->ok = dns_name_mark(pl->labels, msg, dns_off(msg, rdata));
		break;
	case DNS_TYPE_SOA:
		pl->ok = dns_soa_mark(pl->labels, msg, *rdata);
		break;
	case DNS_TYPE_OPT:
		break;
	default:
		/* names the parser does not read, or HTTPS/SVCB params the editor may change */
		pl->ok = false;
		break;
	}
}

/* The types the chain reads (dns_chain()), a bit each. */
#define DNS_CHAIN_TYPES	(1u << DNS_TYPE_A | 1u << DNS_TYPE_AAAA | 1u << DNS_TYPE_CNAME)
_Static_assert(DNS_TYPE_AAAA < 32 && DNS_TYPE_CNAME < 32, "DNS_CHAIN_TYPES holds 32 bits");

/*
 * Resource record (RFC 1035 s4.1.3):
 *   name | u16 type | u16 class | u32 ttl | u16 rdlength | rdata
 * RDATA must fill RDLENGTH exactly where we know its shape: A is 4 bytes (RFC 1035 s3.4.1),
 * AAAA 16 (RFC 3596 s2.2), CNAME one name (RFC 1035 s3.3.1). An OPT (RFC 6891 s6.1.1) is
 * only taken from the additional section; its owner must be the root and there may be one.
 * The three sections are one walk: the records follow each other, only the section of
 * each tells them apart (the answers come first, so an answer's index is i).
 */
static enum dns_status
dns_rrs(const uint8_t *msg, struct rd *r, struct dns_msg *out, struct dns_rr *keep,
    unsigned int *nb_keep, struct dns_plain *pl)
{
	const unsigned int an = out->ancount, add_from = an + out->nscount;
	const unsigned int total = add_from + out->arcount;
	const unsigned int an_keep = an < DNS_ANSWERS_MAX ? an : DNS_ANSWERS_MAX;
	struct dns_owners o = {
		.qname_len = out->has_question ? out->qname_len : 0,
		.q_end = (uint16_t)(pl->q_marked ? DNS_HDR_LEN + out->qname_len : 0),
		.labels = pl->labels,
	};
	unsigned int nk = 0;	/* a register's, not *nb_keep's memory, a record */
	/* dns_chain() follows the chain from the lone question's name, its first link */
	bool direct = out->qr && out->has_question;

	for (unsigned int i = 0; i < total; i++) {
		size_t owner = dns_off(msg, r);
		size_t owner_len, target_len = 0;
		unsigned int hops;
		uint16_t type, class;
		uint32_t ttl;
		struct rd rdata;
		enum dns_owner_how how = dns_owner_read(msg, r, &o, &owner_len);

		if (how == DNS_OWNER_BAD)
			return DNS_MALFORMED;
		if (how == DNS_OWNER_READ && i < an && (msg[owner] & 0xc0) != 0xc0)
			out->an_owners_inline++;	/* 16 bits: a record takes 11 bytes or more */
		if (!dns_rr_fixed(r, &type, &class, &ttl, &rdata))
			return DNS_MALFORMED;
		switch (type) {
		case DNS_TYPE_A:
			if (rdata.len != 4)
				return DNS_MALFORMED;
			break;
		case DNS_TYPE_AAAA:
			if (rdata.len != 16)
				return DNS_MALFORMED;
			break;
		case DNS_TYPE_CNAME: {
			struct rd target = rdata;

			pl->cnames++;

			if (dns_name_read_hops(msg, &target, &target_len, &hops) != DNS_OK ||
			    target.len != 0)
				return DNS_MALFORMED;
			/* the owner of the addresses that follow, usually */
			dns_owners_learn(&o, dns_off(msg, &rdata), dns_off(msg, &target),
			    target_len, hops);
			break;
		}
		case DNS_TYPE_OPT:
			if (i < add_from)
				break;
			if (out->edns || owner_len != 1)
				return DNS_MALFORMED;
			out->edns = true;
			out->edns_udp_size = class;
			break;
		default:
			break;
		}
		dns_plain_rr(pl, msg, owner, how == DNS_OWNER_SEEN, type, &rdata);
		/* Only the first DNS_ANSWERS_MAX answers count for the chain; all are checked. */
		if (i >= an_keep || class != DNS_CLASS_IN || type > 31 ||
		    (DNS_CHAIN_TYPES >> type & 1) == 0)
			continue;
		if (type != DNS_TYPE_CNAME) {
			/*
			 * An address owned by a pointer to the question's name is on the chain,
			 * its first link (the chain's TTL, none yet): put in addrs at once, while
			 * no address before it waits for the chain (answer order).
			 */
			if (direct && rd_be16(msg + owner) == (0xc000 | DNS_HDR_LEN)) {
				dns_addr_put(out, type, rdata.p, dns_ttl(ttl));
				continue;
			}
			direct = false;
		}
		keep[nk++] = (struct dns_rr){
			.owner = owner,
			.rdata = dns_off(msg, &rdata),
			.ttl = dns_ttl(ttl),
			.type = type,
			.owner_len = (uint8_t)owner_len,
			.target_len = (uint8_t)target_len,
		};
	}
	*nb_keep = nk;
	return DNS_OK;
}

/*
 * The records past the question the short way (dns_fast_rrs()), when the header and the
 * question allow the usual shape: *r past them and out complete, or false with *r, *pl
 * and out's answer fields as they were, for dns_rrs() to read them as though it had not
 * been tried. Their labels marked since are unmarked, and the question's marked again.
 */
static bool
dns_fast_try(const uint8_t *msg, size_t len, struct rd *r, struct dns_msg *out,
    struct dns_plain *pl)
{
	struct rd f = *r;
	bool plain;

	if (!pl->ok || !out->has_question || out->nscount > 1 || out->arcount > 1)
		return false;
	if (dns_fast_rrs(msg, len, &f, out, pl->labels, &plain)) {
		*r = f;
		out->msg_len = dns_off(msg, r);
		out->plain = plain;
		return true;
	}
	out->nb_addrs = 0;
	out->addrs_more = false;
	out->chain_len = 0;
	out->edns = false;
	out->edns_udp_size = 0;
	for (size_t i = 0; i <= len / 64; i++)
		pl->labels[i] = 0;
	dns_name_mark(pl->labels, msg, DNS_HDR_LEN);
	return false;
}

/*
 * Header (RFC 1035 s4.1.1):
 *   u16 id | u16 flags (qr 1, opcode 4, aa tc rd ra z ad cd, rcode 4) |
 *   u16 qdcount | u16 ancount | u16 nscount | u16 arcount
 */
static inline __attribute__((always_inline)) enum dns_status
dns_msg_read(const uint8_t *buf, size_t len, struct dns_msg *out, bool fast)
{
	struct rd r = rd_make(buf, len);
	struct dns_rr rrs[DNS_ANSWERS_MAX];
	unsigned int nb_rrs = 0;
	struct dns_plain pl;

	if (len < DNS_HDR_LEN)
		return DNS_MALFORMED;
	out->id = rd_be16(buf);
	out->flags = rd_be16(buf + 2);
	out->qdcount = rd_be16(buf + 4);
	out->ancount = rd_be16(buf + 6);
	out->nscount = rd_be16(buf + 8);
	out->arcount = rd_be16(buf + 10);
	rd_skip(&r, DNS_HDR_LEN);
	out->qr = (out->flags & 0x8000) != 0;
	out->opcode = (uint8_t)(out->flags >> 11 & 0xf);
	out->rcode = (uint8_t)(out->flags & 0xf);
	out->has_question = false;
	out->qname_len = 0;
	out->qname_upper = false;
	out->qtype = out->qclass = 0;
	out->edns = false;
	out->edns_udp_size = 0;
	out->nb_addrs = 0;
	out->addrs_more = false;
	out->chain_len = 0;
	out->an_owners_inline = 0;
	out->plain = false;
	pl.ok = out->qr && out->ancount <= DNS_ANSWERS_MAX && len < DNS_PTR_REACH;
	pl.q_marked = false;
	pl.addrs = pl.cnames = 0;
	/* word by word: a message's few words cost less than a call */
	for (size_t i = 0; pl.ok && i <= len / 64; i++)
		pl.labels[i] = 0;

	if (dns_questions(buf, &r, out, &pl) != DNS_OK)
		return DNS_MALFORMED;
	if (fast && dns_fast_try(buf, len, &r, out, &pl))
		return DNS_OK;
	if (dns_rrs(buf, &r, out, rrs, &nb_rrs, &pl) != DNS_OK)
		return DNS_MALFORMED;
	out->msg_len = dns_off(buf, &r);

	if (out->qr && out->has_question) {
		/* nothing kept for it (every address put already): no chain to follow */
		if (nb_rrs != 0)
			dns_chain(buf, len, rrs, nb_rrs, pl.cnames != 0, out);
		/* every address record is one of addrs (so none past DNS_ADDRS_MAX either) */
		out->plain = pl.ok && out->nb_addrs == pl.addrs;
	}
	return DNS_OK;
}

enum dns_status
dns_msg_parse(const uint8_t *buf, size_t len, struct dns_msg *out)
{
	return dns_msg_read(buf, len, out, true);
}

enum dns_status
dns_msg_parse_full(const uint8_t *buf, size_t len, struct dns_msg *out)
{
	return dns_msg_read(buf, len, out, false);
}

/*
 * DNS over TCP (RFC 1035 s4.2.2): u16 length | message. A length below the header size
 * can never frame a message, and waiting for more bytes would not change that.
 */
enum dns_status
dns_tcp_next(struct rd *stream, struct rd *msg)
{
	struct rd s = *stream;
	uint16_t n;

	if (!rd_u16(&s, &n))
		return DNS_NEED_MORE;
	if (n < DNS_HDR_LEN)
		return DNS_MALFORMED;
	if (!rd_sub(&s, n, msg))
		return DNS_NEED_MORE;
	*stream = s;
	return DNS_OK;
}
