/*
 * The cut that makes a datagram into fragments for a link's MTU (RFC 791 s3.2, RFC 8200
 * s4.5): a plan of the pieces, then each piece written on its own, its header the
 * original's with what changes per fragment (lengths, offsets, the IPv4 checksum, the
 * IPv6 Fragment header).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "ipfrag_int.h"
#include "sni/ipfrag.h"
#include "sni/rd.h"
#include "wire_int.h"

/*
 * IPv4 options (RFC 791 s3.1): EOL (0) ends them, NOP (1) is one byte, every other is
 * type | len (>= 2, counting both) | data. Bit 0x80 of the type: copied into every
 * fragment. Returns the copied options' length, or -1 if they don't parse. With out, also
 * writes them there.
 */
static int
ipv4_copied_opts(struct rd opts, uint8_t *out)
{
	int n = 0;

	while (opts.len > 0) {
		struct rd body;
		uint8_t type, olen;

		if (!rd_u8(&opts, &type) || type == 0)
			break;
		if (type == 1)
			continue;
		if (!rd_u8(&opts, &olen) || olen < 2 || !rd_sub(&opts, olen - 2u, &body))
			return -1;
		if (!(type & IP4_OPT_COPIED))
			continue;
		if (out != NULL) {
			out[n] = type;
			out[n + 1] = olen;
			memcpy(out + n + 2, body.p, body.len);
		}
		n += olen;
	}
	return n;
}

static int
plan_ipv4(struct rd r, uint16_t mtu, struct ipfrag_plan *p)
{
	struct rd all = r, whole, hdr, opts;
	uint16_t total, frag;
	uint8_t vihl;
	size_t ihl;
	int copied;

	if (!rd_u8(&r, &vihl) || !rd_skip(&r, 1) || !rd_u16(&r, &total) || !rd_skip(&r, 2) ||
	    !rd_u16(&r, &frag))
		return -EINVAL;
	ihl = (size_t)(vihl & 0xf) * 4;
	if (vihl >> 4 != 4 || ihl < IP4_HDR_MIN || total < ihl ||
	    (frag & (IP4_MF | IP4_OFF_MASK)) != 0 || !rd_sub(&all, total, &whole) ||
	    !rd_sub(&whole, ihl, &hdr) || total <= mtu)
		return -EINVAL;
	opts = hdr;
	rd_skip(&opts, IP4_HDR_MIN);
	if ((copied = ipv4_copied_opts(opts, NULL)) < 0)
		return -EINVAL;
	p->family = 4;
	p->hdr_len = (uint16_t)ihl;
	p->hdr_rest = (uint16_t)(IP4_HDR_MIN + ((copied + 3) & ~3));
	if (mtu < ihl + 8 || mtu < p->hdr_rest + 8u)
		return -EMSGSIZE;
	p->data_len = total - (uint32_t)ihl;
	p->first = (uint32_t)(mtu - ihl) & ~7u;
	p->rest = (uint32_t)(mtu - p->hdr_rest) & ~7u;
	p->nb = 1 + (p->data_len - p->first + p->rest - 1) / p->rest;	/* data_len > first */
	return (int)p->nb;
}

/*
 * The unfragmentable part (RFC 8200 s4.5): the IPv6 header, hop-by-hop, and everything up
 * to the last routing header (destination options for the hops of a routing header come
 * before it). Destination options for the final destination alone are fragmentable.
 */
