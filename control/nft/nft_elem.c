/*
 * Set elements: what the fast path learned, as keys of the VMs' sets, added in batches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter/nf_tables.h>

#include <libnftnl/set.h>

#include "nft_int.h"

static const char *const nft_set_suffix[NFT_SET_KINDS] = {
	[NFT_SET_V4] = "v4",
	[NFT_SET_V4ADDR] = "v4addr",
	[NFT_SET_V6] = "v6",
	[NFT_SET_V6ADDR] = "v6addr",
};

void
nft_set_name(char *buf, size_t len, const struct nft_vmi *v, enum nft_set_kind k)
{
	snprintf(buf, len, "%s_%s", v->name, nft_set_suffix[k]);
}

static enum nft_set_kind
nft_elem_kind(const struct nft_elem *e)
{
	if (e->family == 4)
		return e->proto == 0 ? NFT_SET_V4ADDR : NFT_SET_V4;
	return e->proto == 0 ? NFT_SET_V6ADDR : NFT_SET_V6;
}

/*
 * The key as the rule's registers hold it: every field starts on a 4-byte register, so
 * ipv4_addr . inet_proto . inet_service is addr(4) | proto(1) pad(3) | port(2, big endian)
 * pad(2), 12 bytes (24 with an IPv6 address), as nft lays it out.
 */
static size_t
nft_elem_key(const struct nft_elem *e, uint8_t key[24])
{
	size_t alen = e->family == 4 ? 4 : 16;

	memset(key, 0, 24);
	memcpy(key, e->addr, alen);
	if (e->proto == 0)
		return alen;
	key[alen] = e->proto;
	key[alen + 4] = (uint8_t)(e->port >> 8);
	key[alen + 5] = (uint8_t)e->port;
	return alen + 8;
}

int
nft_elems_check(const struct nft_ctx *c, const struct nft_elem *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (e[i].vm >= c->nvms || (e[i].family != 4 && e[i].family != 6) ||
		    (e[i].proto == 0 && e[i].port != 0)) {
			nft_warn(c, "element %zu: bad vm %u, family %u or proto %u/port %u", i,
			    e[i].vm, e[i].family, e[i].proto, e[i].port);
			return -EINVAL;
		}
	}
	return 0;
}

/* One NFT_MSG_NEWSETELEM carrying everything collected in s; frees s. */
static int
nft_elems_flush(struct nft_ctx *c, struct nft_batch *b, struct nftnl_set **sp, uint32_t *cnt)
{
	struct nlmsghdr *nlh;

	if (*sp == NULL)
		return 0;
	nlh = nft_batch_hdr(c, b, NFT_MSG_NEWSETELEM, NLM_F_CREATE,
	    NFT_MSG_BOUND + (size_t)*cnt * NFT_ELEM_BOUND);
	nftnl_set_elems_nlmsg_build_payload(nlh, *sp);
	nft_batch_next(b);
	b->nelems += *cnt;
	nftnl_set_free(*sp);
	*sp = NULL;
	*cnt = 0;
	return b->bad ? -ENOMEM : 0;
}

static struct nftnl_set *
nft_elems_set(const struct nft_ctx *c, uint16_t vm, enum nft_set_kind k)
{
	char name[NFT_OBJ_NAME_MAX];
	struct nftnl_set *s;

	if ((s = nftnl_set_alloc()) == NULL)
		return NULL;
	nft_set_name(name, sizeof(name), &c->vms[vm], k);
	if (nftnl_set_set_str(s, NFTNL_SET_TABLE, c->table) < 0 ||
	    nftnl_set_set_str(s, NFTNL_SET_NAME, name) < 0) {
		nftnl_set_free(s);
		return NULL;
	}
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFT_FAMILY);
	return s;
}

/*
 * Append elems[0..n) to the batch, one message per set and NFT_ELEMS_PER_MSG elements, in
 * set order. No NLM_F_EXCL: adding an element that is already there is not an error, and
 * since Linux 6.12 it sets the element's timeout and expiry to the new ones, which is the
 * refresh a re-learned binding needs. Older kernels keep the old expiry (a fallback would be
 * NFT_MSG_DESTROYSETELEM + NEWSETELEM in the batch, 6.3+); this appliance runs 6.18.
 */
