/*
 * The lean path of a frame (dp_burst.c): the shape nearly every frame of an open TCP
 * connection has, told from the frame's bytes without filling a struct pkt. What it reads
 * is all the steady flow stage needs (the inline case of dp_conn_vm() and
 * dp_conn_uplink()): the flow key, and from the VM the sequence number and the payload's
 * length, toward it the ACK, the window and the flags. A frame of that shape whose flow
 * is not steady is decoded fully then and goes the general way; a frame of any other
 * shape goes the general way from the start. test_dp_lean holds each answer to the
 * general path's.
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
#include "dp_flow.h"
#include "dp_gen.h"
#include "dp_rx.h"
#include "sni/pkt_fast.h"
#include "sni/rd.h"

#define DP_LEAN_L4		(14 + 20)	/* untagged (a tag: 4 more), IPv4, no options */
#define DP_LEAN_TCP_ENDS	(PKT_TCP_SYN | PKT_TCP_FIN | PKT_TCP_RST)

/* What the steady stage reads of a lean frame, besides its key and its VM. */
struct dp_lean {
	uint32_t seq;			/* from the VM: how far it has sent */
	uint16_t payload_len;
	uint16_t win;			/* toward it: what the peer acknowledges */
	uint32_t ack;
	uint8_t flags;
};

/*
 * The flow key dp_conn_key() makes of an IPv4 TCP segment of VM vm (th, its header; peer,
 * the other end's address), as its four words: the ports' four bytes in one load, each
 * port's bytes swapped into host order and the two put in the key's order by a rotation
 * (from the VM, its own port is the source: the first in the frame, the first in the
 * key).
 */
static __rte_always_inline void
dp_lean_key(struct dp_flow_key *k, uint16_t vm, const uint8_t *th, const uint8_t *peer,
    bool from_vm)
{
	uint32_t ports, addr;
	uint64_t words[4];

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the key's words' order");
	_Static_assert(offsetof(struct dp_flow_key, vm_port) == 4 &&
	    offsetof(struct dp_flow_key, peer_port) == 6 &&
	    offsetof(struct dp_flow_key, peer) == 8, "the key's words' layout");
	memcpy(&ports, th, 4);
	memcpy(&addr, peer, 4);
	ports = __builtin_bswap32(ports);	/* host order: destination low, source high */
	if (from_vm)
		ports = ports << 16 | ports >> 16;
	words[0] = (uint64_t)ports << 32 | (uint32_t)PKT_PROTO_TCP << 24 | 4u << 16 | vm;
	words[1] = addr;				/* an IPv4 address's tail is zero */
	words[2] = 0;
	words[3] = 0;
	memcpy(k, words, sizeof(words));
}

/*
 * dp_lean() of a frame at least DP_LEAN_L4 + 20 bytes long whose IPv4 header is tag bytes
 * further than an untagged one's: 0 or 4, a constant, so that an untagged frame (most)
 * pays nothing for the tagged ones.
 */
static __rte_always_inline int
dp_lean_at(const struct dp_gen *g, const struct rte_mbuf *m, struct dp_flow_key *k,
    struct dp_lean *l, bool from_vm, size_t tag)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint8_t *ip = frame + 14 + tag, *th = ip + 20;
	uint64_t fl = m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_MASK | RTE_MBUF_F_RX_L4_CKSUM_MASK);
	size_t len = rte_pktmbuf_data_len(m);
	const struct dp_vm *v;
	uint32_t total, frag_ttl_proto;
	int32_t payload_len;
	int slot;

	/*
	 * (an untagged frame's type and version dp_lean() read); the flags early, so that a
	 * SYN, a FIN or an RST (a connection's ends: a good share of the frames that are not
	 * lean) leaves at once
	 */
	if ((tag != 0 && (len < DP_LEAN_L4 + 20 + tag || rd_be16(ip - 2) != PKT_ETH_P_IPV4 ||
	    ip[0] != 0x45)) || (th[13] & DP_LEAN_TCP_ENDS))
		return -1;
	/* TCP, not a fragment: the flags and offset's low 14 bits zero, in one load */
	memcpy(&frag_ttl_proto, ip + 6, 4);
	if ((be32toh(frag_ttl_proto) & 0x3fff00ff) != PKT_PROTO_TCP)
		return -1;
	total = rd_be16(ip + 2);
	/* the data offset at least 5 words, and no more than the segment holds */
	payload_len = (int32_t)total - 20 - (th[12] >> 2 & 0x3c);	/* 4 * (th[12] >> 4) */
	if (total > len - 14 - tag || th[12] < 5 << 4 || payload_len < 0)
		return -1;
	/* the (vlan, MAC) index holds each VM under its own VLAN: one a tag found is its */
	if ((slot = dp_gen_vm_by_mac(g, tag != 0 ? rd_be16(frame + 14) & 0x0fff : 0,
	    from_vm ? frame + 6 : frame)) < 0)
		return -1;
	v = &g->vms[slot];
	if ((tag == 0 && v->id.vlan != 0) ||
	    (from_vm && (!v->id.has4 || memcmp(ip + 12, v->id.ip4, 4) != 0)))
		return -1;
	dp_lean_key(k, (uint16_t)slot, th, from_vm ? ip + 16 : ip + 12, from_vm);
	if (from_vm) {
		l->seq = rd_be32(th + 4);
		l->payload_len = (uint16_t)payload_len;
	} else {
		l->ack = rd_be32(th + 8);
		l->win = rd_be16(th + 14);
		l->flags = th[13];
	}
	/* last, so that little else is live across the sum; the port's word first */
	if (fl == (RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD))
		return slot;
	return fl == 0 && dp_rx_csums4_tcp_ok(ip, total) ? slot : -1;
}

