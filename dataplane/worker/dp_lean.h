/*
 * The lean path of a frame (dp_burst.c): the shape nearly every frame of a TCP
 * connection has, over IPv4 or IPv6, told from the frame's bytes without filling a struct
 * pkt. What it reads is all the steady flow stage needs (the inline case of dp_conn_vm()
 * and dp_conn_uplink()): the flow key, the flags, and from the VM the sequence number and
 * the payload's length, toward it the ACK and the window. A frame of that shape whose flow
 * is not steady, or that opens or ends its connection (a SYN, a FIN, an RST: never
 * steady), has its flow stage from these fields too when that needs no more of it
 * (dp_conn_lean.h: a FIN, a SYN-ACK, whose TCP header dp_lean_th() finds), else is
 * decoded fully then from what was checked and goes the general way, neither checked nor
 * looked up again; a frame of any other shape goes the general way from the start.
 * test_dp_lean holds each answer to the general path's.
 */
#ifndef DP_LEAN_H
#define DP_LEAN_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "dp_conn.h"
#include "dp_flow.h"
#include "dp_flow_tab.h"
#include "dp_gen.h"
#include "dp_rx.h"
#include "sni/pkt_fast.h"
#include "sni/rd.h"

#define DP_LEAN_L4		(14 + 20)	/* untagged (a tag: 4 more), IPv4, no options */
#define DP_LEAN6_L4		(14 + 40)	/* untagged, IPv6 */
/* an ethertype and the two bytes after it: IPv4 without options, or IPv6 (the version) */
#define DP_LEAN_TYPE_IPV4	((uint32_t)PKT_ETH_P_IPV4 << 16 | 0x4500)
#define DP_LEAN_TYPE_IPV6	((uint32_t)PKT_ETH_P_IPV6 << 16 | 0x6000)
/* what no steady frame carries: an open, an end, or an urgent pointer (dp_conn_vm_urgent()) */
#define DP_LEAN_TCP_ENDS	(PKT_TCP_SYN | PKT_TCP_FIN | PKT_TCP_RST | PKT_TCP_URG)

/* What the steady stage reads of a lean frame, besides its key and its VM. */
struct dp_lean {
	uint32_t seq;			/* from the VM: how far it has sent */
	uint16_t payload_len;		/* either way; flags next: one word to a SYN's test */
	uint8_t flags;			/* either way (a SYN, FIN or RST: not steady) */
	uint8_t th_off;			/* where its TCP header starts (dp_lean_th()) */
	uint32_t ack;			/* toward it: what the peer acknowledges */
	uint16_t win;
};

/*
 * The flow key dp_conn_key() makes of a TCP segment of VM vm over IPv4 or IPv6 (family;
 * th, its header; peer, the other end's address), as its four words: the ports' four
 * bytes in one load, each port's bytes swapped into host order and the two put in the
 * key's order by a rotation (from the VM, its own port is the source: the first in the
 * frame, the first in the key). With h, its hash under ft in *h, from the words as they
 * are stored (dp_ft_hash_words()).
 */
static __rte_always_inline void
dp_lean_key(struct dp_flow_key *k, uint16_t vm, uint8_t family, const uint8_t *th,
    const uint8_t *peer, bool from_vm, const struct dp_ft *ft, uint32_t *h)
{
	uint32_t ports, addr;
	/*
	 * scalars, stored one by one: an array of the words, part filled by memcpy(), was
	 * built in a stack temporary and copied (two stores and a load more a key)
	 */
	uint64_t w0, w1, w2, w3 = 0;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the key's words' order");
	_Static_assert(offsetof(struct dp_flow_key, vm_port) == 4 &&
	    offsetof(struct dp_flow_key, peer_port) == 6 &&
	    offsetof(struct dp_flow_key, peer) == 8, "the key's words' layout");
	memcpy(&ports, th, 4);
	if (family == 4) {			/* an IPv4 address's tail is zero */
		memcpy(&addr, peer, 4);
		w1 = addr;
		w2 = 0;
	} else {
		memcpy(&w1, peer, 8);
		memcpy(&w2, peer + 8, 8);
	}
	ports = __builtin_bswap32(ports);	/* host order: destination low, source high */
	if (from_vm)
		ports = ports << 16 | ports >> 16;
	w0 = (uint64_t)ports << 32 | (uint32_t)PKT_PROTO_TCP << 24 |
	    (uint32_t)family << 16 | vm;
	memcpy((char *)k, &w0, 8);
	memcpy((char *)k + 8, &w1, 8);
	memcpy((char *)k + 16, &w2, 8);
	memcpy((char *)k + 24, &w3, 8);
	if (h != NULL)
		*h = dp_ft_hash_words(ft, w0, w1, w2);
}

