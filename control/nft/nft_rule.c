/*
 * The one builder of rules: a descriptor from nft_rules.c, with one VM's addresses, becomes
 * the libnftnl expressions nft itself generates for the rule, appended to a batch.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>		/* libnftnl/expr.h uses FILE without it */
#include <string.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <libnftnl/expr.h>
#include <libnftnl/rule.h>

#include "nft_rules.h"

enum nft_load { NFT_LOAD_NONE, NFT_LOAD_META, NFT_LOAD_PAYLOAD, NFT_LOAD_EXTHDR };

/*
 * Where a field is: a meta key, a payload base, or an IPv6 extension header type. An address
 * names the port on its own side, which a tuple lookup concatenates after the protocol.
 */
static const struct {
	enum nft_load load;
	uint32_t where, off, len;
	enum nft_field port;
} nft_fields[NFT_FIELDS] = {
	[NFT_F_PROTOCOL] = { NFT_LOAD_META, NFT_META_PROTOCOL, 0, 2 },
	[NFT_F_L4PROTO] = { NFT_LOAD_META, NFT_META_L4PROTO, 0, 1 },
	[NFT_F_IIFNAME] = { NFT_LOAD_META, NFT_META_IIFNAME, 0, 16 },	/* IFNAMSIZ */
	[NFT_F_ETHER_DADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_LL_HEADER, 0, 6 },
	[NFT_F_ETHER_SADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_LL_HEADER, 6, 6 },
	[NFT_F_ETHER_TYPE] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_LL_HEADER, 12, 2 },
	[NFT_F_VLAN_TCI] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_LL_HEADER, 14, 2 },
	[NFT_F_ARP_TYPES] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 0, 4 },
	[NFT_F_ARP_LENS] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 4, 2 },
	[NFT_F_ARP_SENDER] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 8, 10 },
	[NFT_F_ARP_TARGET_IP] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 24, 4 },
	[NFT_F_IP_FRAG] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 6, 2 },
	[NFT_F_IP_PROTO] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 9, 1 },
	[NFT_F_IP_SADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 12, 4,
	    NFT_F_TH_SPORT },
	[NFT_F_IP_DADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 16, 4,
	    NFT_F_TH_DPORT },
	[NFT_F_IP6_SADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 8, 16,
	    NFT_F_TH_SPORT },
	[NFT_F_IP6_DADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_NETWORK_HEADER, 24, 16,
	    NFT_F_TH_DPORT },
	[NFT_F_FRAG_NEXTHDR] = { NFT_LOAD_EXTHDR, IPPROTO_FRAGMENT, 0, 1 },
	[NFT_F_FRAG_OFF] = { NFT_LOAD_EXTHDR, IPPROTO_FRAGMENT, 2, 2 },
	[NFT_F_TH_SPORT] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 2 },
	[NFT_F_TH_DPORT] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2 },
	[NFT_F_ICMP_TYPE] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1 },
	[NFT_F_ND_TARGET] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_TRANSPORT_HEADER, 8, 16 },
	/* an error's quoted header starts 8 bytes in (RFC 792, RFC 4443 3) */
	[NFT_F_ICMP_QUOTED_SADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_TRANSPORT_HEADER, 20, 4 },
	[NFT_F_ICMP_QUOTED_DADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_TRANSPORT_HEADER, 24, 4 },
	[NFT_F_ICMP6_QUOTED_SADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_TRANSPORT_HEADER, 16, 16 },
	[NFT_F_ICMP6_QUOTED_DADDR] = { NFT_LOAD_PAYLOAD, NFT_PAYLOAD_TRANSPORT_HEADER, 32, 16 },
};

/* Rule builder: expressions appended in order; the first failure sticks and spoils the rule. */
struct nft_rb {
	struct nftnl_rule *r;
	int rc;		/* 0, -ENOMEM, or -EINVAL for a descriptor's mistake */
};

static void
rb_fail(struct nft_rb *b, int rc)
{
	if (b->rc == 0)
		b->rc = rc;
}

static struct nftnl_expr *
rb_expr(struct nft_rb *b, const char *name)
{
	struct nftnl_expr *e = nftnl_expr_alloc(name);

	if (e == NULL)
		rb_fail(b, -ENOMEM);
	return e;
}

static void
rb_add(struct nft_rb *b, struct nftnl_expr *e, bool ok)
{
	if (e == NULL)
		return;
	if (!ok) {
		nftnl_expr_free(e);
		rb_fail(b, -ENOMEM);
		return;
	}
	nftnl_rule_add_expr(b->r, e);
}

