/*
 * The CNAME chain of a response, as dns_msg.c follows it: the answer records it may need,
 * kept as the records are read, then the chain from the question's name through them and
 * the addresses on it, in answer order. Internal to dns_msg.c.
 */
#ifndef SNI_DNS_CHAIN_H
#define SNI_DNS_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sni/dns.h"
#include "dns_int.h"

/* An answer record that chain-following may need: a CNAME, or an A/AAAA of class IN. */
struct dns_rr {
	size_t owner;		/* offset of the owner name in the message */
	size_t rdata;		/* offset of the RDATA: a name for CNAME, an address otherwise */
	uint32_t ttl;		/* MSB already folded to 0 */
	uint16_t type;
	uint8_t owner_len;	/* uncompressed, root included */
	uint8_t target_len;	/* a CNAME's target's, likewise */
};

/* A name on the CNAME chain and the least TTL on the path from the question name to it. */
struct dns_link {
	size_t name;
	uint32_t ttl;
	uint8_t len;		/* the name's, uncompressed: names of two lengths differ */
};

/*
 * One more address of the chain into out (an A when type says so, else an AAAA; ttl the
 * least on its path), or false and out->addrs_more when DNS_ADDRS_MAX are there already.
 */
static inline bool
dns_addr_put(struct dns_msg *out, uint16_t type, const uint8_t *rdata, uint32_t ttl)
{
	struct dns_addr *a;

	if (out->nb_addrs == DNS_ADDRS_MAX) {
		out->addrs_more = true;
		return false;
	}
	a = &out->addrs[out->nb_addrs++];
	/* each size a constant: copies the compiler writes out, no call */
	if (type == DNS_TYPE_A) {
		a->family = 4;
		memset(a->addr, 0, sizeof(a->addr));
		memcpy(a->addr, rdata, 4);
	} else {
		a->family = 6;
		memcpy(a->addr, rdata, 16);
	}
	a->ttl = ttl;
	return true;
}

/*
 * dns_chain_find() when no link is the target of the name's lone pointer: names compared.
 * Two names of other lengths (name_len, the one at off's) differ, and so do two that both
 * start in place with labels of other lengths (a new CNAME target against the question,
 * usually): no walk for those. Both were read already, so their first bytes lie inside
 * the message.
 */
static int
dns_chain_walk(const uint8_t *msg, size_t len, const struct dns_link *chain, unsigned int n,
    size_t off, size_t name_len)
{
	for (unsigned int k = 0; k < n; k++) {
		uint8_t a = msg[chain[k].name], b = msg[off];

		if (chain[k].len != name_len || ((a & 0xc0) == 0 && (b & 0xc0) == 0 && a != b))
			continue;
		if (dns_name_eq(msg, len, chain[k].name, off))
			return (int)k;
	}
	return -1;
}

/* Index of the chain link whose name equals the name at off (name_len bytes), or -1. */
static inline int
dns_chain_find(const uint8_t *msg, size_t len, const struct dns_link *chain, unsigned int n,
    size_t off, size_t name_len)
{
	size_t to = dns_name_ptr_at(msg, len, off);

	for (unsigned int k = 0; to != 0 && k < n; k++) {
		if (chain[k].name == to)
			return (int)k;
	}
	return dns_chain_walk(msg, len, chain, n, off, name_len);
}

/*
 * Is the owner at off the name of the chain's last link (of n)? A pointer straight to it
 * is (the usual owner of a CNAME: the question's, or the previous target's); a pointer
 * straight to another link is not, the chain's names being pairwise unequal; any other
 * owner (owner_len bytes) is compared, when its length is the link's.
 */
static inline bool
dns_owner_is_last(const uint8_t *msg, size_t len, size_t off, size_t owner_len,
    const struct dns_link *chain, unsigned int n)
{
	size_t to = dns_name_ptr_at(msg, len, off);

	for (unsigned int k = 0; to != 0 && k < n; k++) {
		if (chain[k].name == to)
			return k == n - 1;
	}
	return chain[n - 1].len == owner_len && dns_name_eq(msg, len, off, chain[n - 1].name);
}

/*
 * Follow CNAMEs from the question name through the kept answers, in any order, then take
 * every A/AAAA whose owner is on the chain. An address for a name off the chain is ignored
 * whatever the response says: a resolver (or whoever forges its answer) cannot bind names
 * nobody asked for. The first CNAME of an owner wins (RFC 2181 s10.1 allows one); a
 * target already on the chain ends it, so a loop costs at most DNS_CHAIN_MAX steps.
 */
static void
dns_chain(const uint8_t *msg, size_t len, const struct dns_rr *rrs, unsigned int nb_rrs,
    bool cnames, struct dns_msg *out)
{
	struct dns_link chain[DNS_CHAIN_MAX + 1];
	unsigned int n = 1;

	chain[0] = (struct dns_link){ .name = DNS_HDR_LEN, .ttl = UINT32_MAX,
		.len = out->qname_len };
	/* no CNAME in the message: the chain is the question's name alone, unsearched */
	while (cnames && n <= DNS_CHAIN_MAX) {
		const struct dns_rr *cname = NULL;

		for (unsigned int i = 0; i < nb_rrs && cname == NULL; i++) {
			if (rrs[i].type == DNS_TYPE_CNAME &&
			    dns_owner_is_last(msg, len, rrs[i].owner, rrs[i].owner_len, chain, n))
				cname = &rrs[i];
		}
		if (cname == NULL ||
		    dns_chain_find(msg, len, chain, n, cname->rdata, cname->target_len) >= 0)
			break;
		chain[n] = (struct dns_link){
			.name = cname->rdata,
			.ttl = dns_min(chain[n - 1].ttl, cname->ttl),
			.len = cname->target_len,
		};
		n++;
	}
	out->chain_len = (uint8_t)(n - 1);

	for (unsigned int i = 0; i < nb_rrs; i++) {
		int k;

		if (rrs[i].type == DNS_TYPE_CNAME ||
		    (k = dns_chain_find(msg, len, chain, n, rrs[i].owner, rrs[i].owner_len)) < 0)
			continue;
		if (!dns_addr_put(out, rrs[i].type, msg + rrs[i].rdata,
		    dns_min(rrs[i].ttl, chain[k].ttl)))
			break;
	}
}

#endif