/* Is a or b negative? One test of both (an OR's sign) for two compares and branches. */
static __rte_always_inline bool
dp_lean_neg(int32_t a, int32_t b)
{
	return (a | b) < 0;
}

/*
 * What dp_lean_at() and dp_lean6_at() ask past the IP and TCP headers of a segment of
 * family (its source address at src, the destination's right after it; th its TCP header,
 * its payload payload_len bytes): the VM of its MAC and tag, and from the VM its own
 * source address; then its key and what the steady stage reads into *k and *l (and with
 * h, the key's hash under ft into *h). The VM's slot, or -1.
 */
static __rte_always_inline int
dp_lean_vm(const struct dp_gen *g, const uint8_t *frame, size_t tag, bool from_vm,
    uint8_t family, const uint8_t *src, const uint8_t *th, int32_t payload_len,
    struct dp_flow_key *k, struct dp_lean *l, const struct dp_ft *ft, uint32_t *h)
{
	size_t alen = family == 4 ? 4 : 16;
	const struct dp_vm *v;
	int slot;

	/*
	 * The (vlan, MAC) index holds each VM under its own VLAN only (dp_gen_build.c;
	 * test_dp_gen_vm_addr asks each VLAN's VM untagged): the VM an untagged frame finds is
	 * configured without one, and one a tag found is that tag's. dp_vlan_tags_ok()'s
	 * question, for the one tag at most a lean frame has.
	 */
	if ((slot = dp_gen_vm_by_mac(g, tag != 0 ? rd_be16(frame + 14) & 0x0fff : 0,
	    from_vm ? frame + 6 : frame)) < 0)
		return -1;
	v = &g->vms[slot];
	if (from_vm && (family == 4 ? !v->id.has4 || memcmp(src, v->id.ip4, 4) != 0 :
	    !v->id.has6 || memcmp(src, v->id.ip6, 16) != 0))
		return -1;
	dp_lean_key(k, (uint16_t)slot, family, th, from_vm ? src + alen : src, from_vm, ft, h);
	l->flags = th[13];
	l->th_off = (uint8_t)(th - frame);	/* a constant: the shape's */
	l->payload_len = (uint16_t)payload_len;
	if (from_vm) {
		l->seq = rd_be32(th + 4);
	} else {
		l->ack = rd_be32(th + 8);
		l->win = rd_be16(th + 14);
	}
	return slot;
}

/*
 * dp_lean() of a frame at least DP_LEAN_L4 + 20 bytes long whose IPv4 header is tag bytes
 * further than an untagged one's: 0 or 4, a constant, so that an untagged frame (most)
 * pays nothing for the tagged ones.
 */
