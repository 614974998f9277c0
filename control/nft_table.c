/*
 * Building "table bridge <table>": counters, sets, the per-VM chains and their rules, and the
 * base chain on the bridge forward hook that dispatches each frame to its VM's chain. The
 * expressions are the ones nft itself generates for the rules quoted above each function,
 * so "nft list table bridge <table>" shows operators readable rules.
 *
 * Design, for the traffic the fast path hands the kernel (ICMP, IP fragments, other IP
 * protocols; SPEC §4 step 8):
 *
 * - Return traffic is judged statelessly. This kernel is built without nf_conntrack_bridge
 *   (CONFIG_NF_CONNTRACK_BRIDGE unset, no modules): "ct state" in a bridge table fails with
 *   EPROTO. br_netfilter could hand bridged frames to an inet table's conntrack, but only by
 *   sending every bridged frame of the namespace through the IP hooks (a per-namespace
 *   sysctl, not ours to flip) and splitting enforcement over two tables. So a frame to a VM
 *   passes only when it mirrors what the VM may send: source address . protocol . source
 *   port in the VM's set (or the address alone for a later fragment), an echo reply from a
 *   bound address, or an ICMP error whose quoted header shows a packet from the VM to a
 *   bound address. The price: a bound host may send the VM packets it did not ask for,
 *   which the fast path (for TCP and UDP) would call unsolicited.
 * - ICMP from a VM passes to any address bound for it (<vm>_v4addr), whatever ports the
 *   binding's rules allow: ports restrict TCP and UDP, and an echo to a host the VM may
 *   already talk to reveals nothing new. Quoted-header checks let routers' errors (PMTU
 *   "fragmentation needed", time exceeded) reach the VM for its own bound traffic, which the
 *   fast path's TCP flows need, without letting arbitrary ICMP in.
 * - Fragments: the first fragment carries the transport header, so it is judged like an
 *   unfragmented packet (address . protocol . port). Later fragments carry no ports and
 *   pass to (from) an address bound for the VM, but only for ICMP and other protocols: the
 *   fast path reassembles TCP and UDP itself and judges the whole datagram, so their
 *   fragments never come here, and if one did it could not pass on its address alone.
 * - Other IP protocols pass only with an explicit address . protocol . 0 element.
 * - ARP and neighbour discovery from a VM pass only with its own addresses (a neighbour
 *   advertisement only for its own or a link-local target); spoofed sources are dropped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter_bridge.h>
#include <netinet/in.h>

#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "nft_int.h"

/* nft's datatype ids (nftables datatype.h); a concatenation packs them 6 bits apart. */
#define NFT_TYPE_IPADDR		7
#define NFT_TYPE_IP6ADDR	8
#define NFT_TYPE_INET_PROTO	12
#define NFT_TYPE_INET_SERVICE	13
#define NFT_CONCAT3(a, b, c)	((a) << 12 | (b) << 6 | (c))

/* Every name the table holds for one VM. */
struct nft_names {
	char out[NFT_OBJ_NAME_MAX], in[NFT_OBJ_NAME_MAX];
	char acc[NFT_OBJ_NAME_MAX], drop[NFT_OBJ_NAME_MAX];
	char in_acc[NFT_OBJ_NAME_MAX], in_drop[NFT_OBJ_NAME_MAX];
	char set[NFT_SET_KINDS][NFT_OBJ_NAME_MAX];
};

static void
nft_names(const struct nft_vmi *v, struct nft_names *n)
{
	snprintf(n->out, sizeof(n->out), "%s_out", v->name);
	snprintf(n->in, sizeof(n->in), "%s_in", v->name);
	snprintf(n->acc, sizeof(n->acc), "%s_accept", v->name);
	snprintf(n->drop, sizeof(n->drop), "%s_drop", v->name);
	snprintf(n->in_acc, sizeof(n->in_acc), "%s_in_accept", v->name);
	snprintf(n->in_drop, sizeof(n->in_drop), "%s_in_drop", v->name);
	for (int k = 0; k < NFT_SET_KINDS; k++)
		nft_set_name(n->set[k], sizeof(n->set[k]), v, (enum nft_set_kind)k);
}

_Static_assert(sizeof(struct nft_names) == NFT_VM_NAMES * NFT_OBJ_NAME_MAX,
    "NFT_VM_NAMES must count every name");

/* Every name VM v gives the table, for nft_open()'s clash check. */
void
nft_vm_names(const struct nft_vmi *v, char out[NFT_VM_NAMES][NFT_OBJ_NAME_MAX])
{
	struct nft_names n;

	nft_names(v, &n);
	memcpy(out, &n, sizeof(n));
}

/* Rule builder: expressions appended in order; any allocation failure poisons the rule. */
struct nft_rb {
	struct nftnl_rule *r;
	bool bad;
};

static struct nftnl_expr *
rb_expr(struct nft_rb *b, const char *name)
{
	struct nftnl_expr *e = nftnl_expr_alloc(name);

	if (e == NULL)
		b->bad = true;
	return e;
}

