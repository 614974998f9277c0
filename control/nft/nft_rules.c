/*
 * The rules of "table bridge <table>": the per-VM chains and the base chain on the bridge
 * forward hook that dispatches each frame to its VM's chain. Each table below is one chain's
 * rules for one family, quoted as "nft list table bridge <table>" shows them; the expressions
 * nft_rule.c makes of them are the ones nft itself generates for those rules, so operators
 * read readable rules.
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
 * - A port 0 element is a protocol's every port, so each tuple lookup runs twice: as sent,
 *   then with the port masked to 0.
 */
#include <netinet/in.h>

#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include "nft_rules.h"

/*
 * From the VM, IPv4 (every accept counts into <vm>_accept, every drop into <vm>_drop):
 *	arp htype 1 arp ptype ip arp hlen 6 arp plen 4
 *	    arp saddr ether <mac> arp saddr ip { <ip4>, 0.0.0.0 } accept
 *	ip saddr != <ip4> drop
 *	ip daddr . meta l4proto . th dport [& 0] @<vm>_v4 accept
 *	ip frag-off & 8191 != 0 ip protocol != { tcp, udp } ip daddr @<vm>_v4addr accept
 *	meta l4proto icmp ip daddr @<vm>_v4addr accept
 */
static const struct nft_rule nft_out4[] = {
	{ ETH_P_ARP, 0, {
		{ NFT_F_ARP_TYPES, NFT_T_EQ, .lit = { 0, 1, 8, 0 } },	/* Ethernet, IPv4 */
		{ NFT_F_ARP_LENS, NFT_T_EQ, .lit = { 6, 4 } },
		{ NFT_F_ARP_SENDER, NFT_T_EQ, NFT_V_ARP_SENDER },
	}, NF_ACCEPT },
	{ ETH_P_ARP, 0, {
		{ NFT_F_ARP_TYPES, NFT_T_EQ, .lit = { 0, 1, 8, 0 } },
		{ NFT_F_ARP_LENS, NFT_T_EQ, .lit = { 6, 4 } },
		{ NFT_F_ARP_SENDER, NFT_T_EQ, NFT_V_ARP_PROBE },	/* RFC 5227 probes */
	}, NF_ACCEPT },
	{ ETH_P_IP, 0, { { NFT_F_IP_SADDR, NFT_T_NEQ, NFT_V_IP4 } }, NF_DROP },
	{ ETH_P_IP, 0, { { NFT_F_IP_DADDR, NFT_T_TUPLE, .set = NFT_SET_V4 } }, NF_ACCEPT },
	{ ETH_P_IP, 0, { { NFT_F_IP_DADDR, NFT_T_TUPLE_ANYPORT, .set = NFT_SET_V4 } }, NF_ACCEPT },
	{ ETH_P_IP, 0, {
		{ NFT_F_IP_FRAG, NFT_T_NEQ, .mask = { 0x1f, 0xff } },
		{ NFT_F_IP_PROTO, NFT_T_NEQ, .lit = { IPPROTO_TCP } },
		{ NFT_F_IP_PROTO, NFT_T_NEQ, .lit = { IPPROTO_UDP } },
		{ NFT_F_IP_DADDR, NFT_T_IN, .set = NFT_SET_V4ADDR },
	}, NF_ACCEPT },
	{ ETH_P_IP, IPPROTO_ICMP, { { NFT_F_IP_DADDR, NFT_T_IN, .set = NFT_SET_V4ADDR } },
	    NF_ACCEPT },
};

/*
 * To the VM, IPv4 (into <vm>_in_accept and <vm>_in_drop):
 *	arp daddr ip <ip4> accept
 *	ip daddr != <ip4> drop
 *	ip saddr . meta l4proto . th sport [& 0] @<vm>_v4 accept
 *	ip frag-off & 8191 != 0 ip protocol != { tcp, udp } ip saddr @<vm>_v4addr accept
 *	icmp type echo-reply ip saddr @<vm>_v4addr accept
 *	icmp type { 3, 11, 12 } @th,160,32 <ip4> @th,192,32 @<vm>_v4addr accept
 * The last: an error quotes the offending packet's header 8 bytes into the ICMP message
 * (RFC 792), whose source (+12) must be the VM and destination (+16) bound for it.
 */
