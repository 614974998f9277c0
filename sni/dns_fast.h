/*
 * The usual response, read the short way: after its lone question, answers that follow
 * the CNAME chain in order, each owned by a lone pointer to the chain's last name (the
 * question's, 0xc00c, then each CNAME's target where it stands), of class IN and type A,
 * AAAA or CNAME; nothing in authority; an OPT alone in additional. Internal to dns_msg.c.
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
 * - the response is plain: no name points at an unmarked label, no address off the chain.
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
 * The records after the question at *r of a response read up to it (dns_msg_parse():
 * header, lone question, labels marked, shorter than DNS_PTR_REACH, ancount within
 * DNS_ANSWERS_MAX), when they are of the usual shape: its chain and addresses into out.
 */
static inline bool
dns_fast_rrs(const uint8_t *msg, size_t len, struct rd *r, struct dns_msg *out,
    uint64_t *labels)
{
	struct dns_link chain[DNS_CHAIN_MAX + 1];
	unsigned int n = 1;
	uint16_t type, class;
	uint32_t ttl;
	struct rd rdata;

	chain[0] = (struct dns_link){ .name = DNS_HDR_LEN, .ttl = UINT32_MAX,
		.len = out->qname_len };
	for (unsigned int i = 0; i < out->ancount; i++) {
		if (r->len < 2 || rd_be16(r->p) != (0xc000 | chain[n - 1].name))
			return false;
		rd_skip(r, 2);
		if (!dns_rr_fixed(r, &type, &class, &ttl, &rdata) || class != DNS_CLASS_IN)
			return false;
		ttl = dns_min(dns_ttl(ttl), chain[n - 1].ttl);
		if ((type == DNS_TYPE_A && rdata.len == 4) ||
		    (type == DNS_TYPE_AAAA && rdata.len == 16)) {
			if (!dns_addr_put(out, type, rdata.p, ttl))
				return false;
		} else if (type != DNS_TYPE_CNAME ||
		    !dns_fast_cname(msg, len, rdata, ttl, labels, chain, &n)) {
			return false;
		}
	}
	out->chain_len = (uint8_t)(n - 1);
	if (out->arcount == 0)
		return true;
	/* the OPT: the root, then its fixed fields; its RDATA is no part of the answer */
	if (r->len < 1 || r->p[0] != 0)
		return false;
	rd_skip(r, 1);
	if (!dns_rr_fixed(r, &type, &class, &ttl, &rdata) || type != DNS_TYPE_OPT)
		return false;
	out->edns = true;
	out->edns_udp_size = class;
	return true;
}

#endif
