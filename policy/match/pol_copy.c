/*
 * Copying a compiled policy into a builder: the set keeps no pattern as parsed, but each
 * slot's key is exactly what pol_builder_add() hashed (a folded name, or a prefix length
 * and its masked address), and each (list, port) entry names its rule, so the patterns
 * can be rebuilt from the set alone. Control thread only; allocates through the builder.
 */
#include <errno.h>
#include <string.h>

#include "pol_set.h"

/* The pattern slot sl stands for, with port; false for a key no builder could have made. */
static bool
pol_copy_pattern(const struct pol_set *s, const struct pol_slot *sl, uint16_t port,
    struct pol_pattern *p)
{
	const uint8_t *key = (const uint8_t *)s->keys + sl->key_off;
	size_t alen;

	memset(p, 0, sizeof(*p));
	p->kind = (enum pol_kind)sl->kind;
	p->port = port;
	switch (p->kind) {
	case POL_NAME_EXACT:
	case POL_NAME_WILD:
		if (sl->key_len == 0 || sl->key_len > POL_NAME_MAX)
			return false;
		memcpy(p->name, key, sl->key_len);
		return true;
	case POL_ADDR4:
	case POL_ADDR6:
		alen = p->kind == POL_ADDR4 ? 4 : 16;
		if (sl->key_len != alen + 1)
			return false;
		p->plen = key[0];
		memcpy(p->addr, key + 1, alen);
		return true;
	}
	return false;
}

int
pol_builder_copy_policy(struct pol_builder *b, uint32_t to, const struct pol_set *s,
    uint32_t from)
{
	struct pol_pattern p;
	int rc;

	if (s == NULL || from >= s->npol)
		return -EINVAL;
	for (uint32_t i = 0; i < s->nslot; i++) {
		const struct pol_slot *sl = &s->slot[i];

		if (sl->hash == 0 || sl->policy != from)
			continue;
		for (uint32_t k = 0; k < sl->ndeny + sl->nallow; k++) {
			const struct pol_prule *pr = &s->prule[sl->first + k];

			if (!pol_copy_pattern(s, sl, pr->port, &p))
				return -EINVAL;
			if ((rc = pol_builder_add(b, to, &p, &s->rule[pr->rule])) < 0)
				return rc;
		}
	}
	return 0;
}