static void
rb_add(struct nft_rb *b, struct nftnl_expr *e, bool ok)
{
	if (e == NULL)
		return;
	if (!ok) {
		nftnl_expr_free(e);
		b->bad = true;
		return;
	}
	nftnl_rule_add_expr(b->r, e);
}

static void
rb_payload(struct nft_rb *b, uint32_t base, uint32_t off, uint32_t len, uint32_t dreg)
{
	struct nftnl_expr *e = rb_expr(b, "payload");

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, dreg);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
	rb_add(b, e, true);
}

static void
rb_meta(struct nft_rb *b, uint32_t key, uint32_t dreg)
{
	struct nftnl_expr *e = rb_expr(b, "meta");

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, dreg);
	rb_add(b, e, true);
}

static void
rb_cmp(struct nft_rb *b, enum nft_cmp_ops op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = rb_expr(b, "cmp");

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
	rb_add(b, e, nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len) == 0);
}

/* reg &= mask (xor 0), as nft emits for "x & mask" and prefixes. */
static void
rb_mask(struct nft_rb *b, uint32_t reg, const void *mask, uint32_t len)
{
	static const uint8_t zero[16];
	struct nftnl_expr *e = rb_expr(b, "bitwise");

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, reg);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, reg);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
	rb_add(b, e, nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len) == 0 &&
	    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, len) == 0);
}

static void
rb_lookup(struct nft_rb *b, const char *set)
{
	struct nftnl_expr *e = rb_expr(b, "lookup");

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1);
	rb_add(b, e, nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set) == 0);
}

/* IPv6 extension header field (nft "frag frag-off"). */
static void
rb_exthdr(struct nft_rb *b, uint8_t type, uint32_t off, uint32_t len)
{
	struct nftnl_expr *e = rb_expr(b, "exthdr");

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_DREG, NFT_REG_1);
	nftnl_expr_set_u8(e, NFTNL_EXPR_EXTHDR_TYPE, type);
	nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OFFSET, off);
	nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_LEN, len);
	nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OP, NFT_EXTHDR_OP_IPV6);
	rb_add(b, e, true);
}

/* counter name "<name>": the named counter object counts every frame that gets here. */
static void
rb_counter(struct nft_rb *b, const char *name)
{
	struct nftnl_expr *e = rb_expr(b, "objref");

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
	rb_add(b, e, nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, name) == 0);
}

static void
rb_verdict(struct nft_rb *b, int verdict, const char *chain)
{
	struct nftnl_expr *e = rb_expr(b, "immediate");
	bool ok = true;

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
	if (chain != NULL)
		ok = nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain) == 0;
	rb_add(b, e, ok);
}

/* load from a header, compare */
static void
rb_match(struct nft_rb *b, uint32_t base, uint32_t off, enum nft_cmp_ops op, const void *data,
    uint32_t len)
{
	rb_payload(b, base, off, len, NFT_REG_1);
	rb_cmp(b, op, data, len);
}

/* meta protocol <ethertype> (skb->protocol: right with or without an offloaded VLAN tag) */
static void
rb_proto(struct nft_rb *b, uint16_t ethertype)
{
	uint16_t be = htons(ethertype);

	rb_meta(b, NFT_META_PROTOCOL, NFT_REG_1);
	rb_cmp(b, NFT_CMP_EQ, &be, sizeof(be));
}

/* meta l4proto <proto> */
static void
rb_l4(struct nft_rb *b, uint8_t proto)
{
	rb_meta(b, NFT_META_L4PROTO, NFT_REG_1);
	rb_cmp(b, NFT_CMP_EQ, &proto, 1);
}

/*
 * "ip protocol != tcp ip protocol != udp", or for IPv6 the same of the fragment header's
 * next header: the fast path reassembles TCP and UDP and decides them whole, so a TCP or
 * UDP fragment here never passes on its address alone.
 */
static void
rb_frag_not_tcp_udp(struct nft_rb *b, bool v6)
{
	static const uint8_t tcp = IPPROTO_TCP, udp = IPPROTO_UDP;

	for (int i = 0; i < 2; i++) {
		if (v6)
			rb_exthdr(b, IPPROTO_FRAGMENT, 0, 1);
		else
			rb_payload(b, NFT_PAYLOAD_NETWORK_HEADER, 9, 1, NFT_REG_1);
		rb_cmp(b, NFT_CMP_NEQ, i == 0 ? &tcp : &udp, 1);
	}
}

/* icmp type / icmpv6 type lo-hi (the first byte of the transport header) */
static void
rb_icmp_type(struct nft_rb *b, uint8_t lo, uint8_t hi)
{
	rb_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1, NFT_REG_1);
	if (lo == hi) {
		rb_cmp(b, NFT_CMP_EQ, &lo, 1);
		return;
	}
	rb_cmp(b, NFT_CMP_GTE, &lo, 1);
	rb_cmp(b, NFT_CMP_LTE, &hi, 1);
}