static int
plan_ipv6(struct rd r, uint16_t mtu, uint32_t id, struct ipfrag_plan *p)
{
	struct rd payload;
	uint16_t plen;
	uint32_t vtf;
	uint8_t next;
	size_t pos = IP6_HDR_LEN;

	if (!rd_u32(&r, &vtf) || !rd_u16(&r, &plen) || !rd_u8(&r, &next) || !rd_skip(&r, 33) ||
	    vtf >> 28 != 6 || plen == 0 || !rd_sub(&r, plen, &payload) ||
	    IP6_HDR_LEN + (size_t)plen <= mtu)
		return -EINVAL;
	p->family = 6;
	p->hdr_len = IP6_HDR_LEN;
	p->nh_pos = 6;
	p->next = next;
	for (unsigned int n = 0; next == IP6_HOPOPTS || next == IP6_ROUTING ||
	    next == IP6_DSTOPTS; n++) {
		uint8_t ext_next, ext_len;
		size_t hdr_len;

		if (n == IP6_EXT_MAX || (next == IP6_HOPOPTS && n > 0) ||
		    !rd_u8(&payload, &ext_next) || !rd_u8(&payload, &ext_len))
			return -EINVAL;
		hdr_len = ((size_t)ext_len + 1) * 8;
		if (!rd_skip(&payload, hdr_len - 2))
			return -EINVAL;
		if (next != IP6_DSTOPTS) {
			p->hdr_len = (uint16_t)(pos + hdr_len);
			p->nh_pos = (uint16_t)pos;
			p->next = ext_next;
		}
		pos += hdr_len;
		next = ext_next;
	}
	if (next == IP6_FRAGMENT)
		return -EINVAL;
	if (mtu < p->hdr_len + IP6_FRAG_LEN + 8u)
		return -EMSGSIZE;
	p->id = id;
	p->data_len = IP6_HDR_LEN + plen - (uint32_t)p->hdr_len;
	p->first = p->rest = (uint32_t)(mtu - p->hdr_len - IP6_FRAG_LEN) & ~7u;
	p->nb = (p->data_len + p->rest - 1) / p->rest;
	return (int)p->nb;
}

int
ipfrag_cut_plan(const uint8_t *pkt, size_t len, uint16_t mtu, uint32_t id,
    struct ipfrag_plan *plan)
{
	struct rd r = rd_make(pkt, len);

	memset(plan, 0, sizeof(*plan));
	if (len == 0)
		return -EINVAL;
	switch (pkt[0] >> 4) {
	case 4:
		return plan_ipv4(r, mtu, plan);
	case 6:
		return plan_ipv6(r, mtu, id, plan);
	default:
		return -EINVAL;
	}
}

/* Fragment i's data: [*off, *off + *dlen) of the fragmentable part. */
static void
cut_range(const struct ipfrag_plan *p, uint32_t i, uint32_t *off, uint32_t *dlen)
{
	*off = i == 0 ? 0 : p->first + (i - 1) * p->rest;
	*dlen = i == 0 ? p->first : p->rest;
	if (*dlen > p->data_len - *off)
		*dlen = p->data_len - *off;
}

size_t
ipfrag_cut_len(const struct ipfrag_plan *p, uint32_t i)
{
	uint32_t off, dlen;

	if (i >= p->nb)
		return 0;
	cut_range(p, i, &off, &dlen);
	if (p->family == 4)
		return (size_t)(i == 0 ? p->hdr_len : p->hdr_rest) + dlen;
	return (size_t)p->hdr_len + IP6_FRAG_LEN + dlen;
}

size_t
ipfrag_cut_one(const struct ipfrag_plan *p, const uint8_t *pkt, uint32_t i, uint8_t *out,
    size_t cap)
{
	size_t n = ipfrag_cut_len(p, i), hl;
	uint32_t off, dlen;
	bool more = i + 1 < p->nb;

	if (n == 0 || n > cap)
		return 0;
	cut_range(p, i, &off, &dlen);
	if (p->family == 4) {
		hl = i == 0 ? p->hdr_len : p->hdr_rest;
		if (i == 0) {
			memcpy(out, pkt, hl);
		} else {
			memcpy(out, pkt, IP4_HDR_MIN);
			memset(out + IP4_HDR_MIN, 0, hl - IP4_HDR_MIN);	/* EOL padding */
			ipv4_copied_opts(rd_make(pkt + IP4_HDR_MIN, p->hdr_len - IP4_HDR_MIN),
			    out + IP4_HDR_MIN);
		}
		out[0] = (uint8_t)(0x40 | hl / 4);
		wr16(out + 2, (uint16_t)n);
		wr16(out + 6, (uint16_t)(off / 8 | (more ? IP4_MF : 0)));	/* DF cleared */
		wr16(out + 10, 0);
		wr16(out + 10, ipfrag_csum(rd_make(out, hl)));
	} else {
		hl = p->hdr_len;
		memcpy(out, pkt, hl);
		wr16(out + 4, (uint16_t)(n - IP6_HDR_LEN));
		out[p->nh_pos] = IP6_FRAGMENT;
		out[hl] = p->next;
		out[hl + 1] = 0;
		wr16(out + hl + 2, (uint16_t)(off | (more ? 1 : 0)));
		wr32(out + hl + 4, p->id);
		hl += IP6_FRAG_LEN;
	}
	memcpy(out + hl, pkt + p->hdr_len + off, dlen);
	return n;
}