/* A field into dreg: "payload", "meta" or "exthdr", as nft loads it. */
static void
rb_load(struct nft_rb *b, enum nft_field f, uint32_t dreg)
{
	static const char *const expr[] = {
		[NFT_LOAD_META] = "meta",
		[NFT_LOAD_PAYLOAD] = "payload",
		[NFT_LOAD_EXTHDR] = "exthdr",
	};
	enum nft_load load = nft_fields[f].load;
	uint32_t where = nft_fields[f].where, off = nft_fields[f].off, len = nft_fields[f].len;
	struct nftnl_expr *e;

	if (load == NFT_LOAD_NONE) {
		rb_fail(b, -EINVAL);
		return;
	}
	if ((e = rb_expr(b, expr[load])) == NULL)
		return;
	switch (load) {
	case NFT_LOAD_META:
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, where);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, dreg);
		break;
	case NFT_LOAD_PAYLOAD:
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, dreg);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, where);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
		break;
	case NFT_LOAD_EXTHDR:
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_DREG, dreg);
		nftnl_expr_set_u8(e, NFTNL_EXPR_EXTHDR_TYPE, (uint8_t)where);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OFFSET, off);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_LEN, len);
		nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OP, NFT_EXTHDR_OP_IPV6);
		break;
	case NFT_LOAD_NONE:
		break;
	}
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
	static const uint8_t zero[NFT_VALUE_MAX];
	struct nftnl_expr *e = rb_expr(b, "bitwise");

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, reg);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, reg);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
	rb_add(b, e, nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len) == 0 &&
	    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, len) == 0);
}

/*
 * An expression that names an object: "lookup" (sreg, set) or "objref" (counter type, name:
 * the named counter counts every frame that gets here).
 */
static void
rb_named(struct nft_rb *b, const char *expr, uint16_t attr, uint32_t val, uint16_t name_attr,
    const char *name)
{
	struct nftnl_expr *e = rb_expr(b, expr);

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, attr, val);
	rb_add(b, e, nftnl_expr_set_str(e, name_attr, name) == 0);
}

/* chain: only for NFT_JUMP. */
static void
rb_verdict(struct nft_rb *b, int verdict, const char *chain)
{
	struct nftnl_expr *e = rb_expr(b, "immediate");

	if (e == NULL)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
	rb_add(b, e, chain == NULL || nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain) == 0);
}

static bool
nft_when(const struct nft_ctx *c, const struct nft_vmi *v, enum nft_when w)
{
	switch (w) {
	case NFT_ALWAYS:
		return true;
	case NFT_IF_V4:
		return v != NULL && v->id.has4;
	case NFT_IF_V6:
		return v != NULL && v->id.has6;
	case NFT_IF_TAGGED:
		return v != NULL && v->id.vlan != 0;
	case NFT_IF_UNTAGGED:
		return v != NULL && v->id.vlan == 0;
	case NFT_IF_PORTS:
		return c->ports[0][0] != '\0';
	}
	return false;
}

/*
 * The len bytes an EQ or NEQ match compares with, in buf or aliasing m, v or c. NULL when
 * the value is not len bytes long or needs a VM there is none of: a descriptor's mistake.
 */
static const uint8_t *
nft_value(const struct nft_ctx *c, const struct nft_vmi *v, const struct nft_match *m,
    uint32_t len, uint8_t buf[NFT_VALUE_MAX])
{
	const uint8_t *p = buf;
	uint32_t n;

	if (m->val == NFT_V_LIT)
		return m->lit;
	if (m->val == NFT_V_PORT_A || m->val == NFT_V_PORT_B) {
		_Static_assert(sizeof(c->ports[0]) <= NFT_VALUE_MAX, "a port name fits a value");
		n = sizeof(c->ports[0]);
		p = (const uint8_t *)c->ports[m->val == NFT_V_PORT_B];
		return n == len ? p : NULL;
	}
	if (v == NULL)
		return NULL;
	switch (m->val) {
	case NFT_V_MAC:
		p = v->id.mac, n = sizeof(v->id.mac);
		break;
	case NFT_V_IP4:
		p = v->id.ip4, n = sizeof(v->id.ip4);
		break;
	case NFT_V_IP6:
		p = v->id.ip6, n = sizeof(v->id.ip6);
		break;
	case NFT_V_VLAN:
		buf[0] = (uint8_t)(v->id.vlan >> 8), buf[1] = (uint8_t)v->id.vlan, n = 2;
		break;
	case NFT_V_ARP_SENDER:
	case NFT_V_ARP_PROBE:
		memcpy(buf, v->id.mac, 6);
		if (m->val == NFT_V_ARP_SENDER)
			memcpy(buf + 6, v->id.ip4, 4);
		else
			memset(buf + 6, 0, 4);
		n = 10;
		break;
	default:
		return NULL;
	}
	return n == len ? p : NULL;
}