/*
 * <addr> . meta l4proto . th <port> @set, where addr is at nh+aoff (alen bytes) and the port
 * at th+poff; any_port masks the port to 0 to find the protocol's every-port element. The
 * fields sit on consecutive 32-bit registers from NFT_REG_1, as nft concatenations do.
 */
static void
rb_concat(struct nft_rb *b, uint32_t aoff, uint32_t alen, uint32_t poff, bool any_port,
    const char *set)
{
	static const uint8_t zero[2];
	uint32_t preg = NFT_REG32_00 + alen / 4;

	rb_payload(b, NFT_PAYLOAD_NETWORK_HEADER, aoff, alen, NFT_REG_1);
	rb_meta(b, NFT_META_L4PROTO, preg);
	rb_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, poff, 2, preg + 1);
	if (any_port)
		rb_mask(b, preg + 1, zero, 2);
	rb_lookup(b, set);
}

static int
rb_begin(const struct nft_ctx *c, struct nft_rb *b, const char *chain)
{
	b->bad = false;
	if ((b->r = nftnl_rule_alloc()) == NULL)
		return -ENOMEM;
	nftnl_rule_set_u32(b->r, NFTNL_RULE_FAMILY, NFT_FAMILY);
	if (nftnl_rule_set_str(b->r, NFTNL_RULE_TABLE, c->table) < 0 ||
	    nftnl_rule_set_str(b->r, NFTNL_RULE_CHAIN, chain) < 0)
		b->bad = true;
	return 0;
}

/* Ends the rule with [counter] verdict, appends it to the batch, frees it. */
static int
rb_end(struct nft_ctx *c, struct nft_batch *bt, struct nft_rb *b, const char *counter,
    int verdict, const char *chain)
{
	struct nlmsghdr *nlh;
	int rc = 0;

	if (counter != NULL)
		rb_counter(b, counter);
	rb_verdict(b, verdict, chain);
	if (b->bad) {
		rc = -ENOMEM;
	} else {
		nlh = nft_batch_hdr(c, bt, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND,
		    NFT_MSG_BOUND);
		nftnl_rule_nlmsg_build_payload(nlh, b->r);
		nft_batch_next(bt);
		rc = bt->bad ? -ENOMEM : 0;
	}
	nftnl_rule_free(b->r);
	b->r = NULL;
	return rc;
}

/*
 * One rule: RULE(), the matches, END() with its counter and verdict. Both return the error
 * from the enclosing function (its int rc); rb_end() frees the rule either way.
 */
#define RULE(c, b, chain)	do {						\
	if ((rc = rb_begin((c), (b), (chain))) < 0)				\
		return rc;							\
} while (0)
#define END(c, bt, b, ctr, v)	do {						\
	if ((rc = rb_end((c), (bt), (b), (ctr), (v), NULL)) < 0)		\
		return rc;							\
} while (0)

static const uint8_t ll_mask[16] = { 0xff, 0xc0 };	/* fe80::/10 */
static const uint8_t ll_net[16] = { 0xfe, 0x80 };
static const uint8_t any6[16];

/* From the VM, IPv4:
 *	meta protocol arp arp htype 1 arp ptype ip arp hlen 6 arp plen 4
 *	    arp saddr ether <mac> arp saddr ip { <ip4>, 0.0.0.0 } counter accept
 *	ip saddr != <ip4> counter drop
 *	ip daddr . meta l4proto . th dport [& 0] @<vm>_v4 counter accept
 *	ip frag-off & 8191 != 0 ip protocol != { tcp, udp } ip daddr @<vm>_v4addr counter accept
 *	meta l4proto icmp ip daddr @<vm>_v4addr counter accept
 */
static int
nft_out4(struct nft_ctx *c, struct nft_batch *bt, const struct nft_vmi *v,
    const struct nft_names *n)
{
	static const uint8_t arp_hdr[6] = { 0, 1, 8, 0, 6, 4 };	/* Ethernet, IPv4, 6, 4 */
	static const uint8_t frag_mask[2] = { 0x1f, 0xff }, zero[2];
	uint8_t sender[10];
	struct nft_rb b;
	int rc;

	for (int probe = 0; probe < 2; probe++) {	/* RFC 5227 probes say 0.0.0.0 */
		memcpy(sender, v->mac, 6);
		memcpy(sender + 6, v->ip4, 4);
		if (probe)
			memset(sender + 6, 0, 4);
		RULE(c, &b, n->out);
		rb_proto(&b, ETH_P_ARP);
		rb_match(&b, NFT_PAYLOAD_NETWORK_HEADER, 0, NFT_CMP_EQ, arp_hdr, 4);
		rb_match(&b, NFT_PAYLOAD_NETWORK_HEADER, 4, NFT_CMP_EQ, arp_hdr + 4, 2);
		rb_match(&b, NFT_PAYLOAD_NETWORK_HEADER, 8, NFT_CMP_EQ, sender, 10);
		END(c, bt, &b, n->acc, NF_ACCEPT);
	}

	RULE(c, &b, n->out);
	rb_proto(&b, ETH_P_IP);
	rb_match(&b, NFT_PAYLOAD_NETWORK_HEADER, 12, NFT_CMP_NEQ, v->ip4, 4);
	END(c, bt, &b, n->drop, NF_DROP);

	for (int any = 0; any < 2; any++) {
		RULE(c, &b, n->out);
		rb_proto(&b, ETH_P_IP);
		rb_concat(&b, 16, 4, 2, any, n->set[NFT_SET_V4]);
		END(c, bt, &b, n->acc, NF_ACCEPT);
	}

	RULE(c, &b, n->out);
	rb_proto(&b, ETH_P_IP);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 6, 2, NFT_REG_1);
	rb_mask(&b, NFT_REG_1, frag_mask, 2);
	rb_cmp(&b, NFT_CMP_NEQ, zero, 2);
	rb_frag_not_tcp_udp(&b, false);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG_1);
	rb_lookup(&b, n->set[NFT_SET_V4ADDR]);
	END(c, bt, &b, n->acc, NF_ACCEPT);

	RULE(c, &b, n->out);
	rb_proto(&b, ETH_P_IP);
	rb_l4(&b, IPPROTO_ICMP);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG_1);
	rb_lookup(&b, n->set[NFT_SET_V4ADDR]);
	END(c, bt, &b, n->acc, NF_ACCEPT);
	return 0;
}