static __rte_always_inline int
dp_lean_at(const struct dp_gen *g, const struct rte_mbuf *m, struct dp_flow_key *k,
    struct dp_lean *l, bool from_vm, size_t tag, const struct dp_ft *ft, uint32_t *h)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint8_t *ip = frame + 14 + tag, *th = ip + 20;
	uint64_t fl = m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK);
	size_t len = rte_pktmbuf_data_len(m);
	uint32_t total, frag_ttl_proto;
	int32_t payload_len, hlen;
	int slot;

	/* (the type, version and header length dp_lean() read) */
	if (tag != 0 && len < DP_LEAN_L4 + 20 + tag)
		return -1;
	/* TCP, not a fragment: the flags and offset's low 14 bits zero, in one load */
	memcpy(&frag_ttl_proto, ip + 6, 4);
	if ((be32toh(frag_ttl_proto) & 0x3fff00ff) != PKT_PROTO_TCP)
		return -1;
	/*
	 * the total length with the header's first word: one load and swap; a 16-bit one had
	 * gcc zero-extend the swapped word twice, once for each use
	 */
	memcpy(&total, ip, 4);
	total = be32toh(total) & 0xffff;
	/* the data offset at least 5 words, and no more than the segment holds */
	hlen = th[12] >> 2 & 0x3c;					/* 4 * (th[12] >> 4) */
	payload_len = (int32_t)total - 20 - hlen;
	if (total > len - 14 - tag || dp_lean_neg(payload_len, hlen - 20))
		return -1;
	slot = dp_lean_vm(g, frame, tag, from_vm, 4, ip + 12, th, payload_len, k, l, ft, h);
	if (slot < 0)
		return -1;
	/* last, so that little else is live across the sum; the port's word first */
	if (fl == (RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD))
		return slot;
	return fl == 0 && dp_rx_csums4_tcp_ok(ip, total) ? slot : -1;
}

/*
 * dp_lean() of an IPv6 frame at least DP_LEAN_L4 + 20 bytes long (its type and version
 * read) whose IPv6 header is tag bytes (0 or 4, a constant) further than an untagged
 * one's: the checks of dp_lean_at() on IPv6's fields. The next header TCP (no extension
 * header), its payload length within the frame; the port's word says L4 good (IPv6 has no
 * header checksum) or nothing, else the sum in software as dp_rx_csum6_ok().
 */
static __rte_always_inline int
dp_lean6_at(const struct dp_gen *g, const struct rte_mbuf *m, struct dp_flow_key *k,
    struct dp_lean *l, bool from_vm, size_t tag, const struct dp_ft *ft, uint32_t *h)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint8_t *ip = frame + 14 + tag, *th = ip + 40;
	uint64_t fl = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	size_t len = rte_pktmbuf_data_len(m);
	int32_t payload_len, hlen;
	uint32_t plen;
	int slot;

	if (len < DP_LEAN6_L4 + 20 + tag || ip[6] != PKT_PROTO_TCP)
		return -1;
	plen = rd_be16(ip + 4);
	/* the data offset at least 5 words, and no more than the segment holds */
	hlen = th[12] >> 2 & 0x3c;
	payload_len = (int32_t)plen - hlen;
	if (plen > len - DP_LEAN6_L4 - tag || dp_lean_neg(payload_len, hlen - 20))
		return -1;
	slot = dp_lean_vm(g, frame, tag, from_vm, 6, ip + 8, th, payload_len, k, l, ft, h);
	if (slot < 0)
		return -1;
	if (fl == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		return slot;
	/* the pseudo-header's addresses lie just before the segment: one sum from them on */
	return fl == 0 && csum_ok(dp_rx_sum(ip + 8, 32 + plen,
	    (uint64_t)htobe16((uint16_t)plen) + htobe16(PKT_PROTO_TCP))) ? slot : -1;
}

/*
 * Are the bytes word (as loaded from the frame, dp_lean_type_at()) type under mask (both
 * in network order)? Compared as they lie, the constants swapped instead: a swapped word the
 * compiler keeps for the next compare costs every frame two instructions.
 */
static __rte_always_inline bool
dp_lean_type_is(uint32_t word, uint32_t type, uint32_t mask)
{
	return (word & __builtin_bswap32(mask)) == __builtin_bswap32(type);
}