static const struct nft_rule nft_in4[] = {
	{ ETH_P_ARP, 0, { { NFT_F_ARP_TARGET_IP, NFT_T_EQ, NFT_V_IP4 } }, NF_ACCEPT },
	{ ETH_P_IP, 0, { { NFT_F_IP_DADDR, NFT_T_NEQ, NFT_V_IP4 } }, NF_DROP },
	{ ETH_P_IP, 0, { { NFT_F_IP_SADDR, NFT_T_TUPLE, .set = NFT_SET_V4 } }, NF_ACCEPT },
	{ ETH_P_IP, 0, { { NFT_F_IP_SADDR, NFT_T_TUPLE_ANYPORT, .set = NFT_SET_V4 } }, NF_ACCEPT },
	{ ETH_P_IP, 0, {
		{ NFT_F_IP_FRAG, NFT_T_NEQ, .mask = { 0x1f, 0xff } },
		{ NFT_F_IP_PROTO, NFT_T_NEQ, .lit = { IPPROTO_TCP } },
		{ NFT_F_IP_PROTO, NFT_T_NEQ, .lit = { IPPROTO_UDP } },
		{ NFT_F_IP_SADDR, NFT_T_IN, .set = NFT_SET_V4ADDR },
	}, NF_ACCEPT },
	{ ETH_P_IP, IPPROTO_ICMP, {
		{ NFT_F_ICMP_TYPE, NFT_T_EQ, .lit = { 0 } },
		{ NFT_F_IP_SADDR, NFT_T_IN, .set = NFT_SET_V4ADDR },
	}, NF_ACCEPT },
	{ ETH_P_IP, IPPROTO_ICMP, {
		{ NFT_F_ICMP_TYPE, NFT_T_EQ, .lit = { 3 } },	/* destination unreachable */
		{ NFT_F_ICMP_QUOTED_SADDR, NFT_T_EQ, NFT_V_IP4 },
		{ NFT_F_ICMP_QUOTED_DADDR, NFT_T_IN, .set = NFT_SET_V4ADDR },
	}, NF_ACCEPT },
	{ ETH_P_IP, IPPROTO_ICMP, {
		{ NFT_F_ICMP_TYPE, NFT_T_EQ, .lit = { 11 } },	/* time exceeded */
		{ NFT_F_ICMP_QUOTED_SADDR, NFT_T_EQ, NFT_V_IP4 },
		{ NFT_F_ICMP_QUOTED_DADDR, NFT_T_IN, .set = NFT_SET_V4ADDR },
	}, NF_ACCEPT },
	{ ETH_P_IP, IPPROTO_ICMP, {
		{ NFT_F_ICMP_TYPE, NFT_T_EQ, .lit = { 12 } },	/* parameter problem */
		{ NFT_F_ICMP_QUOTED_SADDR, NFT_T_EQ, NFT_V_IP4 },
		{ NFT_F_ICMP_QUOTED_DADDR, NFT_T_IN, .set = NFT_SET_V4ADDR },
	}, NF_ACCEPT },
};

#define NFT_LL_NET	{ 0xfe, 0x80 }	/* fe80::/10 */
#define NFT_LL_MASK	{ 0xff, 0xc0 }

/*
 * From the VM, IPv6:
 *	icmpv6 type nd-neighbor-advert @th,64,128 != <ip6> @th,64,128 & ffc0:: != fe80:: drop
 *	icmpv6 type 133-136 ip6 saddr { <ip6>, fe80::/10 } accept; 133-135 from :: (DAD)
 *	icmpv6 type mld2-listener-report ip6 saddr { fe80::/10, :: } accept
 *	ip6 saddr != <ip6> drop
 *	ip6 daddr . meta l4proto . th dport [& 0] @<vm>_v6 accept
 *	frag frag-off != 0 frag nexthdr != { tcp, udp } ip6 daddr @<vm>_v6addr accept
 *	meta l4proto ipv6-icmp ip6 daddr @<vm>_v6addr accept
 * The first: an advertisement may only claim the VM's own or a link-local address.
 */
