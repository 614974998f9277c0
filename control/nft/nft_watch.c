/*
 * Tamper detection. The ruleset generation id moves on every commit in the namespace, and
 * ours are committed with NFNL_BATCH_GENID, so when the id is still the one our last batch
 * produced nobody changed anything: one round trip. When it moved (someone changed some
 * table, maybe ours) we list our table and compare it with the listing taken right after we
 * built it: table flags (a dormant table enforces nothing), chains with their hooks and
 * policies, sets with their types and flags, counters, and every rule's expressions in
 * order. Handles, use counts, counter values and set elements are left out: they change
 * without anyone editing the table. A listing only counts when the generation was the same
 * before and after it, so it is one consistent state.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <libmnl/libmnl.h>

#include "nft_int.h"

#define NFT_FP_ATTRS	32	/* above every NFTA_*_MAX we parse */
#define NFT_FP_KEEP	12

_Static_assert(NFTA_SET_MAX < NFT_FP_ATTRS && NFTA_CHAIN_MAX < NFT_FP_ATTRS &&
    NFTA_RULE_MAX < NFT_FP_ATTRS && NFTA_OBJ_MAX < NFT_FP_ATTRS &&
    NFTA_TABLE_MAX < NFT_FP_ATTRS, "attribute table too small");

struct nft_fp_attr {
	uint16_t type;
	enum mnl_attr_data_type data;
};

/* What to keep of one kind of object, and which attribute names its table. */
struct nft_fp_kind {
	uint8_t tag;
	uint16_t msg;		/* NFT_MSG_GET* */
	uint16_t max;
	uint16_t table_attr;
	struct nft_fp_attr keep[NFT_FP_KEEP];
};

static const struct nft_fp_kind nft_fp_table = {
	'T', NFT_MSG_GETTABLE, NFTA_TABLE_MAX, NFTA_TABLE_NAME, {
		{ NFTA_TABLE_NAME, MNL_TYPE_NUL_STRING },
		{ NFTA_TABLE_FLAGS, MNL_TYPE_U32 },
	},
};

static const struct nft_fp_kind nft_fp_kinds[] = {
	{ 'C', NFT_MSG_GETCHAIN, NFTA_CHAIN_MAX, NFTA_CHAIN_TABLE, {
		{ NFTA_CHAIN_NAME, MNL_TYPE_NUL_STRING },
		{ NFTA_CHAIN_HOOK, MNL_TYPE_NESTED },
		{ NFTA_CHAIN_POLICY, MNL_TYPE_U32 },
		{ NFTA_CHAIN_TYPE, MNL_TYPE_NUL_STRING },
		{ NFTA_CHAIN_FLAGS, MNL_TYPE_U32 },
	} },
	{ 'S', NFT_MSG_GETSET, NFTA_SET_MAX, NFTA_SET_TABLE, {
		{ NFTA_SET_NAME, MNL_TYPE_NUL_STRING },
		{ NFTA_SET_FLAGS, MNL_TYPE_U32 },
		{ NFTA_SET_KEY_TYPE, MNL_TYPE_U32 },
		{ NFTA_SET_KEY_LEN, MNL_TYPE_U32 },
		{ NFTA_SET_DATA_TYPE, MNL_TYPE_U32 },
		{ NFTA_SET_DATA_LEN, MNL_TYPE_U32 },
		{ NFTA_SET_POLICY, MNL_TYPE_U32 },
		{ NFTA_SET_DESC, MNL_TYPE_NESTED },
		{ NFTA_SET_TIMEOUT, MNL_TYPE_U64 },
		{ NFTA_SET_OBJ_TYPE, MNL_TYPE_U32 },
		{ NFTA_SET_EXPR, MNL_TYPE_NESTED },
		{ NFTA_SET_EXPRESSIONS, MNL_TYPE_NESTED },
	} },
	{ 'O', NFT_MSG_GETOBJ, NFTA_OBJ_MAX, NFTA_OBJ_TABLE, {
		{ NFTA_OBJ_NAME, MNL_TYPE_NUL_STRING },
		{ NFTA_OBJ_TYPE, MNL_TYPE_U32 },
	} },
	{ 'R', NFT_MSG_GETRULE, NFTA_RULE_MAX, NFTA_RULE_TABLE, {
		{ NFTA_RULE_CHAIN, MNL_TYPE_NUL_STRING },
		{ NFTA_RULE_EXPRESSIONS, MNL_TYPE_NESTED },
	} },
};

void
nft_fp_free(struct nft_fp *fp)
{
	free(fp->p);
	*fp = (struct nft_fp){ 0 };
}

static int
nft_fp_put(struct nft_fp *fp, const void *p, size_t len)
{
	if (fp->len + len > fp->cap) {
		size_t cap = fp->cap ? fp->cap : 4096;
		uint8_t *np;

		while (cap < fp->len + len)
			cap *= 2;
		if ((np = realloc(fp->p, cap)) == NULL)
			return -ENOMEM;
		fp->p = np;
		fp->cap = cap;
	}
	memcpy(fp->p + fp->len, p, len);
	fp->len += len;
	return 0;
}