/* ip6 saddr <src> [& <mask>] */
static void
rb_saddr6(struct nft_rb *b, const uint8_t *src, const uint8_t *mask)
{
	rb_payload(b, NFT_PAYLOAD_NETWORK_HEADER, 8, 16, NFT_REG_1);
	if (mask != NULL)
		rb_mask(b, NFT_REG_1, mask, 16);
	rb_cmp(b, NFT_CMP_EQ, src, 16);
}

/* From the VM, IPv6:
 *	icmpv6 type nd-neighbor-advert @th,64,128 != <ip6> @th,64,128 & ffc0:: != fe80:: drop
 *	icmpv6 type 133-136 ip6 saddr { <ip6>, fe80::/10 } accept; 133-135 from :: (DAD)
 *	icmpv6 type mld2-listener-report ip6 saddr { fe80::/10, :: } accept
 *	ip6 saddr != <ip6> drop
 *	ip6 daddr . meta l4proto . th dport [& 0] @<vm>_v6 accept
 *	frag frag-off != 0 frag nexthdr != { tcp, udp } ip6 daddr @<vm>_v6addr accept
 *	meta l4proto ipv6-icmp ip6 daddr @<vm>_v6addr accept
 */
static int
nft_out6(struct nft_ctx *c, struct nft_batch *bt, const struct nft_vmi *v,
    const struct nft_names *n)
{
	static const uint8_t frag_mask[2] = { 0xff, 0xf8 }, zero[2];
	static const struct { uint8_t lo, hi; const uint8_t *src, *mask; } nd[] = {
		{ 133, 136, NULL, NULL },		/* the VM's own address */
		{ 133, 136, ll_net, ll_mask },
		{ 133, 135, any6, NULL },		/* RS, NS for DAD (RFC 4862 5.4) */
		{ 143, 143, ll_net, ll_mask },		/* MLDv2 report (RFC 3810 5.2.13) */
		{ 143, 143, any6, NULL },
	};
	struct nft_rb b;
	int rc;

	/* An advertisement may only claim the VM's own or a link-local address. */
	RULE(c, &b, n->out);
	rb_proto(&b, ETH_P_IPV6);
	rb_l4(&b, IPPROTO_ICMPV6);
	rb_icmp_type(&b, 136, 136);
	rb_match(&b, NFT_PAYLOAD_TRANSPORT_HEADER, 8, NFT_CMP_NEQ, v->ip6, 16);
	rb_payload(&b, NFT_PAYLOAD_TRANSPORT_HEADER, 8, 16, NFT_REG_1);
	rb_mask(&b, NFT_REG_1, ll_mask, 16);
	rb_cmp(&b, NFT_CMP_NEQ, ll_net, 16);
	END(c, bt, &b, n->drop, NF_DROP);

	for (size_t i = 0; i < sizeof(nd) / sizeof(nd[0]); i++) {
		RULE(c, &b, n->out);
		rb_proto(&b, ETH_P_IPV6);
		rb_l4(&b, IPPROTO_ICMPV6);
		rb_icmp_type(&b, nd[i].lo, nd[i].hi);
		rb_saddr6(&b, nd[i].src != NULL ? nd[i].src : v->ip6, nd[i].mask);
		END(c, bt, &b, n->acc, NF_ACCEPT);
	}

	RULE(c, &b, n->out);
	rb_proto(&b, ETH_P_IPV6);
	rb_match(&b, NFT_PAYLOAD_NETWORK_HEADER, 8, NFT_CMP_NEQ, v->ip6, 16);
	END(c, bt, &b, n->drop, NF_DROP);

	for (int any = 0; any < 2; any++) {
		RULE(c, &b, n->out);
		rb_proto(&b, ETH_P_IPV6);
		rb_concat(&b, 24, 16, 2, any, n->set[NFT_SET_V6]);
		END(c, bt, &b, n->acc, NF_ACCEPT);
	}

	RULE(c, &b, n->out);
	rb_proto(&b, ETH_P_IPV6);
	rb_exthdr(&b, IPPROTO_FRAGMENT, 2, 2);
	rb_mask(&b, NFT_REG_1, frag_mask, 2);
	rb_cmp(&b, NFT_CMP_NEQ, zero, 2);
	rb_frag_not_tcp_udp(&b, true);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 24, 16, NFT_REG_1);
	rb_lookup(&b, n->set[NFT_SET_V6ADDR]);
	END(c, bt, &b, n->acc, NF_ACCEPT);

	RULE(c, &b, n->out);
	rb_proto(&b, ETH_P_IPV6);
	rb_l4(&b, IPPROTO_ICMPV6);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 24, 16, NFT_REG_1);
	rb_lookup(&b, n->set[NFT_SET_V6ADDR]);
	END(c, bt, &b, n->acc, NF_ACCEPT);
	return 0;
}

