/*
 * The usual response, read the short way: after its lone question, answers that follow
 * the CNAME chain in order, each owned by a lone pointer to the chain's last name (the
 * question's, 0xc00c, then each CNAME's target where it stands), of class IN and type A,
 * AAAA or CNAME, or of a type neither reads nor the editor keeps (HTTPS: not plain); an SOA
 * alone in authority; an OPT alone in additional. Internal to dns_msg.c.
 *
 * What it finds is what dns_rrs() and dns_chain() find of such a message:
 * - an owner that is a pointer to the question is seen (dns_owner_read()); one to a
 *   CNAME's target reads through one hop more exactly as the target did (dns_owner.h),
 *   and points at a marked label when the target starts with one (dns_name_mark() of the
 *   CNAME marked it). Within DNS_PTR_HOPS_MAX: a target whose pointer is at a marked label
 *   goes on to the question or an earlier target's in-place labels, each hop to an
 *   earlier one, so it takes no more hops than the chain has links before it;
 * - dns_chain() rebuilds the same chain: the first CNAME owned by the last link is the
 *   one read here (every one before it is owned by an earlier link, a pointer straight
 *   to another link being no pointer to the last, dns_owner_is_last()), and its target
 *   ends the chain or not as dns_chain_find() says here of the same links;
 * - every address is on the link its owner points at, with the chain's TTL so far, and
 *   in answer order: the question's come before any CNAME, dns_rrs()'s direct ones;
 * - the response is plain unless an answer is opaque: no name points at an unmarked
 *   label, no address is off the chain.
 * Anything else, or what it is not sure of (a name it reads badly, more addresses than
 * DNS_ADDRS_MAX, a chain past DNS_CHAIN_MAX), is left to the full reader: false, with
 * out's answer fields and labels no longer as they were. It never finds a message
 * malformed: the full reader, reading it anew, does.
 */
#ifndef SNI_DNS_FAST_H
#define SNI_DNS_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sni/dns.h"
#include "sni/rd.h"
#include "dns_int.h"
#include "dns_chain.h"

/*
 * A record at *r owned by the lone pointer ptr (0xc000 | offset): dns_rr_fixed() of what
 * follows the owner, the owner's two bytes and the fixed ten checked at once.
 */
static inline bool
dns_fast_rr(struct rd *r, uint16_t ptr, uint16_t *type, uint16_t *class, uint32_t *ttl,
    struct rd *rdata)
{
	size_t n;

	if (r->len < 12 || rd_be16(r->p) != ptr || r->len - 12 < (n = rd_be16(r->p + 10)))
		return false;
	*type = rd_be16(r->p + 2);
	*class = rd_be16(r->p + 4);
	*ttl = rd_be32(r->p + 6);
	*rdata = rd_make(r->p + 12, n);
	r->p += 12 + n;
	r->len -= 12 + n;
	return true;
}

/* The RDATA of a CNAME of the chain's last link (of *n): its target the next link, or false. */
static inline bool
dns_fast_cname(const uint8_t *msg, size_t len, struct rd rdata, uint32_t ttl,
    uint64_t *labels, struct dns_link *chain, unsigned int *n)
{
	size_t off = dns_off(msg, &rdata), target_len;
	struct rd target = rdata;
	unsigned int hops;

	if (*n > DNS_CHAIN_MAX || rdata.len == 0 || (rdata.p[0] & 0xc0) != 0 ||
	    dns_name_read_hops(msg, &target, &target_len, &hops) != DNS_OK || target.len != 0 ||
	    !dns_name_mark(labels, msg, off) ||
	    dns_chain_find(msg, len, chain, *n, off, target_len) >= 0)
		return false;
	chain[(*n)++] = (struct dns_link){ .name = off, .ttl = ttl, .len = (uint8_t)target_len };
	return true;
}

