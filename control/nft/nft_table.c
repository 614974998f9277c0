/*
 * "table bridge <table>" itself: the table, its named counters, each VM's sets and chains,
 * and the base chain on the bridge forward hook. The rules, and why they are as they are, are
 * in nft_rules.c; they go in in the order below, objects before the rules that use them.
 */
#include <errno.h>
#include <string.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter_bridge.h>

#include <libnftnl/chain.h>
#include <libnftnl/object.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "nft_rules.h"

/* nft's datatype ids (nftables datatype.h); a concatenation packs them 6 bits apart. */
#define NFT_TYPE_IPADDR		7
#define NFT_TYPE_IP6ADDR	8
#define NFT_TYPE_INET_PROTO	12
#define NFT_TYPE_INET_SERVICE	13
#define NFT_CONCAT3(a, b, c)	((a) << 12 | (b) << 6 | (c))

static int
nft_chain_put(struct nft_ctx *c, struct nft_batch *bt, const char *name, bool base)
{
	struct nftnl_chain *ch;
	int rc = 0;

	if ((ch = nftnl_chain_alloc()) == NULL)
		return -ENOMEM;
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_FAMILY, NFT_FAMILY);
	if (nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, c->table) < 0 ||
	    nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, name) < 0)
		rc = -ENOMEM;
	if (base) {
		/* fail closed: what no rule accepts is dropped */
		if (nftnl_chain_set_str(ch, NFTNL_CHAIN_TYPE, "filter") < 0)
			rc = -ENOMEM;
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, NF_BR_FORWARD);
		nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, NF_BR_PRI_FILTER_BRIDGED);
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_POLICY, NF_DROP);
	}
	return nft_obj_put(c, bt, NFT_MSG_NEWCHAIN, NLM_F_CREATE, NFT_OBJ_CHAIN, ch, rc);
}

/* A counter that carries over the count of the one it replaces, so totals survive a rebuild. */
static int
nft_counter_put(struct nft_ctx *c, struct nft_batch *bt, const char *name)
{
	struct nftnl_obj *o;
	int rc = 0;

	if ((o = nftnl_obj_alloc()) == NULL)
		return -ENOMEM;
	nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, NFT_FAMILY);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	/* libnftnl 1.2.4's nftnl_obj_set_str() returns nothing: ask whether it stuck */
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, c->table);
	nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	if (!nftnl_obj_is_set(o, NFTNL_OBJ_TABLE) || !nftnl_obj_is_set(o, NFTNL_OBJ_NAME))
		rc = -ENOMEM;
	for (size_t i = 0; i < c->ncarry; i++) {
		if (strcmp(c->carry[i].name, name) == 0) {
			nftnl_obj_set_u64(o, NFTNL_OBJ_CTR_PKTS, c->carry[i].pkts);
			nftnl_obj_set_u64(o, NFTNL_OBJ_CTR_BYTES, c->carry[i].bytes);
			break;
		}
	}
	return nft_obj_put(c, bt, NFT_MSG_NEWOBJ, NLM_F_CREATE, NFT_OBJ_COUNTER, o, rc);
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
	int rc = 0;

	if ((s = nftnl_set_alloc()) == NULL)
		return -ENOMEM;
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFT_FAMILY);
	if (nftnl_set_set_str(s, NFTNL_SET_TABLE, c->table) < 0 ||
	    nftnl_set_set_str(s, NFTNL_SET_NAME, name) < 0)
		rc = -ENOMEM;
	nftnl_set_set_u32(s, NFTNL_SET_FLAGS, NFT_SET_TIMEOUT);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, key[k].type);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, key[k].len);
	nftnl_set_set_u32(s, NFTNL_SET_ID, id);
	return nft_obj_put(c, bt, NFT_MSG_NEWSET, NLM_F_CREATE, NFT_OBJ_SET, s, rc);
}

static int
nft_table_msg(struct nft_ctx *c, struct nft_batch *bt, uint16_t type)
{
	struct nftnl_table *t;
	int rc = 0;

	if ((t = nftnl_table_alloc()) == NULL)
		return -ENOMEM;
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFT_FAMILY);
	if (nftnl_table_set_str(t, NFTNL_TABLE_NAME, c->table) < 0)
		rc = -ENOMEM;
	if (type == NFT_MSG_NEWTABLE)
		nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, 0);
	return nft_obj_put(c, bt, type, type == NFT_MSG_NEWTABLE ? NLM_F_CREATE : 0,
	    NFT_OBJ_TABLE, t, rc);
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
		for (enum nft_ref r = NFT_REF_ACCEPT; r <= NFT_REF_IN_DROP; r++) {
			if ((rc = nft_counter_put(c, bt, nft_ref_name(&n, r))) < 0)
				return rc;
		}
		for (int k = 0; k < NFT_SET_KINDS; k++) {
			if ((rc = nft_set_put(c, bt, n.set[k], (enum nft_set_kind)k, id++)) < 0)
				return rc;
		}
		if ((rc = nft_chain_put(c, bt, nft_ref_name(&n, NFT_REF_OUT), false)) < 0 ||
		    (rc = nft_chain_put(c, bt, nft_ref_name(&n, NFT_REF_IN), false)) < 0 ||
		    (rc = nft_rules_put(c, bt, &c->vms[i], &n, &nft_rules_vm)) < 0)
			return rc;
	}
	if ((rc = nft_chain_put(c, bt, NFT_BASE_CHAIN, true)) < 0 ||
	    (rc = nft_rules_put(c, bt, NULL, NULL, &nft_rules_base_head)) < 0)
		return rc;
	for (uint16_t i = 0; i < c->nvms; i++) {
		nft_names(&c->vms[i], &n);
		if ((rc = nft_rules_put(c, bt, &c->vms[i], &n, &nft_rules_dispatch)) < 0)
			return rc;
	}
	return nft_rules_put(c, bt, NULL, NULL, &nft_rules_base_tail);
}
