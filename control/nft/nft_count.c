/*
 * What the sets hold, asked of the kernel: a GETSETELEM dump of each set, its elements
 * counted and nothing else decoded. Counted rather than tracked because the kernel alone
 * knows: elements expire there on their own timeouts, an add may only refresh one already
 * there, and a rebuild or someone's `nft flush set` replaces them all.
 */
#include <errno.h>

#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <libnftnl/common.h>

#include "nft_int.h"

static int
nft_count_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(a, NFTA_SET_ELEM_LIST_MAX) < 0)
		return MNL_CB_OK;
	if (mnl_attr_get_type(a) == NFTA_SET_ELEM_LIST_ELEMENTS &&
	    mnl_attr_validate(a, MNL_TYPE_NESTED) < 0)
		return MNL_CB_ERROR;
	tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

/* One NEWSETELEM message of the dump: its list's NFTA_LIST_ELEM entries into *n. */
static int
nft_count_msg(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[NFTA_SET_ELEM_LIST_MAX + 1] = { 0 };
	const struct nlattr *a;
	uint64_t *n = data;

	if ((nlh->nlmsg_type & 0xff) != NFT_MSG_NEWSETELEM)
		return 0;
	if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), nft_count_attr, tb) < 0)
		return -EPROTO;
	if (tb[NFTA_SET_ELEM_LIST_ELEMENTS] == NULL)
		return 0;
	mnl_attr_for_each_nested(a, tb[NFTA_SET_ELEM_LIST_ELEMENTS])
		if (mnl_attr_get_type(a) == NFTA_LIST_ELEM)
			(*n)++;
	return 0;
}

/* The elements of one set of our table, added to *n. */
static int
nft_count_set(struct nft_ctx *c, const char *set, uint64_t *n)
{
	char buf[512] = { 0 };	/* libmnl 1.0.4 leaves attribute padding unwritten */
	struct nlmsghdr *nlh;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, NFT_FAMILY, NLM_F_DUMP, c->seq++);
	mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_TABLE, c->table);
	mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_SET, set);
	return nft_talk(c, nlh, nft_count_msg, n);
}

int
nft_count(struct nft_ctx *c, uint64_t *out)
{
	char name[NFT_OBJ_NAME_MAX];
	uint64_t n = 0;
	int rc;

	for (uint16_t v = 0; v < c->nvms; v++)
		for (int k = 0; k < NFT_SET_KINDS; k++) {
			nft_set_name(name, sizeof(name), &c->vms[v], (enum nft_set_kind)k);
			/* a set (or the table) that is not there holds nothing */
			if ((rc = nft_count_set(c, name, &n)) < 0 && rc != -ENOENT)
				return rc;
		}
	*out = n;
	return 0;
}