/* To the VM, IPv4:
 *	meta protocol arp arp daddr ip <ip4> accept
 *	ip daddr != <ip4> drop
 *	ip saddr . meta l4proto . th sport [& 0] @<vm>_v4 accept
 *	ip frag-off & 8191 != 0 ip protocol != { tcp, udp } ip saddr @<vm>_v4addr accept
 *	icmp type echo-reply ip saddr @<vm>_v4addr accept
 *	icmp type { 3, 11, 12 } @th,160,32 <ip4> @th,192,32 @<vm>_v4addr accept
 * The last: an error quotes the offending packet's header 8 bytes into the ICMP message
 * (RFC 792), whose source (+12) must be the VM and destination (+16) bound for it.
 */
static int
nft_in4(struct nft_ctx *c, struct nft_batch *bt, const struct nft_vmi *v,
    const struct nft_names *n)
{
	static const uint8_t frag_mask[2] = { 0x1f, 0xff }, zero[2], errs[] = { 3, 11, 12 };
	struct nft_rb b;
	int rc;

	RULE(c, &b, n->in);
	rb_proto(&b, ETH_P_ARP);
	rb_match(&b, NFT_PAYLOAD_NETWORK_HEADER, 24, NFT_CMP_EQ, v->ip4, 4);
	END(c, bt, &b, n->in_acc, NF_ACCEPT);

	RULE(c, &b, n->in);
	rb_proto(&b, ETH_P_IP);
	rb_match(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, NFT_CMP_NEQ, v->ip4, 4);
	END(c, bt, &b, n->in_drop, NF_DROP);

	for (int any = 0; any < 2; any++) {
		RULE(c, &b, n->in);
		rb_proto(&b, ETH_P_IP);
		rb_concat(&b, 12, 4, 0, any, n->set[NFT_SET_V4]);
		END(c, bt, &b, n->in_acc, NF_ACCEPT);
	}

	RULE(c, &b, n->in);
	rb_proto(&b, ETH_P_IP);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 6, 2, NFT_REG_1);
	rb_mask(&b, NFT_REG_1, frag_mask, 2);
	rb_cmp(&b, NFT_CMP_NEQ, zero, 2);
	rb_frag_not_tcp_udp(&b, false);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG_1);
	rb_lookup(&b, n->set[NFT_SET_V4ADDR]);
	END(c, bt, &b, n->in_acc, NF_ACCEPT);

	RULE(c, &b, n->in);
	rb_proto(&b, ETH_P_IP);
	rb_l4(&b, IPPROTO_ICMP);
	rb_icmp_type(&b, 0, 0);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG_1);
	rb_lookup(&b, n->set[NFT_SET_V4ADDR]);
	END(c, bt, &b, n->in_acc, NF_ACCEPT);

	for (size_t i = 0; i < sizeof(errs); i++) {
		RULE(c, &b, n->in);
		rb_proto(&b, ETH_P_IP);
		rb_l4(&b, IPPROTO_ICMP);
		rb_icmp_type(&b, errs[i], errs[i]);
		rb_match(&b, NFT_PAYLOAD_TRANSPORT_HEADER, 20, NFT_CMP_EQ, v->ip4, 4);
		rb_payload(&b, NFT_PAYLOAD_TRANSPORT_HEADER, 24, 4, NFT_REG_1);
		rb_lookup(&b, n->set[NFT_SET_V4ADDR]);
		END(c, bt, &b, n->in_acc, NF_ACCEPT);
	}
	return 0;
}

/* To the VM, IPv6:
 *	icmpv6 type 130-137 accept			(MLD queries, RA, NS, NA, redirect)
 *	ip6 daddr != <ip6> drop
 *	ip6 saddr . meta l4proto . th sport [& 0] @<vm>_v6 accept
 *	frag frag-off != 0 frag nexthdr != { tcp, udp } ip6 saddr @<vm>_v6addr accept
 *	icmpv6 type echo-reply ip6 saddr @<vm>_v6addr accept
 *	icmpv6 type 1-4 @th,128,128 <ip6> @th,256,128 @<vm>_v6addr accept
 * ICMPv6 errors quote the packet after 8 bytes too (RFC 4443 3): source at +8, dest at +24.
 */