/*
 * Frame m from the VM port (from_vm) or the uplink, if it is of the lean shape: one
 * segment, untagged or with one 802.1Q tag (a VLAN's VMs' every frame has it), IPv4
 * without options and not a fragment, TCP whose lengths fit and that neither opens nor
 * ends anything (every frame pkt_decode_fast() takes of this shape decodes alike), its
 * checksums right (in software as dp_rx_csums4_ok(), or both marked good by the port),
 * from (to) the VM its source (destination) MAC and tag name, untagged only for one
 * configured without a VLAN (dp_vlan_tags_ok()), and from the VM, with that VM's IPv4
 * source address. For such a frame the general first stage says DP_RX_PLAIN, then
 * CONTINUE with this key (dp_decide_vm_plain() or _uplink_plain(), dp_conn_key()).
 * Returns the VM's slot, its flow key in *k and the rest in *l (seq and payload_len from
 * the VM, the others toward it); -1 for any other frame (then *k and *l are scratch).
 * Inline where from_vm is a constant.
 */
static __rte_always_inline int
dp_lean(const struct dp_gen *g, const struct rte_mbuf *m, struct dp_flow_key *k,
    struct dp_lean *l, bool from_vm)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t type_ver;

	/*
	 * the lengths dp_lean_at() checks ask for at least this many bytes: read none before;
	 * an untagged frame's ethertype and IPv4 version and header length in one load
	 */
	if (m->nb_segs != 1 || rte_pktmbuf_data_len(m) < DP_LEAN_L4 + 20)
		return -1;
	memcpy(&type_ver, frame + 12, 4);
	if (likely((be32toh(type_ver) & 0xffffff00) == ((uint32_t)PKT_ETH_P_IPV4 << 16 | 0x4500)))
		return dp_lean_at(g, m, k, l, from_vm, 0);
	return rd_be16(frame + 12) == PKT_ETH_P_8021Q ? dp_lean_at(g, m, k, l, from_vm, 4) : -1;
}

/*
 * The struct pkt the general path would have made of a lean frame m, for one whose flow
 * is not steady after all: what pkt_decode_fast() writes of it, from the bytes dp_lean()
 * checked (at most one tag, IPv4 without options, not a fragment, TCP whose lengths fit),
 * with none of its checks asked again (test_dp_lean holds the two equal, field by field).
 * Inline: as a call (which the tag's branches made of it) it cost ~100 Ir a connection.
 */
static __rte_always_inline void
dp_lean_decode(const struct rte_mbuf *m, struct pkt *p)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	bool tagged = rd_be16(frame + 12) == PKT_ETH_P_8021Q;
	const uint8_t *ip = frame + 14 + 4 * tagged, *th = ip + 20;
	uint16_t l4_len = (uint16_t)(rd_be16(ip + 2) - 20), off = (uint16_t)(th[12] >> 4) * 4;

	p->dst_mac = frame;
	p->src_mac = frame + 6;
	p->vlan = tagged ? rd_be16(frame + 14) & 0x0fff : 0;
	p->nb_vlans = tagged;
	p->hop_limit = ip[8];
	p->ethertype = PKT_ETH_P_IPV4;
	p->l3_off = (uint16_t)(ip - frame);
	p->family = 4;
	p->proto = PKT_PROTO_TCP;
	p->fragment = false;
	p->src_route = false;
	p->l4_off = (uint16_t)(th - frame);
	p->l4_len = l4_len;
	pkt_addr4(p->src, ip + 12);
	pkt_addr4(p->dst, ip + 16);
	p->sport = rd_be16(th);
	p->dport = rd_be16(th + 2);
	p->tcp_flags = th[13];
	p->tcp_wscale = PKT_WSCALE_NONE;	/* a SYN's, and no lean frame is one */
	p->tcp_win = rd_be16(th + 14);
	p->seq = rd_be32(th + 4);
	p->ack = rd_be32(th + 8);
	p->payload = th + off;
	p->payload_len = (size_t)(l4_len - off);
}

#endif
