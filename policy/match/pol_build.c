/*
 * struct pol_builder: collects patterns, then lays the whole matcher out in one
 * allocation (see pol_set.h). Runs on the control thread at load and reload, never on the
 * fast path, so it may allocate freely; the result is immutable.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "pol_set.h"

#define POL_KEY_BYTES_MAX	(POL_NAME_MAX + 1)

struct pol_bpolicy {
	char *name;
	struct pol_policy_stats st;
	uint64_t plen4;
	uint64_t plen6[POL_PLEN_WORDS];
	bool wild;
};

/* One added pattern; its key bytes live in pol_builder.keys. */
struct pol_bentry {
	uint32_t policy;
	uint32_t rule;
	uint32_t key_off;
	uint16_t key_len;
	uint16_t port;
	uint8_t kind;
	uint8_t list;
};

/* A rule's strings, owned by the builder until build copies them into the set. */
struct pol_brule {
	uint32_t policy;
	char *key, *pattern, *file;
	uint32_t index, line, col;
	enum pol_list list;
	bool imported, grant;
	enum pol_kind kind;
	uint16_t name_len;
};

struct pol_builder {
	struct pol_bpolicy *pol;
	size_t npol, cpol;
	struct pol_bentry *ent;		/* one per rule: ent[i].rule == i */
	struct pol_brule *rule;		/* same count as ent[] */
	size_t nent, cent, crule;
	uint8_t *keys;
	size_t nkeys, ckeys;
};

static int
pol_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap != 0 ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / size)
			return -ENOMEM;
		n *= 2;
	}
	if ((q = realloc(*p, n * size)) == NULL)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

struct pol_builder *
pol_builder_new(void)
{
	return calloc(1, sizeof(struct pol_builder));
}

void
pol_builder_free(struct pol_builder *b)
{
	if (b == NULL)
		return;
	for (size_t i = 0; i < b->npol; i++)
		free(b->pol[i].name);
	for (size_t i = 0; i < b->nent; i++) {
		free(b->rule[i].key);
		free(b->rule[i].pattern);
		free(b->rule[i].file);
	}
	free(b->pol);
	free(b->ent);
	free(b->rule);
	free(b->keys);
	free(b);
}

int
pol_builder_policy(struct pol_builder *b, const char *name)
{
	struct pol_bpolicy *p;

	for (size_t i = 0; i < b->npol; i++)
		if (strcmp(b->pol[i].name, name) == 0)
			return -EEXIST;
	if (b->npol >= INT_MAX || pol_grow((void **)&b->pol, &b->cpol, b->npol + 1,
	    sizeof(*b->pol)) < 0)
		return -ENOMEM;
	p = &b->pol[b->npol];
	memset(p, 0, sizeof(*p));
	if ((p->name = strdup(name)) == NULL)
		return -ENOMEM;
	return (int)b->npol++;
}

static char *
pol_strdup0(const char *s)
{
	return strdup(s != NULL ? s : "");
}