int
nft_elems_put(struct nft_ctx *c, struct nft_batch *b, const struct nft_elem *e, size_t n)
{
	size_t ngroups = (size_t)c->nvms * NFT_SET_KINDS;
	struct nftnl_set **sets = NULL;
	struct nftnl_set_elem *el;
	uint32_t *cnt = NULL;
	uint8_t key[24];
	int rc = -ENOMEM;

	if (n == 0)
		return 0;
	if ((sets = calloc(ngroups, sizeof(*sets))) == NULL ||
	    (cnt = calloc(ngroups, sizeof(*cnt))) == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		enum nft_set_kind k = nft_elem_kind(&e[i]);
		size_t g = (size_t)e[i].vm * NFT_SET_KINDS + k;

		rc = -ENOMEM;
		if (sets[g] == NULL && (sets[g] = nft_elems_set(c, e[i].vm, k)) == NULL)
			goto out;
		if ((el = nftnl_set_elem_alloc()) == NULL)
			goto out;
		if (nftnl_set_elem_set(el, NFTNL_SET_ELEM_KEY, key, (uint32_t)nft_elem_key(&e[i],
		    key)) < 0) {
			nftnl_set_elem_free(el);
			goto out;
		}
		if (e[i].timeout_ms != 0)
			nftnl_set_elem_set_u64(el, NFTNL_SET_ELEM_TIMEOUT, e[i].timeout_ms);
		nftnl_set_elem_add(sets[g], el);
		if (++cnt[g] == NFT_ELEMS_PER_MSG &&
		    (rc = nft_elems_flush(c, b, &sets[g], &cnt[g])) < 0)
			goto out;
	}
	for (size_t g = 0; g < ngroups; g++) {
		if ((rc = nft_elems_flush(c, b, &sets[g], &cnt[g])) < 0)
			goto out;
	}
	rc = 0;
out:
	if (sets != NULL) {
		for (size_t g = 0; g < ngroups; g++) {
			if (sets[g] != NULL)
				nftnl_set_free(sets[g]);
		}
	}
	free(sets);
	free(cnt);
	return rc;
}

/* Empty each set of vm: one NFT_MSG_DELSETELEM naming the set and no element each. */
static int
nft_elems_empty(struct nft_ctx *c, struct nft_batch *b, uint16_t vm)
{
	for (unsigned int k = 0; k < NFT_SET_KINDS; k++) {
		struct nftnl_set *s = nft_elems_set(c, vm, (enum nft_set_kind)k);
		struct nlmsghdr *nlh;

		if (s == NULL)
			return -ENOMEM;
		nlh = nft_batch_hdr(c, b, NFT_MSG_DELSETELEM, 0, NFT_MSG_BOUND);
		nftnl_set_elems_nlmsg_build_payload(nlh, s);
		nft_batch_next(b);
		nftnl_set_free(s);
		if (b->bad)
			return -ENOMEM;
	}
	return 0;
}

/* The batch of nft_refill(): the sets of vms emptied, then elems added. */
static int
nft_refill_put(struct nft_ctx *c, struct nft_batch *b, const uint16_t *vms, size_t nvms,
    const struct nft_elem *elems, size_t n)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < nvms; i++)
		rc = nft_elems_empty(c, b, vms[i]);
	return rc == 0 ? nft_elems_put(c, b, elems, n) : rc;
}

int
nft_refill(struct nft_ctx *c, const uint16_t *vms, size_t nvms, const struct nft_elem *elems,
    size_t n)
{
	struct nft_batch b;
	int rc;

	for (size_t i = 0; i < nvms; i++)
		if (vms[i] >= c->nvms)
			return -EINVAL;
	if ((rc = nft_elems_check(c, elems, n)) < 0)
		return rc;
	if (!c->built)
		return -ESTALE;
	if (nvms == 0 && n == 0)
		return 0;
	for (int tries = 0; tries < NFT_TRIES; tries++) {
		/*
		 * The batch only applies on top of the generation our last batch produced. If
		 * anything in the namespace changed since, find out whether our table survived
		 * (then carry on from the new generation) or not (then the caller rebuilds).
		 */
		if (c->gen == 0 && (rc = nft_sync(c)) != NFT_INTACT)
			return rc < 0 ? rc : -ESTALE;
		if ((rc = nft_batch_start(c, &b, c->gen)) == 0)
			rc = nft_refill_put(c, &b, vms, nvms, elems, n);
		if (rc == 0)
			rc = nft_batch_commit(c, &b);
		nft_batch_free(&b);
		if (rc != -ERESTART)
			return rc;
		c->gen = 0;
	}
	return -EAGAIN;
}

int
nft_bind(struct nft_ctx *c, const struct nft_elem *elems, size_t n)
{
	return nft_refill(c, NULL, 0, elems, n);	/* no set emptied: the elements added */
}