static const struct nft_rule nft_out6[] = {
	{ ETH_P_IPV6, IPPROTO_ICMPV6, {
		{ NFT_F_ICMP_TYPE, NFT_T_EQ, .lit = { 136 } },
		{ NFT_F_ND_TARGET, NFT_T_NEQ, NFT_V_IP6 },
		{ NFT_F_ND_TARGET, NFT_T_NEQ, .lit = NFT_LL_NET, .mask = NFT_LL_MASK },
	}, NF_DROP },
	{ ETH_P_IPV6, IPPROTO_ICMPV6, {
		{ NFT_F_ICMP_TYPE, NFT_T_RANGE, .lit = { 133, 136 } },
		{ NFT_F_IP6_SADDR, NFT_T_EQ, NFT_V_IP6 },
	}, NF_ACCEPT },
	{ ETH_P_IPV6, IPPROTO_ICMPV6, {
		{ NFT_F_ICMP_TYPE, NFT_T_RANGE, .lit = { 133, 136 } },
		{ NFT_F_IP6_SADDR, NFT_T_EQ, .lit = NFT_LL_NET, .mask = NFT_LL_MASK },
	}, NF_ACCEPT },
	{ ETH_P_IPV6, IPPROTO_ICMPV6, {		/* RS, NS for DAD (RFC 4862 5.4) */
		{ NFT_F_ICMP_TYPE, NFT_T_RANGE, .lit = { 133, 135 } },
		{ NFT_F_IP6_SADDR, NFT_T_EQ, .lit = { 0 } },	/* :: */
	}, NF_ACCEPT },
	{ ETH_P_IPV6, IPPROTO_ICMPV6, {		/* MLDv2 report (RFC 3810 5.2.13) */
		{ NFT_F_ICMP_TYPE, NFT_T_EQ, .lit = { 143 } },
		{ NFT_F_IP6_SADDR, NFT_T_EQ, .lit = NFT_LL_NET, .mask = NFT_LL_MASK },
	}, NF_ACCEPT },
	{ ETH_P_IPV6, IPPROTO_ICMPV6, {
		{ NFT_F_ICMP_TYPE, NFT_T_EQ, .lit = { 143 } },
		{ NFT_F_IP6_SADDR, NFT_T_EQ, .lit = { 0 } },	/* :: */
	}, NF_ACCEPT },
	{ ETH_P_IPV6, 0, { { NFT_F_IP6_SADDR, NFT_T_NEQ, NFT_V_IP6 } }, NF_DROP },
	{ ETH_P_IPV6, 0, { { NFT_F_IP6_DADDR, NFT_T_TUPLE, .set = NFT_SET_V6 } }, NF_ACCEPT },
	{ ETH_P_IPV6, 0, { { NFT_F_IP6_DADDR, NFT_T_TUPLE_ANYPORT, .set = NFT_SET_V6 } },
	    NF_ACCEPT },
	{ ETH_P_IPV6, 0, {
		{ NFT_F_FRAG_OFF, NFT_T_NEQ, .mask = { 0xff, 0xf8 } },
		{ NFT_F_FRAG_NEXTHDR, NFT_T_NEQ, .lit = { IPPROTO_TCP } },
		{ NFT_F_FRAG_NEXTHDR, NFT_T_NEQ, .lit = { IPPROTO_UDP } },
		{ NFT_F_IP6_DADDR, NFT_T_IN, .set = NFT_SET_V6ADDR },
	}, NF_ACCEPT },
	{ ETH_P_IPV6, IPPROTO_ICMPV6, { { NFT_F_IP6_DADDR, NFT_T_IN, .set = NFT_SET_V6ADDR } },
	    NF_ACCEPT },
};

/*
 * To the VM, IPv6:
 *	icmpv6 type 130-137 accept			(MLD queries, RA, NS, NA, redirect)
 *	ip6 daddr != <ip6> drop
 *	ip6 saddr . meta l4proto . th sport [& 0] @<vm>_v6 accept
 *	frag frag-off != 0 frag nexthdr != { tcp, udp } ip6 saddr @<vm>_v6addr accept
 *	icmpv6 type echo-reply ip6 saddr @<vm>_v6addr accept
 *	icmpv6 type 1-4 @th,128,128 <ip6> @th,256,128 @<vm>_v6addr accept
 * ICMPv6 errors quote the packet after 8 bytes too (RFC 4443 3): source at +8, dest at +24.
 */