int
pol_builder_add(struct pol_builder *b, uint32_t policy, const struct pol_pattern *p,
    const struct pol_rule *origin)
{
	struct pol_bpolicy *bp;
	struct pol_bentry *e;
	struct pol_brule *r;
	uint8_t key[POL_KEY_BYTES_MAX];
	size_t klen;

	if (policy >= b->npol)
		return -EINVAL;
	bp = &b->pol[policy];
	switch (p->kind) {
	case POL_NAME_EXACT:
	case POL_NAME_WILD:
		klen = strnlen(p->name, sizeof(p->name));
		if (klen == 0 || klen > POL_NAME_MAX)
			return -EINVAL;
		for (size_t i = 0; i < klen; i++)
			key[i] = pol_fold((uint8_t)p->name[i]);
		break;
	case POL_ADDR4:
	case POL_ADDR6:
		if (p->plen > (p->kind == POL_ADDR4 ? 32 : 128))
			return -EINVAL;
		klen = pol_addr_key(key, p->addr, p->kind == POL_ADDR4 ? 4 : 16, p->plen);
		break;
	default:
		return -EINVAL;
	}
	if (b->nent >= UINT32_MAX / 2 ||
	    pol_grow((void **)&b->ent, &b->cent, b->nent + 1, sizeof(*b->ent)) < 0)
		return -ENOMEM;
	if (pol_grow((void **)&b->rule, &b->crule, b->nent + 1, sizeof(*b->rule)) < 0)
		return -ENOMEM;
	if (pol_grow((void **)&b->keys, &b->ckeys, b->nkeys + klen, 1) < 0)
		return -ENOMEM;
	r = &b->rule[b->nent];
	*r = (struct pol_brule){
		.policy = policy, .index = origin->index, .line = origin->line,
		.col = origin->col, .list = origin->list, .imported = origin->imported,
		.grant = origin->grant,
		.key = pol_strdup0(origin->key), .pattern = pol_strdup0(origin->pattern),
		.file = pol_strdup0(origin->file), .kind = p->kind,
		.name_len = p->kind == POL_NAME_EXACT || p->kind == POL_NAME_WILD ?
		    (uint16_t)klen : 0,
	};
	if (r->key == NULL || r->pattern == NULL || r->file == NULL) {
		free(r->key);
		free(r->pattern);
		free(r->file);
		return -ENOMEM;
	}
	memcpy(b->keys + b->nkeys, key, klen);
	e = &b->ent[b->nent];
	*e = (struct pol_bentry){
		.policy = policy, .rule = (uint32_t)b->nent, .key_off = (uint32_t)b->nkeys,
		.key_len = (uint16_t)klen, .port = p->port, .kind = (uint8_t)p->kind,
		.list = (uint8_t)origin->list,
	};
	b->nkeys += klen;
	b->nent++;

	if (origin->list == POL_LIST_DENY)
		bp->st.deny++;
	else
		bp->st.allow++;
	if (p->kind == POL_NAME_EXACT) {
		bp->st.names++;
	} else if (p->kind == POL_NAME_WILD) {
		bp->st.wildcards++;
		bp->wild = true;
	} else {
		bp->st.addrs++;
		if (p->kind == POL_ADDR4)
			bp->plen4 |= 1ULL << p->plen;
		else
			bp->plen6[p->plen / 64] |= 1ULL << (p->plen % 64);
	}
	return 0;
}

static int
pol_key_cmp(const uint8_t *keys, const struct pol_bentry *x, const struct pol_bentry *y)
{
	int c;

	if (x->policy != y->policy)
		return x->policy < y->policy ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	c = memcmp(keys + x->key_off, keys + y->key_off, x->key_len);
	return c;
}

/* Key, then deny before allow, then port (0 first), then the order written. */
static int
pol_ent_cmp(const uint8_t *keys, const struct pol_bentry *x, const struct pol_bentry *y)
{
	int c;

	if ((c = pol_key_cmp(keys, x, y)) != 0)
		return c;
	if (x->list != y->list)
		return x->list == POL_LIST_DENY ? -1 : 1;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return x->rule < y->rule ? -1 : x->rule > y->rule;
}

/*
 * Strings of consecutive rules usually repeat (one file, one list), so a rule shares the
 * previous rule's copy when equal; both layout passes make the same choices.
 */
struct pol_strtab {
	char *base;		/* NULL while sizing */
	size_t len;
	const char *prev_key, *prev_file;
	size_t prev_key_off, prev_file_off;
};

static size_t
pol_str_put(struct pol_strtab *t, const char *s)
{
	size_t off = t->len, n = strlen(s) + 1;

	if (t->base != NULL)
		memcpy(t->base + off, s, n);
	t->len += n;
	return off;
}