/* One match: load its field, mask it, then compare or look it up. */
static void
rb_match(struct nft_rb *b, const struct nft_ctx *c, const struct nft_vmi *v,
    const struct nft_names *n, const struct nft_match *m)
{
	static const uint8_t zero[NFT_VALUE_MAX];
	uint32_t len = nft_fields[m->field].len, preg;
	enum nft_field port;
	uint8_t buf[NFT_VALUE_MAX];
	const uint8_t *val;

	rb_load(b, m->field, NFT_REG_1);
	if (memcmp(m->mask, zero, len) != 0)
		rb_mask(b, NFT_REG_1, m->mask, len);
	switch (m->test) {
	case NFT_T_EQ:
	case NFT_T_NEQ:
		if ((val = nft_value(c, v, m, len, buf)) == NULL)
			rb_fail(b, -EINVAL);
		else
			rb_cmp(b, m->test == NFT_T_EQ ? NFT_CMP_EQ : NFT_CMP_NEQ, val, len);
		return;
	case NFT_T_RANGE:
		if (2 * len > sizeof(m->lit)) {
			rb_fail(b, -EINVAL);
			return;
		}
		rb_cmp(b, NFT_CMP_GTE, m->lit, len);
		rb_cmp(b, NFT_CMP_LTE, m->lit + len, len);
		return;
	case NFT_T_IN:
		break;
	case NFT_T_TUPLE:
	case NFT_T_TUPLE_ANYPORT:
		/* on the 32-bit registers after the address, as nft lays out concatenations */
		port = nft_fields[m->field].port;
		preg = NFT_REG32_00 + len / 4;
		rb_load(b, NFT_F_L4PROTO, preg);
		rb_load(b, port, preg + 1);
		if (m->test == NFT_T_TUPLE_ANYPORT)
			rb_mask(b, preg + 1, zero, nft_fields[port].len);
		break;
	default:
		rb_fail(b, -EINVAL);
		return;
	}
	if (n == NULL || m->set >= NFT_SET_KINDS) {
		rb_fail(b, -EINVAL);
		return;
	}
	rb_named(b, "lookup", NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1, NFTNL_EXPR_LOOKUP_SET,
	    n->set[m->set]);
}

/* One rule of g, at the end of its chain: matches, then g's counter for the verdict. */
static int
nft_rule_put(struct nft_ctx *c, struct nft_batch *bt, const struct nft_vmi *v,
    const struct nft_names *n, const struct nft_chain_rules *g, const struct nft_rule *d)
{
	const char *chain = nft_ref_name(n, g->chain), *jump = NULL, *counter;
	enum nft_ref ctr = NFT_REF_NONE;
	struct nft_rb b = { .r = NULL, .rc = 0 };
	uint16_t proto = htons(d->proto);
	uint8_t l4 = d->l4;

	if (d->verdict == NFT_JUMP)
		jump = nft_ref_name(n, d->jump);
	else
		ctr = d->verdict == NF_ACCEPT ? g->accepted : g->dropped;
	counter = nft_ref_name(n, ctr);
	if (chain == NULL || (d->verdict == NFT_JUMP && jump == NULL) ||
	    (ctr != NFT_REF_NONE && counter == NULL))
		return -EINVAL;
	if ((b.r = nftnl_rule_alloc()) == NULL)
		return -ENOMEM;
	nftnl_rule_set_u32(b.r, NFTNL_RULE_FAMILY, NFT_FAMILY);
	if (nftnl_rule_set_str(b.r, NFTNL_RULE_TABLE, c->table) < 0 ||
	    nftnl_rule_set_str(b.r, NFTNL_RULE_CHAIN, chain) < 0)
		rb_fail(&b, -ENOMEM);
	if (d->proto != 0) {
		rb_load(&b, NFT_F_PROTOCOL, NFT_REG_1);
		rb_cmp(&b, NFT_CMP_EQ, &proto, sizeof(proto));
	}
	if (l4 != 0) {
		rb_load(&b, NFT_F_L4PROTO, NFT_REG_1);
		rb_cmp(&b, NFT_CMP_EQ, &l4, sizeof(l4));
	}
	for (size_t i = 0; i < NFT_MATCH_MAX && d->m[i].test != NFT_T_END; i++) {
		if (nft_when(c, v, d->m[i].when))
			rb_match(&b, c, v, n, &d->m[i]);
	}
	if (counter != NULL)
		rb_named(&b, "objref", NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER,
		    NFTNL_EXPR_OBJREF_IMM_NAME, counter);
	rb_verdict(&b, d->verdict, jump);
	return nft_obj_put(c, bt, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, NFT_OBJ_RULE,
	    b.r, b.rc);
}

int
nft_rules_put(struct nft_ctx *c, struct nft_batch *bt, const struct nft_vmi *v,
    const struct nft_names *n, const struct nft_ruleset *rs)
{
	int rc;

	for (size_t i = 0; i < rs->n; i++) {
		const struct nft_chain_rules *g = &rs->chains[i];

		if (!nft_when(c, v, g->when))
			continue;
		for (size_t j = 0; j < g->n; j++) {
			if ((rc = nft_rule_put(c, bt, v, n, g, &g->rules[j])) < 0)
				return rc;
		}
	}
	return 0;
}