static int
nft_in6(struct nft_ctx *c, struct nft_batch *bt, const struct nft_vmi *v,
    const struct nft_names *n)
{
	static const uint8_t frag_mask[2] = { 0xff, 0xf8 }, zero[2];
	struct nft_rb b;
	int rc;

	RULE(c, &b, n->in);
	rb_proto(&b, ETH_P_IPV6);
	rb_l4(&b, IPPROTO_ICMPV6);
	rb_icmp_type(&b, 130, 137);
	END(c, bt, &b, n->in_acc, NF_ACCEPT);

	RULE(c, &b, n->in);
	rb_proto(&b, ETH_P_IPV6);
	rb_match(&b, NFT_PAYLOAD_NETWORK_HEADER, 24, NFT_CMP_NEQ, v->ip6, 16);
	END(c, bt, &b, n->in_drop, NF_DROP);

	for (int any = 0; any < 2; any++) {
		RULE(c, &b, n->in);
		rb_proto(&b, ETH_P_IPV6);
		rb_concat(&b, 8, 16, 0, any, n->set[NFT_SET_V6]);
		END(c, bt, &b, n->in_acc, NF_ACCEPT);
	}

	RULE(c, &b, n->in);
	rb_proto(&b, ETH_P_IPV6);
	rb_exthdr(&b, IPPROTO_FRAGMENT, 2, 2);
	rb_mask(&b, NFT_REG_1, frag_mask, 2);
	rb_cmp(&b, NFT_CMP_NEQ, zero, 2);
	rb_frag_not_tcp_udp(&b, true);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 8, 16, NFT_REG_1);
	rb_lookup(&b, n->set[NFT_SET_V6ADDR]);
	END(c, bt, &b, n->in_acc, NF_ACCEPT);

	RULE(c, &b, n->in);
	rb_proto(&b, ETH_P_IPV6);
	rb_l4(&b, IPPROTO_ICMPV6);
	rb_icmp_type(&b, 129, 129);
	rb_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 8, 16, NFT_REG_1);
	rb_lookup(&b, n->set[NFT_SET_V6ADDR]);
	END(c, bt, &b, n->in_acc, NF_ACCEPT);

	RULE(c, &b, n->in);
	rb_proto(&b, ETH_P_IPV6);
	rb_l4(&b, IPPROTO_ICMPV6);
	rb_icmp_type(&b, 1, 4);
	rb_match(&b, NFT_PAYLOAD_TRANSPORT_HEADER, 16, NFT_CMP_EQ, v->ip6, 16);
	rb_payload(&b, NFT_PAYLOAD_TRANSPORT_HEADER, 32, 16, NFT_REG_1);
	rb_lookup(&b, n->set[NFT_SET_V6ADDR]);
	END(c, bt, &b, n->in_acc, NF_ACCEPT);
	return 0;
}

/* The VM's tag: "vlan id <vid>", or "ether type != 8021q" for an untagged VM. */
static void
rb_vlan(struct nft_rb *b, uint16_t vlan)
{
	static const uint8_t tpid[2] = { 0x81, 0x00 }, vid_mask[2] = { 0x0f, 0xff };
	uint16_t vid = htons(vlan);

	if (vlan == 0) {
		rb_match(b, NFT_PAYLOAD_LL_HEADER, 12, NFT_CMP_NEQ, tpid, 2);
		return;
	}
	rb_match(b, NFT_PAYLOAD_LL_HEADER, 12, NFT_CMP_EQ, tpid, 2);
	rb_payload(b, NFT_PAYLOAD_LL_HEADER, 14, 2, NFT_REG_1);
	rb_mask(b, NFT_REG_1, vid_mask, 2);
	rb_cmp(b, NFT_CMP_EQ, &vid, 2);
}

/*
 * The base chain, policy drop:
 *	iifname != <tap a> iifname != <tap b> accept	(nft_set_ports(): other bridges)
 *	ether saddr <mac> <vlan> jump <vm>_out
 *	ether daddr <mac> <vlan> jump <vm>_in
 *	meta protocol arp accept			(the router's ARP; VMs' went above)
 *	icmpv6 type 130-137 accept			(the router's ND and MLD)
 *	counter name unknown_drop drop
 * A VM's frames are judged by its own chain first, so one VM can't ride on another's rules.
 */