static size_t
pol_str_share(struct pol_strtab *t, const char *s, const char **prev, size_t *prev_off)
{
	if (*prev == NULL || strcmp(*prev, s) != 0) {
		*prev = s;
		*prev_off = pol_str_put(t, s);
	}
	return *prev_off;
}

static size_t
pol_align(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/*
 * Lay out strings: policy names, then per rule key, pattern, file; then the slot keys.
 * With t->base NULL this only measures. Offsets are returned through the out arrays when
 * they are not NULL.
 */
static void
pol_layout_strings(const struct pol_builder *b, const uint32_t *order, struct pol_strtab *t,
    size_t *pol_off, size_t (*rule_off)[3], size_t *keys_off)
{
	for (size_t i = 0; i < b->npol; i++) {
		size_t off = pol_str_put(t, b->pol[i].name);

		if (pol_off != NULL)
			pol_off[i] = off;
	}
	t->prev_key = t->prev_file = NULL;
	for (size_t i = 0; i < b->nent; i++) {
		const struct pol_brule *r = &b->rule[i];
		size_t k = pol_str_share(t, r->key, &t->prev_key, &t->prev_key_off);
		size_t p = pol_str_put(t, r->pattern);
		size_t f = pol_str_share(t, r->file, &t->prev_file, &t->prev_file_off);

		if (rule_off != NULL) {
			rule_off[i][0] = k;
			rule_off[i][1] = p;
			rule_off[i][2] = f;
		}
	}
	*keys_off = t->len;
	/* Slot keys: one copy per distinct key, in sorted order. */
	for (size_t i = 0; i < b->nent; i++) {
		const struct pol_bentry *e = &b->ent[order[i]];

		if (i > 0 && pol_key_cmp(b->keys, &b->ent[order[i - 1]], e) == 0)
			continue;
		if (t->base != NULL)
			memcpy(t->base + t->len, b->keys + e->key_off, e->key_len);
		t->len += e->key_len;
	}
}

/* qsort_r: reloads may compile while another thread reads, so no static sort state. */
static int
pol_order_cmp(const void *a, const void *b, void *arg)
{
	const struct pol_builder *bl = arg;

	return pol_ent_cmp(bl->keys, &bl->ent[*(const uint32_t *)a],
	    &bl->ent[*(const uint32_t *)b]);
}

struct pol_set *
pol_builder_build(const struct pol_builder *b)
{
	struct pol_strtab t = { 0 };
	struct pol_set *s = NULL;
	struct pol_policy *pol;
	struct pol_slot *slot;
	struct pol_prule *prule;
	struct pol_rule *rule;
	uint32_t *order = NULL;
	size_t *pol_off = NULL, (*rule_off)[3] = NULL;
	size_t nkey = 0, nprule = 0, nslot = 16, keys_off, size, o_pol, o_slot, o_prule, o_rule,
	    o_str;
	int err = ENOMEM;

	if ((order = malloc((b->nent + 1) * sizeof(*order))) == NULL ||
	    (pol_off = malloc((b->npol + 1) * sizeof(*pol_off))) == NULL ||
	    (rule_off = malloc((b->nent + 1) * sizeof(*rule_off))) == NULL)
		goto out;
	for (size_t i = 0; i < b->nent; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, b->nent, sizeof(*order), pol_order_cmp, (void *)b);

	/* Count keys and (key, list, port) entries. */
	for (size_t i = 0; i < b->nent; i++) {
		const struct pol_bentry *e = &b->ent[order[i]], *p;

		if (i == 0 || pol_key_cmp(b->keys, (p = &b->ent[order[i - 1]]), e) != 0) {
			nkey++;
			nprule++;
		} else if (p->list != e->list || p->port != e->port) {
			nprule++;
		}
	}
	while (nslot < 2 * nkey) {
		if (nslot > UINT32_MAX / 4) {
			err = EOVERFLOW;
			goto out;
		}
		nslot *= 2;
	}
	pol_layout_strings(b, order, &t, NULL, NULL, &keys_off);
	if (t.len > UINT32_MAX) {
		err = EOVERFLOW;
		goto out;
	}
	o_pol = pol_align(sizeof(struct pol_set));
	o_slot = o_pol + pol_align(b->npol * sizeof(struct pol_policy));
	o_prule = o_slot + nslot * sizeof(struct pol_slot);
	o_rule = o_prule + pol_align(nprule * sizeof(struct pol_prule));
	o_str = o_rule + pol_align(b->nent * sizeof(struct pol_rule));
	size = o_str + t.len;
	if ((s = calloc(1, size)) == NULL)
		goto out;
	pol = (struct pol_policy *)((char *)s + o_pol);
	slot = (struct pol_slot *)((char *)s + o_slot);
	prule = (struct pol_prule *)((char *)s + o_prule);
	rule = (struct pol_rule *)((char *)s + o_rule);
	t = (struct pol_strtab){ .base = (char *)s + o_str };
	pol_layout_strings(b, order, &t, pol_off, rule_off, &keys_off);
	*s = (struct pol_set){
		.size = size, .npol = (uint32_t)b->npol, .nrule = (uint32_t)b->nent,
		.nslot = (uint32_t)nslot, .mask = (uint32_t)nslot - 1, .pol = pol, .slot = slot,
		.prule = prule, .rule = rule, .keys = t.base,
	};

	for (size_t i = 0; i < b->npol; i++) {
		const struct pol_bpolicy *bp = &b->pol[i];

		pol[i] = (struct pol_policy){
			.name = t.base + pol_off[i], .st = bp->st, .plen4 = bp->plen4,
			.wild = bp->wild,
		};
		memcpy(pol[i].plen6, bp->plen6, sizeof(pol[i].plen6));
	}
	for (size_t i = 0; i < b->nent; i++) {
		const struct pol_brule *r = &b->rule[i];

		rule[i] = (struct pol_rule){
			.policy = pol[r->policy].name, .key = t.base + rule_off[i][0],
			.pattern = t.base + rule_off[i][1], .file = t.base + rule_off[i][2],
			.index = r->index, .line = r->line, .col = r->col, .list = r->list,
			.imported = r->imported, .grant = r->grant, .kind = r->kind,
			.name_len = r->name_len,
		};
	}

	/* Fill slots and rule lists from the sorted entries. */
	{
		size_t np = 0, ko = keys_off;
		struct pol_slot *cur = NULL;

		for (size_t i = 0; i < b->nent; i++) {
			const struct pol_bentry *e = &b->ent[order[i]];
			const struct pol_bentry *p = i > 0 ? &b->ent[order[i - 1]] : NULL;
			uint64_t h;
			uint32_t k;

			if (p == NULL || pol_key_cmp(b->keys, p, e) != 0) {
				h = pol_hash_key(b->keys + e->key_off, e->key_len, e->policy,
				    e->kind);
				for (k = (uint32_t)h & s->mask; slot[k].hash != 0;
				    k = (k + 1) & s->mask)
					;
				cur = &slot[k];
				*cur = (struct pol_slot){
					.hash = h, .policy = e->policy, .key_off = (uint32_t)ko,
					.key_len = e->key_len, .kind = e->kind,
					.first = (uint32_t)np,
				};
				ko += e->key_len;
			} else if (p->list == e->list && p->port == e->port) {
				continue;	/* a repeat: the first one written explains */
			}
			prule[np++] = (struct pol_prule){ .rule = e->rule, .port = e->port };
			if (e->list == POL_LIST_DENY)
				cur->ndeny++;
			else
				cur->nallow++;
		}
	}
	err = 0;
out:
	free(order);
	free(pol_off);
	free(rule_off);
	if (err != 0) {
		free(s);
		s = NULL;
		errno = err;
	}
	return s;
}
