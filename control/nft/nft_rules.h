/*
 * The rules of "table bridge <table>" as data: nft_rules.c describes them, one table of rule
 * descriptors per family and chain; nft_rule.c is the one builder that turns descriptors and a
 * VM's addresses into NEWRULE messages; nft_table.c says which VM's rules go in when, and
 * nft_obj.c owns the names both use. A descriptor holds only constants and enum references,
 * never code, so what the kernel gets can be read off the tables, and v4 and v6 can differ
 * only where the tables do.
 */
#ifndef NFT_RULES_H
#define NFT_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "nft_int.h"

#define NFT_MATCH_MAX	4	/* matches per rule after meta protocol and meta l4proto */
#define NFT_VALUE_MAX	16	/* the longest field (an IPv6 address, an interface name) */
#define NFT_COUNT(a)	(sizeof(a) / sizeof((a)[0]))

/* A header field a match loads; nft_rule.c says where each one is. */
enum nft_field {
	NFT_F_NONE,		/* the port of a field that has none */
	NFT_F_PROTOCOL,		/* meta protocol: right with or without an offloaded VLAN tag */
	NFT_F_L4PROTO,		/* meta l4proto */
	NFT_F_IIFNAME,		/* meta iifname */
	NFT_F_ETHER_DADDR,
	NFT_F_ETHER_SADDR,
	NFT_F_ETHER_TYPE,	/* the outer one: 8021q on a tagged frame */
	NFT_F_VLAN_TCI,
	NFT_F_ARP_TYPES,	/* arp htype . arp ptype */
	NFT_F_ARP_LENS,		/* arp hlen . arp plen */
	NFT_F_ARP_SENDER,	/* arp saddr ether . arp saddr ip */
	NFT_F_ARP_TARGET_IP,	/* arp daddr ip */
	NFT_F_IP_FRAG,		/* ip flags . frag-off */
	NFT_F_IP_PROTO,
	NFT_F_IP_SADDR,
	NFT_F_IP_DADDR,
	NFT_F_IP6_SADDR,
	NFT_F_IP6_DADDR,
	NFT_F_FRAG_NEXTHDR,	/* the IPv6 fragment header's */
	NFT_F_FRAG_OFF,		/* frag-off . res . more-fragments */
	NFT_F_TH_SPORT,
	NFT_F_TH_DPORT,
	NFT_F_ICMP_TYPE,	/* icmp type, icmpv6 type */
	NFT_F_ND_TARGET,	/* @th,64,128 */
	NFT_F_ICMP_QUOTED_SADDR,	/* an ICMP error's quoted IPv4 header: @th,160,32 */
	NFT_F_ICMP_QUOTED_DADDR,	/* @th,192,32 */
	NFT_F_ICMP6_QUOTED_SADDR,	/* the same for ICMPv6: @th,128,128 */
	NFT_F_ICMP6_QUOTED_DADDR,	/* @th,256,128 */
	NFT_FIELDS
};

/* What a match does with its field (masked first by .mask when that is not all zero). */
enum nft_test {
	NFT_T_END,		/* no more matches in this rule */
	NFT_T_EQ,		/* field == value */
	NFT_T_NEQ,		/* field != value */
	NFT_T_RANGE,		/* .lit[0..len) <= field <= .lit[len..2 len) */
	NFT_T_IN,		/* field @set */
	NFT_T_TUPLE,		/* field . meta l4proto . port @set (the port on field's side) */
	NFT_T_TUPLE_ANYPORT,	/* field . meta l4proto . port & 0 @set: the every-port element */
};

/* The value EQ and NEQ compare with: the match's own bytes or one the VM (or ports) gives. */
enum nft_val {
	NFT_V_LIT,		/* .lit, as long as the field */
	NFT_V_MAC,
	NFT_V_IP4,
	NFT_V_IP6,
	NFT_V_VLAN,		/* the VLAN id, network order */
	NFT_V_ARP_SENDER,	/* <mac> . <ip4> */
	NFT_V_ARP_PROBE,	/* <mac> . 0.0.0.0 */
	NFT_V_PORT_A,		/* nft_set_ports(), zero-padded to IFNAMSIZ */
	NFT_V_PORT_B,
};

