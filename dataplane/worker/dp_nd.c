/*
 * ARP and neighbour discovery shapes.
 */
#include <string.h>

#include "dp_nd.h"
#include "sni/rd.h"

#define ICMP6_PROTO	58
#define ND_RS		133
#define ND_RA		134
#define ND_NS		135
#define ND_NA		136
#define ND_REDIRECT	137
#define MLD2_REPORT	143
#define ND_HOP_LIMIT	255	/* RFC 4861 s6.1, s7.1: anything less came through a router */

static bool
dp_nd_link_local(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

static bool
dp_nd_unspecified(const uint8_t *a)
{
	static const uint8_t zero[16];

	return memcmp(a, zero, 16) == 0;
}

/* ff02::/16: multicast that never leaves the link */
static bool
dp_nd_link_multicast(const uint8_t *a)
{
	return a[0] == 0xff && a[1] == 0x02;
}

/* ff02::1:ff00:0/104 (RFC 4291 s2.7.1) */
static bool
dp_nd_solicited_node(const uint8_t *a)
{
	static const uint8_t prefix[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff };

	return memcmp(a, prefix, sizeof(prefix)) == 0;
}

/* ff02::1 (all nodes) or ff02::2 (all routers) */
static bool
dp_nd_all(const uint8_t *a, uint8_t last)
{
	static const uint8_t prefix[15] = { 0xff, 0x02 };

	return memcmp(a, prefix, sizeof(prefix)) == 0 && a[15] == last;
}

bool
dp_nd_arp_from_vm_ok(const uint8_t *arp, size_t len, const struct dp_vm *v)
{
	static const uint8_t any[4];

	/* IPv4 over Ethernet: hlen 6, plen 4, sender MAC at +8, sender IP at +14 */
	if (len < 28 || arp[4] != 6 || arp[5] != 4)
		return false;
	return v->id.has4 && memcmp(arp + 8, v->id.mac, 6) == 0 &&
	    (memcmp(arp + 14, v->id.ip4, 4) == 0 || memcmp(arp + 14, any, 4) == 0);
}

/* ND options (RFC 4861 s4.6): type | length in 8-byte units, never 0 | ..., to the end. */
static bool
dp_nd_options_ok(struct rd opts)
{
	uint8_t type, units;

	while (opts.len > 0)
		if (!rd_u8(&opts, &type) || !rd_u8(&opts, &units) || units == 0 ||
		    !rd_skip(&opts, units * 8u - 2))
			return false;
	return true;
}

bool
dp_nd_from_vm_ok(const struct pkt *p, const struct dp_vm *v)
{
	const uint8_t *b = p->payload, *target;
	size_t fixed;
	uint8_t type;

	if (!v->id.has6 || p->proto != ICMP6_PROTO || p->fragment || p->payload_len < 8 || b[1] != 0)
		return false;
	type = b[0];
	target = b + 8;
	/*
	 * MLDv2 reports (RFC 3810 s5.2) for the groups ND joins: hop limit 1, to all MLDv2
	 * routers, from a link-local address or :: (before one is configured). They end at
	 * the first router, so they carry nothing off the link.
	 */
	if (type == MLD2_REPORT)
		return p->hop_limit == 1 && dp_nd_all(p->dst, 0x16) &&
		    (dp_nd_link_local(p->src) || dp_nd_unspecified(p->src));
	if (p->hop_limit != ND_HOP_LIMIT)
		return false;
	if (type != ND_RS && type != ND_NS && type != ND_NA)
		return false;
	/* RS: type | code | sum | reserved; NS, NA: and a 16-byte target; options follow */
	fixed = type == ND_RS ? 8 : 24;
	if (p->payload_len < fixed ||
	    !dp_nd_options_ok(rd_make(b + fixed, p->payload_len - fixed)))
		return false;
	if (type != ND_RS && target[0] == 0xff)
		return false;		/* RFC 4861 s7.1.1: a target is never multicast */
	if (type == ND_NA && memcmp(target, v->id.ip6, 16) != 0 && !dp_nd_link_local(target))
		return false;		/* it may advertise only what is its own */
	if (dp_nd_unspecified(p->src))	/* duplicate address detection (RFC 4862 s5.4.2) */
		return type == ND_NS && dp_nd_solicited_node(p->dst);
	if (memcmp(p->src, v->id.ip6, 16) != 0 && !dp_nd_link_local(p->src))
		return false;
	return dp_nd_link_local(p->dst) || dp_nd_solicited_node(p->dst) ||
	    (type == ND_RS && dp_nd_all(p->dst, 2)) || (type == ND_NA && dp_nd_all(p->dst, 1)) ||
	    (type != ND_RS && memcmp(p->dst, v->id.ip6, 8) == 0);	/* on its /64 */
}

/*
 * The fixed part of each ND message before its options (RFC 4861 s4.1 to s4.5): RS 8, RA 16
 * (reachable time and retransmit timer), NS and NA 24 (a target), Redirect 40 (target and
 * destination).
 */
static const uint8_t dp_nd_fixed[ND_REDIRECT - ND_RS + 1] = { 8, 16, 24, 24, 40 };

bool
dp_nd_to_vm_ok(const struct pkt *p, const struct dp_vm *v)
{
	const uint8_t *b = p->payload;
	uint8_t type, fixed;

	if (p->family != 6 || p->proto != ICMP6_PROTO || p->fragment || p->payload_len < 8 ||
	    p->hop_limit != ND_HOP_LIMIT || b[1] != 0)
		return false;
	type = b[0];
	if (type < ND_RS || type > ND_REDIRECT)
		return false;
	/* only its RFC 4861 shape: whole options to the end, so no bytes ride along unjudged */
	fixed = dp_nd_fixed[type - ND_RS];
	if (p->payload_len < fixed || !dp_nd_options_ok(rd_make(b + fixed, p->payload_len - fixed)))
		return false;
	if ((type == ND_NS || type == ND_NA) && b[8] == 0xff)
		return false;		/* a target is never multicast */
	if (dp_nd_link_multicast(p->dst))
		return true;
	return v != NULL && ((v->id.has6 && memcmp(p->dst, v->id.ip6, 16) == 0) ||
	    dp_nd_link_local(p->dst));
}