static const struct nft_rule nft_in6[] = {
	{ ETH_P_IPV6, IPPROTO_ICMPV6, { { NFT_F_ICMP_TYPE, NFT_T_RANGE, .lit = { 130, 137 } } },
	    NF_ACCEPT },
	{ ETH_P_IPV6, 0, { { NFT_F_IP6_DADDR, NFT_T_NEQ, NFT_V_IP6 } }, NF_DROP },
	{ ETH_P_IPV6, 0, { { NFT_F_IP6_SADDR, NFT_T_TUPLE, .set = NFT_SET_V6 } }, NF_ACCEPT },
	{ ETH_P_IPV6, 0, { { NFT_F_IP6_SADDR, NFT_T_TUPLE_ANYPORT, .set = NFT_SET_V6 } },
	    NF_ACCEPT },
	{ ETH_P_IPV6, 0, {
		{ NFT_F_FRAG_OFF, NFT_T_NEQ, .mask = { 0xff, 0xf8 } },
		{ NFT_F_FRAG_NEXTHDR, NFT_T_NEQ, .lit = { IPPROTO_TCP } },
		{ NFT_F_FRAG_NEXTHDR, NFT_T_NEQ, .lit = { IPPROTO_UDP } },
		{ NFT_F_IP6_SADDR, NFT_T_IN, .set = NFT_SET_V6ADDR },
	}, NF_ACCEPT },
	{ ETH_P_IPV6, IPPROTO_ICMPV6, {
		{ NFT_F_ICMP_TYPE, NFT_T_EQ, .lit = { 129 } },
		{ NFT_F_IP6_SADDR, NFT_T_IN, .set = NFT_SET_V6ADDR },
	}, NF_ACCEPT },
	{ ETH_P_IPV6, IPPROTO_ICMPV6, {
		{ NFT_F_ICMP_TYPE, NFT_T_RANGE, .lit = { 1, 4 } },
		{ NFT_F_ICMP6_QUOTED_SADDR, NFT_T_EQ, NFT_V_IP6 },
		{ NFT_F_ICMP6_QUOTED_DADDR, NFT_T_IN, .set = NFT_SET_V6ADDR },
	}, NF_ACCEPT },
};

/* What no rule accepted: counter name <vm>_drop drop, and <vm>_in_drop on the way in. */
static const struct nft_rule nft_rest[] = {
	{ .verdict = NF_DROP },
};

/* In the order nft_table.c always sent them, so rule handles stay as they were. */
static const struct nft_chain_rules nft_vm_chains[] = {
	{ NFT_REF_OUT, NFT_IF_V4, NFT_REF_ACCEPT, NFT_REF_DROP, nft_out4, NFT_COUNT(nft_out4) },
	{ NFT_REF_IN, NFT_IF_V4, NFT_REF_IN_ACCEPT, NFT_REF_IN_DROP, nft_in4, NFT_COUNT(nft_in4) },
	{ NFT_REF_OUT, NFT_IF_V6, NFT_REF_ACCEPT, NFT_REF_DROP, nft_out6, NFT_COUNT(nft_out6) },
	{ NFT_REF_IN, NFT_IF_V6, NFT_REF_IN_ACCEPT, NFT_REF_IN_DROP, nft_in6, NFT_COUNT(nft_in6) },
	{ NFT_REF_OUT, NFT_ALWAYS, NFT_REF_ACCEPT, NFT_REF_DROP, nft_rest, NFT_COUNT(nft_rest) },
	{ NFT_REF_IN, NFT_ALWAYS, NFT_REF_IN_ACCEPT, NFT_REF_IN_DROP, nft_rest,
	    NFT_COUNT(nft_rest) },
};

const struct nft_ruleset nft_rules_vm = { nft_vm_chains, NFT_COUNT(nft_vm_chains) };