/* Whether a chain's rules, or one match, apply: to the VM at hand, or to the context. */
enum nft_when {
	NFT_ALWAYS,
	NFT_IF_V4,		/* the VM has an IPv4 address */
	NFT_IF_V6,
	NFT_IF_TAGGED,		/* the VM has a VLAN */
	NFT_IF_UNTAGGED,
	NFT_IF_PORTS,		/* nft_set_ports() named the exception path's ports */
};

/* A chain or counter a rule names; nft_ref_name() turns it into the VM's or table's name. */
enum nft_ref {
	NFT_REF_NONE,		/* no counter */
	NFT_REF_BASE,		/* NFT_BASE_CHAIN */
	NFT_REF_UNKNOWN,	/* NFT_UNKNOWN_COUNTER */
	NFT_REF_OUT,		/* from here on the VM's own, in struct nft_names order */
	NFT_REF_IN,
	NFT_REF_ACCEPT,
	NFT_REF_DROP,
	NFT_REF_IN_ACCEPT,
	NFT_REF_IN_DROP,
	NFT_REFS
};

struct nft_match {
	enum nft_field field;
	enum nft_test test;
	enum nft_val val;
	uint8_t lit[NFT_VALUE_MAX];	/* inline, so a short initializer is zero-padded */
	uint8_t mask[NFT_VALUE_MAX];	/* all zero: none (a field masked to 0 tells nothing) */
	enum nft_set_kind set;		/* IN, TUPLE* */
	enum nft_when when;
};

struct nft_rule {
	uint16_t proto;			/* meta protocol (host order); 0: any */
	uint8_t l4;			/* meta l4proto; 0: any */
	struct nft_match m[NFT_MATCH_MAX];
	int verdict;			/* NF_ACCEPT, NF_DROP, NFT_JUMP */
	enum nft_ref jump;		/* NFT_JUMP's chain */
};

/*
 * One chain's rules for one family. All of a chain's accepts count into one named counter and
 * all its drops into another, which is what makes <vm>_accept and <vm>_drop the VM's totals.
 */
struct nft_chain_rules {
	enum nft_ref chain;
	enum nft_when when;
	enum nft_ref accepted, dropped;	/* counters; NFT_REF_NONE: uncounted */
	const struct nft_rule *rules;
	size_t n;
};

/* Chains' rules in the order they are sent: rule handles, and so the listing, follow it. */
struct nft_ruleset {
	const struct nft_chain_rules *chains;
	size_t n;
};

/* Every name the table holds for one VM. */
struct nft_names {
	char ref[NFT_REFS - NFT_REF_OUT][NFT_OBJ_NAME_MAX];	/* [NFT_REF_x - NFT_REF_OUT] */
	char set[NFT_SET_KINDS][NFT_OBJ_NAME_MAX];
};

/* nft_rules.c */
extern const struct nft_ruleset nft_rules_vm;		/* <vm>_out, <vm>_in */
extern const struct nft_ruleset nft_rules_base_head;	/* forward, before the VMs' jumps */
extern const struct nft_ruleset nft_rules_dispatch;	/* forward: one VM's jumps */
extern const struct nft_ruleset nft_rules_base_tail;	/* forward, after them */

/* nft_rule.c: appends rs's rules, with v's values (NULL: no VM), to bt. 0 or -errno. */
int nft_rules_put(struct nft_ctx *c, struct nft_batch *bt, const struct nft_vmi *v,
    const struct nft_names *n, const struct nft_ruleset *rs);

/* What nft_obj_put() sends: the libnftnl object behind its void pointer. */
enum nft_obj_kind {
	NFT_OBJ_TABLE,		/* struct nftnl_table */
	NFT_OBJ_CHAIN,
	NFT_OBJ_SET,
	NFT_OBJ_COUNTER,	/* struct nftnl_obj */
	NFT_OBJ_RULE,
};

/* nft_obj.c */
/*
 * Appends o as one message of type to bt when rc (how building o went) is 0; frees o either
 * way. Returns rc, or -ENOMEM when the batch is full.
 */
int nft_obj_put(struct nft_ctx *c, struct nft_batch *bt, uint16_t type, uint16_t flags,
    enum nft_obj_kind k, void *o, int rc);
void nft_names(const struct nft_vmi *v, struct nft_names *n);
/* r's name; n may be NULL when r is the table's. NULL for NFT_REF_NONE or a missing VM. */
const char *nft_ref_name(const struct nft_names *n, enum nft_ref r);

#endif /* NFT_RULES_H */