/*
 * An answer of a type the chain does not read and the editor writes anew (HTTPS, SVCB,
 * names it does not read: dns_plain_rr()): the response is no longer plain, nothing else.
 */
static inline bool
dns_fast_opaque(uint16_t type)
{
	return type != DNS_TYPE_A && type != DNS_TYPE_AAAA && type != DNS_TYPE_CNAME &&
	    type != DNS_TYPE_SOA && type != DNS_TYPE_OPT;
}

/*
 * The SOA alone in authority (a negative answer's), its owner read in full (what
 * dns_owner_read() finds through a name it knows is what this finds) and its names marked
 * as dns_plain_rr() marks them; false for one dns_soa_mark() does not find plain.
 */
static inline bool
dns_fast_soa(const uint8_t *msg, struct rd *r, uint64_t *labels)
{
	size_t owner = dns_off(msg, r), owner_len;
	unsigned int hops;
	uint16_t type, class;
	uint32_t ttl;
	struct rd rdata;

	return dns_name_read_hops(msg, r, &owner_len, &hops) == DNS_OK &&
	    dns_name_mark(labels, msg, owner) && dns_rr_fixed(r, &type, &class, &ttl, &rdata) &&
	    type == DNS_TYPE_SOA && dns_soa_mark(labels, msg, rdata);
}

/* The OPT alone in additional: the root, its fixed fields; its RDATA no part of the answer. */
static inline bool
dns_fast_opt(struct rd *r, struct dns_msg *out)
{
	uint16_t type, class;
	uint32_t ttl;
	struct rd rdata;

	if (r->len < 1 || r->p[0] != 0)
		return false;
	rd_skip(r, 1);
	if (!dns_rr_fixed(r, &type, &class, &ttl, &rdata) || type != DNS_TYPE_OPT)
		return false;
	out->edns = true;
	out->edns_udp_size = class;
	return true;
}

/*
 * The records after the question at *r of a response read up to it (dns_msg_parse():
 * header, lone question, labels marked, shorter than DNS_PTR_REACH, ancount within
 * DNS_ANSWERS_MAX, nscount and arcount at most 1), when they are of the usual shape: its
 * chain and addresses into out, *plain false when an answer is opaque.
 */
static inline bool
dns_fast_rrs(const uint8_t *msg, size_t len, struct rd *r, struct dns_msg *out,
    uint64_t *labels, bool *plain)
{
	struct dns_link chain[DNS_CHAIN_MAX + 1];
	unsigned int n = 1;
	size_t last = DNS_HDR_LEN;	/* chain[n - 1].name, in a register */
	uint16_t type, class;
	uint32_t ttl;
	struct rd rdata;

	chain[0] = (struct dns_link){ .name = DNS_HDR_LEN, .ttl = UINT32_MAX,
		.len = out->qname_len };
	*plain = true;
	for (unsigned int i = 0; i < out->ancount; i++) {
		if (!dns_fast_rr(r, (uint16_t)(0xc000 | last), &type, &class, &ttl, &rdata))
			return false;
		ttl = dns_min(dns_ttl(ttl), chain[n - 1].ttl);
		if (class == DNS_CLASS_IN && ((type == DNS_TYPE_A && rdata.len == 4) ||
		    (type == DNS_TYPE_AAAA && rdata.len == 16))) {
			if (!dns_addr_put(out, type, rdata.p, ttl))
				return false;
		} else if (class == DNS_CLASS_IN && type == DNS_TYPE_CNAME) {
			if (!dns_fast_cname(msg, len, rdata, ttl, labels, chain, &n))
				return false;
			last = chain[n - 1].name;
		} else if (dns_fast_opaque(type)) {
			*plain = false;
		} else {
			return false;
		}
	}
	out->chain_len = (uint8_t)(n - 1);
	return (out->nscount == 0 || dns_fast_soa(msg, r, labels)) &&
	    (out->arcount == 0 || dns_fast_opt(r, out));
}

#endif