struct nft_fp_walk {
	const struct nft_ctx *c;
	const struct nft_fp_kind *k;
	const struct nlattr *tb[NFT_FP_ATTRS];
	struct nft_fp *fp;
	bool found;		/* the table answered (GETTABLE) */
};

static int
nft_fp_attr(const struct nlattr *a, void *data)
{
	struct nft_fp_walk *w = data;
	uint16_t type = mnl_attr_get_type(a);
	enum mnl_attr_data_type want = MNL_TYPE_UNSPEC;

	if (mnl_attr_type_valid(a, w->k->max) < 0)
		return MNL_CB_OK;	/* a newer kernel's attribute: not ours to judge */
	if (type == w->k->table_attr)
		want = MNL_TYPE_NUL_STRING;
	for (int i = 0; i < NFT_FP_KEEP && w->k->keep[i].type != 0; i++) {
		if (w->k->keep[i].type == type)
			want = w->k->keep[i].data;
	}
	if (want == MNL_TYPE_UNSPEC)
		return MNL_CB_OK;
	if (mnl_attr_validate(a, want) < 0)
		return MNL_CB_ERROR;
	w->tb[type] = a;
	return MNL_CB_OK;
}

/* One listed object: tag, then each kept attribute as type, length, bytes (or absent). */
static int
nft_fp_msg(const struct nlmsghdr *nlh, void *data)
{
	struct nft_fp_walk *w = data;
	const struct nft_fp_kind *k = w->k;
	int rc;

	memset(w->tb, 0, sizeof(w->tb));
	if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), nft_fp_attr, w) < 0)
		return -EPROTO;
	/* chain dumps are not filtered by table: skip everyone else's */
	if (w->tb[k->table_attr] == NULL ||
	    strcmp(mnl_attr_get_str(w->tb[k->table_attr]), w->c->table) != 0)
		return 0;
	w->found = true;
	if ((rc = nft_fp_put(w->fp, &k->tag, 1)) < 0)
		return rc;
	for (int i = 0; i < NFT_FP_KEEP && k->keep[i].type != 0; i++) {
		const struct nlattr *a = w->tb[k->keep[i].type];
		uint16_t hdr[2] = { k->keep[i].type, a ? mnl_attr_get_payload_len(a) : 0xffff };

		if ((rc = nft_fp_put(w->fp, hdr, sizeof(hdr))) < 0 ||
		    (a != NULL && (rc = nft_fp_put(w->fp, mnl_attr_get_payload(a),
		    mnl_attr_get_payload_len(a))) < 0))
			return rc;
	}
	return 0;
}