static int
nft_dispatch(struct nft_ctx *c, struct nft_batch *bt)
{
	struct nft_names n;
	struct nft_rb b;
	int rc;

	if (c->ports[0][0] != '\0') {
		/*
		 * A hook is per namespace: the other bridges there are not ours. By input port,
		 * since this kernel's bridge meta (ibrname) is a module it may not have.
		 */
		RULE(c, &b, NFT_BASE_CHAIN);
		rb_meta(&b, NFT_META_IIFNAME, NFT_REG_1);
		rb_cmp(&b, NFT_CMP_NEQ, c->ports[0], sizeof(c->ports[0]));
		rb_meta(&b, NFT_META_IIFNAME, NFT_REG_1);
		rb_cmp(&b, NFT_CMP_NEQ, c->ports[1], sizeof(c->ports[1]));
		END(c, bt, &b, NULL, NF_ACCEPT);
	}
	for (uint16_t i = 0; i < c->nvms; i++) {
		const struct nft_vmi *v = &c->vms[i];

		nft_names(v, &n);
		for (int dir = 0; dir < 2; dir++) {
			RULE(c, &b, NFT_BASE_CHAIN);
			rb_match(&b, NFT_PAYLOAD_LL_HEADER, dir == 0 ? 6 : 0, NFT_CMP_EQ, v->mac, 6);
			rb_vlan(&b, v->vlan);
			if ((rc = rb_end(c, bt, &b, NULL, NFT_JUMP, dir == 0 ? n.out : n.in)) < 0)
				return rc;
		}
	}
	RULE(c, &b, NFT_BASE_CHAIN);
	rb_proto(&b, ETH_P_ARP);
	END(c, bt, &b, NULL, NF_ACCEPT);

	RULE(c, &b, NFT_BASE_CHAIN);
	rb_proto(&b, ETH_P_IPV6);
	rb_l4(&b, IPPROTO_ICMPV6);
	rb_icmp_type(&b, 130, 137);
	END(c, bt, &b, NULL, NF_ACCEPT);

	RULE(c, &b, NFT_BASE_CHAIN);
	END(c, bt, &b, NFT_UNKNOWN_COUNTER, NF_DROP);
	return 0;
}

/* What no rule accepted: counter name <vm>_drop drop, and <vm>_in_drop on the way in. */
static int
nft_tail(struct nft_ctx *c, struct nft_batch *bt, const struct nft_names *n)
{
	struct nft_rb b;
	int rc;

	RULE(c, &b, n->out);
	END(c, bt, &b, n->drop, NF_DROP);
	RULE(c, &b, n->in);
	END(c, bt, &b, n->in_drop, NF_DROP);
	return 0;
}

static int
nft_chain_put(struct nft_ctx *c, struct nft_batch *bt, const char *name, bool base)
{
	struct nftnl_chain *ch;
	struct nlmsghdr *nlh;
	int rc = -ENOMEM;

	if ((ch = nftnl_chain_alloc()) == NULL)
		return -ENOMEM;
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_FAMILY, NFT_FAMILY);
	if (nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, c->table) < 0 ||
	    nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, name) < 0)
		goto out;
	if (base) {
		/* fail closed: what no rule accepts is dropped */
		if (nftnl_chain_set_str(ch, NFTNL_CHAIN_TYPE, "filter") < 0)
			goto out;
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, NF_BR_FORWARD);
		nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, NF_BR_PRI_FILTER_BRIDGED);
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_POLICY, NF_DROP);
	}
	nlh = nft_batch_hdr(c, bt, NFT_MSG_NEWCHAIN, NLM_F_CREATE, NFT_MSG_BOUND);
	nftnl_chain_nlmsg_build_payload(nlh, ch);
	nft_batch_next(bt);
	rc = bt->bad ? -ENOMEM : 0;
out:
	nftnl_chain_free(ch);
	return rc;
}

static int
nft_counter_put(struct nft_ctx *c, struct nft_batch *bt, const char *name)
{
	struct nftnl_obj *o;
	struct nlmsghdr *nlh;
	int rc = -ENOMEM;

	if ((o = nftnl_obj_alloc()) == NULL)
		return -ENOMEM;
	nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, NFT_FAMILY);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	/* libnftnl 1.2.4's nftnl_obj_set_str() returns nothing: ask whether it stuck */
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, c->table);
	nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	if (!nftnl_obj_is_set(o, NFTNL_OBJ_TABLE) || !nftnl_obj_is_set(o, NFTNL_OBJ_NAME))
		goto out;
	for (size_t i = 0; i < c->ncarry; i++) {
		if (strcmp(c->carry[i].name, name) == 0) {
			nftnl_obj_set_u64(o, NFTNL_OBJ_CTR_PKTS, c->carry[i].pkts);
			nftnl_obj_set_u64(o, NFTNL_OBJ_CTR_BYTES, c->carry[i].bytes);
			break;
		}
	}
	nlh = nft_batch_hdr(c, bt, NFT_MSG_NEWOBJ, NLM_F_CREATE, NFT_MSG_BOUND);
	nftnl_obj_nlmsg_build_payload(nlh, o);
	nft_batch_next(bt);
	rc = bt->bad ? -ENOMEM : 0;
out:
	nftnl_obj_free(o);
	return rc;
}

