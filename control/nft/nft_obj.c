/*
 * What both builders of the table stand on: the names one VM gives it (nft_table.c creates
 * the objects, nft_rule.c's rules refer to them) and the one way a libnftnl object of any
 * kind joins a batch.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libnftnl/chain.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "nft_rules.h"

void
nft_names(const struct nft_vmi *v, struct nft_names *n)
{
	static const char *const suffix[NFT_REFS - NFT_REF_OUT] = {
		[NFT_REF_OUT - NFT_REF_OUT] = "out",
		[NFT_REF_IN - NFT_REF_OUT] = "in",
		[NFT_REF_ACCEPT - NFT_REF_OUT] = "accept",
		[NFT_REF_DROP - NFT_REF_OUT] = "drop",
		[NFT_REF_IN_ACCEPT - NFT_REF_OUT] = "in_accept",
		[NFT_REF_IN_DROP - NFT_REF_OUT] = "in_drop",
	};

	for (size_t i = 0; i < NFT_COUNT(suffix); i++)
		snprintf(n->ref[i], sizeof(n->ref[i]), "%s_%s", v->name, suffix[i]);
	for (int k = 0; k < NFT_SET_KINDS; k++)
		nft_set_name(n->set[k], sizeof(n->set[k]), v, (enum nft_set_kind)k);
}

_Static_assert(sizeof(struct nft_names) == NFT_VM_NAMES * NFT_OBJ_NAME_MAX,
    "NFT_VM_NAMES must count every name");

const char *
nft_ref_name(const struct nft_names *n, enum nft_ref r)
{
	if (r == NFT_REF_BASE)
		return NFT_BASE_CHAIN;
	if (r == NFT_REF_UNKNOWN)
		return NFT_UNKNOWN_COUNTER;
	if (n == NULL || r < NFT_REF_OUT || r >= NFT_REFS)
		return NULL;
	return n->ref[r - NFT_REF_OUT];
}

/* Every name VM v gives the table, for nft_open()'s clash check. */
void
nft_vm_names(const struct nft_vmi *v, char out[NFT_VM_NAMES][NFT_OBJ_NAME_MAX])
{
	struct nft_names n;

	nft_names(v, &n);
	memcpy(out, &n, sizeof(n));
}

int
nft_obj_put(struct nft_ctx *c, struct nft_batch *bt, uint16_t type, uint16_t flags,
    enum nft_obj_kind k, void *o, int rc)
{
	struct nlmsghdr *nlh = NULL;

	if (rc == 0)
		nlh = nft_batch_hdr(c, bt, type, flags, NFT_MSG_BOUND);
	switch (k) {
	case NFT_OBJ_TABLE:
		if (nlh != NULL)
			nftnl_table_nlmsg_build_payload(nlh, o);
		nftnl_table_free(o);
		break;
	case NFT_OBJ_CHAIN:
		if (nlh != NULL)
			nftnl_chain_nlmsg_build_payload(nlh, o);
		nftnl_chain_free(o);
		break;
	case NFT_OBJ_SET:
		if (nlh != NULL)
			nftnl_set_nlmsg_build_payload(nlh, o);
		nftnl_set_free(o);
		break;
	case NFT_OBJ_COUNTER:
		if (nlh != NULL)
			nftnl_obj_nlmsg_build_payload(nlh, o);
		nftnl_obj_free(o);
		break;
	case NFT_OBJ_RULE:
		if (nlh != NULL)
			nftnl_rule_nlmsg_build_payload(nlh, o);
		nftnl_rule_free(o);
		break;
	}
	if (nlh == NULL)
		return rc;
	nft_batch_next(bt);
	return bt->bad ? -ENOMEM : 0;
}