/* One pass over the table; NFT_MISSING when it is not there. */
static int
nft_fp_pass(struct nft_ctx *c, struct nft_fp *fp)
{
	struct nft_fp_walk w = { .c = c, .k = &nft_fp_table, .fp = fp };
	int rc;

	rc = nft_request(c, NFT_MSG_GETTABLE, 0, NFTA_TABLE_NAME, c->table, nft_fp_msg, &w);
	if (rc == -ENOENT)
		return NFT_MISSING;
	if (rc < 0)
		return rc;
	if (!w.found)
		return -EPROTO;
	for (size_t i = 0; i < sizeof(nft_fp_kinds) / sizeof(nft_fp_kinds[0]); i++) {
		w.k = &nft_fp_kinds[i];
		rc = nft_request(c, w.k->msg, NLM_F_DUMP, w.k->table_attr, c->table,
		    nft_fp_msg, &w);
		if (rc == -ENOENT)
			return NFT_MISSING;	/* deleted between two dumps */
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * List the table into *fp (reset first) as one consistent state: the generation, returned in
 * *gen, did not move while we listed. Returns 0, NFT_MISSING, or -errno (-EAGAIN when other
 * writers kept the generation moving).
 */
int
nft_fp_take(struct nft_ctx *c, struct nft_fp *fp, uint32_t *gen)
{
	uint32_t g1, g2;
	int rc;

	for (int tries = 0; tries < NFT_TRIES; tries++) {
		fp->len = 0;
		if ((rc = nft_gen_get(c, &g1)) < 0)
			return rc;
		rc = nft_fp_pass(c, fp);
		if (rc == -EINTR)
			continue;	/* a dump saw the ruleset change */
		if (rc < 0)
			return rc;
		if (rc == NFT_MISSING) {
			*gen = g1;
			return NFT_MISSING;
		}
		if ((rc = nft_gen_get(c, &g2)) < 0)
			return rc;
		if (g1 == g2) {
			*gen = g1;
			return 0;
		}
	}
	return -EAGAIN;
}

/*
 * The generation moved (or is unknown): does our table still look as built? If so adopt the
 * new generation. Returns NFT_INTACT (0), NFT_MISSING, NFT_TAMPERED, or -errno.
 */
int
nft_sync(struct nft_ctx *c)
{
	struct nft_fp fp = { 0 };
	uint32_t gen;
	int rc;

	if (!c->built)
		return NFT_MISSING;
	c->st.listings++;
	if ((rc = nft_fp_take(c, &fp, &gen)) == 0) {
		if (fp.len == c->ref.len && memcmp(fp.p, c->ref.p, fp.len) == 0) {
			c->gen = gen;
			rc = NFT_INTACT;
		} else {
			rc = NFT_TAMPERED;
		}
	}
	nft_fp_free(&fp);
	return rc;
}

int
nft_check(struct nft_ctx *c)
{
	uint32_t gen;
	int rc;

	if (!c->built)
		return NFT_MISSING;
	if (c->gen != 0) {
		if ((rc = nft_gen_get(c, &gen)) < 0)
			return rc;
		if (gen == c->gen)
			return NFT_INTACT;
	}
	return nft_sync(c);
}

struct nft_carry_walk {
	struct nft_ctx *c;
	int rc;
};

static int
nft_carry_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	uint16_t type = mnl_attr_get_type(a);
	int bad = 0;

	if (mnl_attr_type_valid(a, NFTA_OBJ_MAX) < 0)
		return MNL_CB_OK;
	switch (type) {
	case NFTA_OBJ_TABLE:
	case NFTA_OBJ_NAME:
		bad = mnl_attr_validate(a, MNL_TYPE_NUL_STRING);
		break;
	case NFTA_OBJ_TYPE:
		bad = mnl_attr_validate(a, MNL_TYPE_U32);
		break;
	case NFTA_OBJ_DATA:
		bad = mnl_attr_validate(a, MNL_TYPE_NESTED);
		break;
	default:
		return MNL_CB_OK;
	}
	if (bad < 0)
		return MNL_CB_ERROR;
	tb[type] = a;
	return MNL_CB_OK;
}

static int
nft_counter_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	uint16_t type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, NFTA_COUNTER_MAX) < 0 ||
	    (type != NFTA_COUNTER_BYTES && type != NFTA_COUNTER_PACKETS))
		return MNL_CB_OK;
	if (mnl_attr_validate(a, MNL_TYPE_U64) < 0)
		return MNL_CB_ERROR;
	tb[type] = a;
	return MNL_CB_OK;
}

static int
nft_carry_msg(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[NFTA_OBJ_MAX + 1] = { 0 }, *ctr[NFTA_COUNTER_MAX + 1] = { 0 };
	struct nft_ctx *c = data;
	struct nft_carry *nc, *e;

	if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), nft_carry_attr, tb) < 0)
		return -EPROTO;
	if (tb[NFTA_OBJ_TABLE] == NULL || tb[NFTA_OBJ_NAME] == NULL ||
	    tb[NFTA_OBJ_TYPE] == NULL || tb[NFTA_OBJ_DATA] == NULL ||
	    strcmp(mnl_attr_get_str(tb[NFTA_OBJ_TABLE]), c->table) != 0 ||
	    ntohl(mnl_attr_get_u32(tb[NFTA_OBJ_TYPE])) != NFT_OBJECT_COUNTER ||
	    strlen(mnl_attr_get_str(tb[NFTA_OBJ_NAME])) >= NFT_OBJ_NAME_MAX)
		return 0;
	if (mnl_attr_parse_nested(tb[NFTA_OBJ_DATA], nft_counter_attr, ctr) < 0)
		return -EPROTO;
	if ((nc = realloc(c->carry, (c->ncarry + 1) * sizeof(*nc))) == NULL)
		return -ENOMEM;
	c->carry = nc;
	e = &c->carry[c->ncarry++];
	memset(e, 0, sizeof(*e));
	strcpy(e->name, mnl_attr_get_str(tb[NFTA_OBJ_NAME]));
	if (ctr[NFTA_COUNTER_PACKETS] != NULL)
		e->pkts = be64toh(mnl_attr_get_u64(ctr[NFTA_COUNTER_PACKETS]));
	if (ctr[NFTA_COUNTER_BYTES] != NULL)
		e->bytes = be64toh(mnl_attr_get_u64(ctr[NFTA_COUNTER_BYTES]));
	return 0;
}

/* The counters of the table as it is now (none if it is gone), to seed the rebuilt ones. */
int
nft_carry_read(struct nft_ctx *c)
{
	int rc;

	free(c->carry);
	c->carry = NULL;
	c->ncarry = 0;
	rc = nft_request(c, NFT_MSG_GETOBJ, NLM_F_DUMP, NFTA_OBJ_TABLE, c->table, nft_carry_msg,
	    c);
	if (rc == -ENOENT || rc == -EINTR) {
		/* gone, or changing under us: start from zero rather than fail the build */
		c->ncarry = 0;
		return 0;
	}
	return rc;
}