/*
 * The ethertype at type and the byte after it (an IP version), as dp_lean_type_is() takes
 * them, the top byte zero: one load from the byte before, shifted out. That byte zero, the
 * IPv4 test needs no mask, and the IPv6 test no copy of the word kept for it.
 */
static __rte_always_inline uint32_t
dp_lean_type_at(const uint8_t *type)
{
	uint32_t word;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the first byte the lowest");
	memcpy(&word, type - 1, 4);
	return word >> 8;
}

/*
 * Frame m from the VM port (from_vm) or the uplink, if it is of the lean shape: one
 * segment, untagged or with one 802.1Q tag (a VLAN's VMs' every frame has it), IPv4
 * without options and not a fragment or IPv6 without extension headers, TCP whose
 * lengths fit (a SYN, a FIN or an RST too: dp_lean_steady() tells them), its checksums
 * right (in software as dp_rx_csums4_ok() or dp_rx_csum6_ok(), or marked good by the
 * port), from (to) the VM its source (destination) MAC and tag name, untagged only for
 * one configured without a VLAN (dp_vlan_tags_ok()), and from the VM, with that VM's
 * source address. For such a frame the general first stage says DP_RX_PLAIN, then
 * CONTINUE with this key (dp_decide_vm_plain() or _uplink_plain(), dp_conn_key()).
 * Returns the VM's slot, its flow key in *k and the rest in *l (flags; seq and
 * payload_len from the VM, the others toward it); -1 for any other frame (then *k and *l
 * are scratch). With h, the key's hash under ft (dp_ft_hash()) in *h, scratch as well for
 * any other frame: made from the words the key is stored from, not read back (a burst's
 * first stage, dp_flow_lookup_begin()). Inline where from_vm is a constant.
 */
static __rte_always_inline int
dp_lean_hashed(const struct dp_gen *g, const struct rte_mbuf *m, struct dp_flow_key *k,
    struct dp_lean *l, bool from_vm, const struct dp_ft *ft, uint32_t *h)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t type_ver;

	/*
	 * the lengths dp_lean_at() checks ask for at least this many bytes: read none before;
	 * an untagged frame's ethertype and IP version (and IPv4 header length) in one load,
	 * then a tagged one's, past its tag (the length covers both)
	 */
	if (m->nb_segs != 1 || rte_pktmbuf_data_len(m) < DP_LEAN_L4 + 20)
		return -1;
	type_ver = dp_lean_type_at(frame + 12);
	if (likely(dp_lean_type_is(type_ver, DP_LEAN_TYPE_IPV4, 0xffffff00)))
		return dp_lean_at(g, m, k, l, from_vm, 0, ft, h);
	if (dp_lean_type_is(type_ver, DP_LEAN_TYPE_IPV6, 0xfffff000))
		return dp_lean6_at(g, m, k, l, from_vm, 0, ft, h);
	if (rd_be16(frame + 12) != PKT_ETH_P_8021Q)
		return -1;
	type_ver = dp_lean_type_at(frame + 16);
	if (dp_lean_type_is(type_ver, DP_LEAN_TYPE_IPV4, 0xffffff00))
		return dp_lean_at(g, m, k, l, from_vm, 4, ft, h);
	if (dp_lean_type_is(type_ver, DP_LEAN_TYPE_IPV6, 0xfffff000))
		return dp_lean6_at(g, m, k, l, from_vm, 4, ft, h);
	return -1;
}

/* dp_lean_hashed() without the hash. */
static __rte_always_inline int
dp_lean(const struct dp_gen *g, const struct rte_mbuf *m, struct dp_flow_key *k,
    struct dp_lean *l, bool from_vm)
{
	return dp_lean_hashed(g, m, k, l, from_vm, NULL, NULL);
}

/*
 * Is lean frame l, on flow f, of f's steady state (dp_conn_steady(), with the steady word
 * key): f steady for it, and the frame neither opens nor ends anything?
 */