/*
 * The base chain, policy drop:
 *	iifname != <tap a> iifname != <tap b> accept	(nft_set_ports(): other bridges)
 *	ether saddr <mac> <vlan> jump <vm>_out		(per VM; <vlan>: "vlan id <vid>",
 *	ether daddr <mac> <vlan> jump <vm>_in		or "ether type != 8021q" untagged)
 *	meta protocol arp accept			(the router's ARP; VMs' went above)
 *	icmpv6 type 130-137 accept			(the router's ND and MLD)
 *	counter name unknown_drop drop
 * A VM's frames are judged by its own chain first, so one VM can't ride on another's rules.
 * A hook is per namespace: the other bridges there are not ours. They are told apart by
 * input port, since this kernel's bridge meta (ibrname) is a module it may not have.
 */
static const struct nft_rule nft_other_bridges[] = {
	{ 0, 0, {
		{ NFT_F_IIFNAME, NFT_T_NEQ, NFT_V_PORT_A },
		{ NFT_F_IIFNAME, NFT_T_NEQ, NFT_V_PORT_B },
	}, NF_ACCEPT },
};

static const struct nft_rule nft_jumps[] = {
	{ 0, 0, {
		{ NFT_F_ETHER_SADDR, NFT_T_EQ, NFT_V_MAC },
		{ NFT_F_ETHER_TYPE, NFT_T_NEQ, .lit = { 0x81, 0x00 }, .when = NFT_IF_UNTAGGED },
		{ NFT_F_ETHER_TYPE, NFT_T_EQ, .lit = { 0x81, 0x00 }, .when = NFT_IF_TAGGED },
		{ NFT_F_VLAN_TCI, NFT_T_EQ, NFT_V_VLAN, .mask = { 0x0f, 0xff },
		    .when = NFT_IF_TAGGED },
	}, NFT_JUMP, NFT_REF_OUT },
	{ 0, 0, {
		{ NFT_F_ETHER_DADDR, NFT_T_EQ, NFT_V_MAC },
		{ NFT_F_ETHER_TYPE, NFT_T_NEQ, .lit = { 0x81, 0x00 }, .when = NFT_IF_UNTAGGED },
		{ NFT_F_ETHER_TYPE, NFT_T_EQ, .lit = { 0x81, 0x00 }, .when = NFT_IF_TAGGED },
		{ NFT_F_VLAN_TCI, NFT_T_EQ, NFT_V_VLAN, .mask = { 0x0f, 0xff },
		    .when = NFT_IF_TAGGED },
	}, NFT_JUMP, NFT_REF_IN },
};

static const struct nft_rule nft_no_vm[] = {
	{ .proto = ETH_P_ARP, .verdict = NF_ACCEPT },
	{ ETH_P_IPV6, IPPROTO_ICMPV6, { { NFT_F_ICMP_TYPE, NFT_T_RANGE, .lit = { 130, 137 } } },
	    NF_ACCEPT },
	{ .verdict = NF_DROP },
};

static const struct nft_chain_rules nft_base_head[] = {
	{ NFT_REF_BASE, NFT_IF_PORTS, NFT_REF_NONE, NFT_REF_NONE, nft_other_bridges,
	    NFT_COUNT(nft_other_bridges) },
};
static const struct nft_chain_rules nft_dispatch[] = {
	{ NFT_REF_BASE, NFT_ALWAYS, NFT_REF_NONE, NFT_REF_NONE, nft_jumps, NFT_COUNT(nft_jumps) },
};
static const struct nft_chain_rules nft_base_tail[] = {
	{ NFT_REF_BASE, NFT_ALWAYS, NFT_REF_NONE, NFT_REF_UNKNOWN, nft_no_vm,
	    NFT_COUNT(nft_no_vm) },
};

const struct nft_ruleset nft_rules_base_head = { nft_base_head, NFT_COUNT(nft_base_head) };
const struct nft_ruleset nft_rules_dispatch = { nft_dispatch, NFT_COUNT(nft_dispatch) };
const struct nft_ruleset nft_rules_base_tail = { nft_base_tail, NFT_COUNT(nft_base_tail) };