static int
nft_set_put(struct nft_ctx *c, struct nft_batch *bt, const char *name, enum nft_set_kind k,
    uint32_t id)
{
	static const struct { uint32_t type, len; } key[NFT_SET_KINDS] = {
		[NFT_SET_V4] = { NFT_CONCAT3(NFT_TYPE_IPADDR, NFT_TYPE_INET_PROTO,
		    NFT_TYPE_INET_SERVICE), 12 },
		[NFT_SET_V4ADDR] = { NFT_TYPE_IPADDR, 4 },
		[NFT_SET_V6] = { NFT_CONCAT3(NFT_TYPE_IP6ADDR, NFT_TYPE_INET_PROTO,
		    NFT_TYPE_INET_SERVICE), 24 },
		[NFT_SET_V6ADDR] = { NFT_TYPE_IP6ADDR, 16 },
	};
	struct nftnl_set *s;
	struct nlmsghdr *nlh;
	int rc = -ENOMEM;

	if ((s = nftnl_set_alloc()) == NULL)
		return -ENOMEM;
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFT_FAMILY);
	if (nftnl_set_set_str(s, NFTNL_SET_TABLE, c->table) < 0 ||
	    nftnl_set_set_str(s, NFTNL_SET_NAME, name) < 0)
		goto out;
	nftnl_set_set_u32(s, NFTNL_SET_FLAGS, NFT_SET_TIMEOUT);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, key[k].type);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, key[k].len);
	nftnl_set_set_u32(s, NFTNL_SET_ID, id);
	nlh = nft_batch_hdr(c, bt, NFT_MSG_NEWSET, NLM_F_CREATE, NFT_MSG_BOUND);
	nftnl_set_nlmsg_build_payload(nlh, s);
	nft_batch_next(bt);
	rc = bt->bad ? -ENOMEM : 0;
out:
	nftnl_set_free(s);
	return rc;
}

static int
nft_table_msg(struct nft_ctx *c, struct nft_batch *bt, uint16_t type)
{
	struct nftnl_table *t;
	struct nlmsghdr *nlh;
	int rc = -ENOMEM;

	if ((t = nftnl_table_alloc()) == NULL)
		return -ENOMEM;
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFT_FAMILY);
	if (nftnl_table_set_str(t, NFTNL_TABLE_NAME, c->table) < 0)
		goto out;
	if (type == NFT_MSG_NEWTABLE)
		nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, 0);
	nlh = nft_batch_hdr(c, bt, type, type == NFT_MSG_NEWTABLE ? NLM_F_CREATE : 0,
	    NFT_MSG_BOUND);
	nftnl_table_nlmsg_build_payload(nlh, t);
	nft_batch_next(bt);
	rc = bt->bad ? -ENOMEM : 0;
out:
	nftnl_table_free(t);
	return rc;
}

/*
 * "delete the table if it is there" inside a batch: add (a no-op when it exists, since there
 * is no NLM_F_EXCL), then delete. Works on every kernel, unlike NFT_MSG_DESTROYTABLE (6.3).
 */
int
nft_table_del_put(struct nft_ctx *c, struct nft_batch *bt)
{
	int rc;

	if ((rc = nft_table_msg(c, bt, NFT_MSG_NEWTABLE)) < 0)
		return rc;
	return nft_table_msg(c, bt, NFT_MSG_DELTABLE);
}

/* The whole table, after nft_table_del_put(): objects before the rules that use them. */
int
nft_table_put(struct nft_ctx *c, struct nft_batch *bt)
{
	struct nft_names n;
	uint32_t id = 1;
	int rc;

	if ((rc = nft_table_msg(c, bt, NFT_MSG_NEWTABLE)) < 0 ||
	    (rc = nft_counter_put(c, bt, NFT_UNKNOWN_COUNTER)) < 0)
		return rc;
	for (uint16_t i = 0; i < c->nvms; i++) {
		nft_names(&c->vms[i], &n);
		if ((rc = nft_counter_put(c, bt, n.acc)) < 0 ||
		    (rc = nft_counter_put(c, bt, n.drop)) < 0 ||
		    (rc = nft_counter_put(c, bt, n.in_acc)) < 0 ||
		    (rc = nft_counter_put(c, bt, n.in_drop)) < 0)
			return rc;
		for (int k = 0; k < NFT_SET_KINDS; k++) {
			if ((rc = nft_set_put(c, bt, n.set[k], (enum nft_set_kind)k, id++)) < 0)
				return rc;
		}
		if ((rc = nft_chain_put(c, bt, n.out, false)) < 0 ||
		    (rc = nft_chain_put(c, bt, n.in, false)) < 0)
			return rc;
		if (c->vms[i].has4 && ((rc = nft_out4(c, bt, &c->vms[i], &n)) < 0 ||
		    (rc = nft_in4(c, bt, &c->vms[i], &n)) < 0))
			return rc;
		if (c->vms[i].has6 && ((rc = nft_out6(c, bt, &c->vms[i], &n)) < 0 ||
		    (rc = nft_in6(c, bt, &c->vms[i], &n)) < 0))
			return rc;
		if ((rc = nft_tail(c, bt, &n)) < 0)
			return rc;
	}
	if ((rc = nft_chain_put(c, bt, NFT_BASE_CHAIN, true)) < 0)
		return rc;
	return nft_dispatch(c, bt);
}