static __rte_always_inline bool
dp_lean_steady(uint64_t key, const struct dp_flow *f, const struct dp_lean *l, bool from_vm)
{
	return dp_conn_steady_flow(key, f, from_vm, from_vm ? l->payload_len : 0) &&
	    !(l->flags & DP_LEAN_TCP_ENDS);
}

/* The IP header of lean frame m: past at most one tag, as dp_lean() checked. */
static __rte_always_inline const uint8_t *
dp_lean_ip(const struct rte_mbuf *m)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);

	return frame + (rd_be16(frame + 12) == PKT_ETH_P_8021Q ? 18 : 14);
}

/*
 * The TCP header of lean frame m, l what dp_lean() read of it: where the check found it
 * (the frame's tag and version not read again).
 */
static __rte_always_inline const uint8_t *
dp_lean_th(const struct rte_mbuf *m, const struct dp_lean *l)
{
	return rte_pktmbuf_mtod(m, const uint8_t *) + l->th_off;
}

/* The payload of lean frame m (l what dp_lean() read of it), past its TCP options. */
static __rte_always_inline const uint8_t *
dp_lean_payload(const struct rte_mbuf *m, const struct dp_lean *l)
{
	const uint8_t *th = dp_lean_th(m, l);

	return th + (th[12] >> 4) * 4;
}

/* The IP packet's length of lean frame m, headers and all (dp_ip_bytes()). */
static __rte_always_inline uint32_t
dp_lean_ip_bytes(const struct rte_mbuf *m)
{
	const uint8_t *ip = dp_lean_ip(m);

	return ip[0] >> 4 == 6 ? 40u + rd_be16(ip + 4) : rd_be16(ip + 2);
}

/*
 * The sequence number of lean frame m (l what dp_lean() read of it), which it reads only
 * from the VM: toward the VM, read here when a flow needs it.
 */
static __rte_always_inline uint32_t
dp_lean_seq(const struct rte_mbuf *m, const struct dp_lean *l)
{
	return rd_be32(dp_lean_th(m, l) + 4);
}

/*
 * The fields of p from vlan to l4_len, those of a lean frame's IP header (a TCP segment,
 * not a fragment, no source route), as two words in two stores: field by field, a store
 * each; for untagged IPv4, all but hop_limit and l4_len constants.
 */
static __rte_always_inline void
dp_lean_decode_ip(struct pkt *p, uint16_t vlan, bool tagged, uint8_t hop_limit, bool v6,
    uint16_t l3_off, uint16_t l4_off, uint16_t l4_len)
{
	uint64_t l2_l3, l4;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ &&
	    offsetof(struct pkt, nb_vlans) == offsetof(struct pkt, vlan) + 2 &&
	    offsetof(struct pkt, hop_limit) == offsetof(struct pkt, vlan) + 3 &&
	    offsetof(struct pkt, ethertype) == offsetof(struct pkt, vlan) + 4 &&
	    offsetof(struct pkt, l3_off) == offsetof(struct pkt, vlan) + 6 &&
	    offsetof(struct pkt, family) == offsetof(struct pkt, vlan) + 8 &&
	    offsetof(struct pkt, proto) == offsetof(struct pkt, vlan) + 9 &&
	    offsetof(struct pkt, fragment) == offsetof(struct pkt, vlan) + 10 &&
	    offsetof(struct pkt, src_route) == offsetof(struct pkt, vlan) + 11 &&
	    offsetof(struct pkt, l4_off) == offsetof(struct pkt, vlan) + 12 &&
	    offsetof(struct pkt, l4_len) == offsetof(struct pkt, vlan) + 14,
	    "vlan to l4_len: two words");
	l2_l3 = vlan | (uint64_t)tagged << 16 | (uint64_t)hop_limit << 24 |
	    (uint64_t)(v6 ? PKT_ETH_P_IPV6 : PKT_ETH_P_IPV4) << 32 | (uint64_t)l3_off << 48;
	/* fragment and src_route false: zero bytes */
	l4 = (v6 ? 6u : 4u) | (uint64_t)PKT_PROTO_TCP << 8 | (uint64_t)l4_off << 32 |
	    (uint64_t)l4_len << 48;
	memcpy(&p->vlan, &l2_l3, 8);
	memcpy((uint8_t *)&p->vlan + 8, &l4, 8);
}

/*
 * dp_lean_decode() of lean frame frame whose IP header is tag bytes (0 or 4) past an
 * untagged one's, IPv6 (v6) or IPv4, l what dp_lean() read of it from the VM (from_vm) or
 * toward it. What it reads of the frame, first: the fields between the stores are then
 * constants for a constant shape, stored several in one.
 */
static __rte_always_inline void
dp_lean_decode_as(const uint8_t *frame, const struct dp_lean *l, struct pkt *p, bool from_vm,
    size_t tag, bool v6)
{
	const uint8_t *ip = frame + 14 + tag, *th = ip + (v6 ? 40 : 20);
	uint16_t vlan = tag != 0 ? rd_be16(frame + 14) & 0x0fff : 0;
	uint8_t hop_limit = v6 ? ip[7] : ip[8];
	uint16_t l4_len = v6 ? rd_be16(ip + 4) : (uint16_t)(rd_be16(ip + 2) - 20);
	uint16_t off = (uint16_t)(th[12] >> 4) * 4;

	p->dst_mac = frame;
	p->src_mac = frame + 6;
	if (v6) {
		memcpy(p->src, ip + 8, 16);
		memcpy(p->dst, ip + 24, 16);
	} else {
		pkt_addr4(p->src, ip + 12);
		pkt_addr4(p->dst, ip + 16);
	}
	dp_lean_decode_ip(p, vlan, tag != 0, hop_limit, v6, (uint16_t)(14 + tag),
	    (uint16_t)(th - frame), l4_len);
	pkt_fast_ports(th, p);
	p->tcp_flags = l->flags;
	p->tcp_wscale = unlikely(l->flags & PKT_TCP_SYN) ? pkt_tcp_syn_wscale(th) :
	    PKT_WSCALE_NONE;
	p->tcp_win = from_vm ? rd_be16(th + 14) : l->win;
	pkt_fast_seq_ack(th, p);
	p->payload = th + off;
	p->payload_len = from_vm ? l->payload_len : (size_t)(l4_len - off);
}

/*
 * The struct pkt the general path would have made of a lean frame m from the VM (from_vm)
 * or toward it, for one whose flow is not steady after all (or a SYN, a FIN, an RST), l
 * what dp_lean() read of it: what pkt_decode_fast() writes of it (and pkt_decode_syn()'s
 * window scale of a SYN, as dp_rx_decode()), from the bytes dp_lean() checked (at most one
 * tag, IPv4 without options and not a fragment or IPv6 without extension headers, TCP
 * whose lengths fit), with none of its checks asked again (test_dp_lean holds the two
 * equal, field by field). Untagged IPv4 (its ethertype says so of a lean frame), nearly
 * every one, by its constants; the rest by the tag and version read. Inline: as a call
 * (which the tag's branches made of it) it cost ~100 Ir a connection.
 */
static __rte_always_inline void
dp_lean_decode(const struct rte_mbuf *m, const struct dp_lean *l, struct pkt *p, bool from_vm)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	bool tagged;

	if (likely(rd_be16(frame + 12) == PKT_ETH_P_IPV4)) {
		dp_lean_decode_as(frame, l, p, from_vm, 0, false);
		return;
	}
	tagged = rd_be16(frame + 12) == PKT_ETH_P_8021Q;
	dp_lean_decode_as(frame, l, p, from_vm, 4 * tagged, frame[14 + 4 * tagged] >> 4 == 6);
}

#endif
