/*
 * (VM slot, name) set: open addressing over a power-of-two index, at most half full, whose
 * slots point into entries kept in chunks. The control loop's thread only.
 *
 * Sized to what is used, and never faulting per name on the path a binding takes to
 * nftables: the index (4 bytes a slot, 8 MiB for the default max_bindings) is written
 * through at creation, and the entries (272 bytes each, 544 MiB if all were there at once)
 * come CTL_NAMES_CHUNK at a time, each chunk written through when it is taken. Entries
 * never move, so a stored name's pointer stays valid.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/dp_api.h"
#include "ctl_names.h"

#define CTL_NAMES_CHUNK	1024	/* entries a chunk: 272 KiB, faulted in together */

struct ctl_name_ent {
	uint64_t hash;
	uint64_t key;			/* the caller's hash of the name (ctl_names_add_keyed) */
	uint16_t slot;
	uint8_t len;			/* 0: forgotten, on the free list */
	char name[DP_EVT_NAME_MAX + 1];
};

struct ctl_names {
	uint32_t *index;		/* entry number + 1; 0: empty */
	uint32_t *kindex;		/* the same, by (slot, key), for keyed entries */
	struct ctl_name_ent **chunks;	/* cap / CTL_NAMES_CHUNK + 1 of them, NULL until used */
	uint32_t mask, count, cap;
	uint32_t slot_cap;		/* one VM slot's share of cap */
	uint32_t *per_slot;		/* names held, by VM slot (UINT16_MAX + 1 of them) */
	uint32_t *free;			/* forgotten entries, taken again first; NULL until one */
	uint32_t nfree;
	bool overflowed;
};

static struct ctl_name_ent *
ctl_names_ent(const struct ctl_names *n, uint32_t i)
{
	return &n->chunks[i / CTL_NAMES_CHUNK][i % CTL_NAMES_CHUNK];
}

struct ctl_names *
ctl_names_create(uint32_t cap, uint32_t slot_cap)
{
	struct ctl_names *n = calloc(1, sizeof(*n));
	uint32_t size = 64;

	if (n == NULL)
		return NULL;
	while (size < 2 * cap && size < (1u << 30))
		size <<= 1;
	n->mask = size - 1;
	/*
	 * cap, not the index's half: every name is in each generation's names table, and EAL
	 * has room for two of max_bindings (dp_eal.c); more would fail a publish for memory
	 */
	n->cap = cap < size / 2 ? cap : size / 2;
	n->slot_cap = slot_cap;
	n->index = malloc((size_t)size * sizeof(n->index[0]));
	n->kindex = malloc((size_t)size * sizeof(n->kindex[0]));
	n->chunks = calloc(n->cap / CTL_NAMES_CHUNK + 1, sizeof(n->chunks[0]));
	n->per_slot = calloc((size_t)UINT16_MAX + 1, sizeof(n->per_slot[0]));
	if (n->index == NULL || n->kindex == NULL || n->chunks == NULL || n->per_slot == NULL) {
		ctl_names_free(n);
		return NULL;
	}
	memset(n->index, 0, (size_t)size * sizeof(n->index[0]));	/* faulted in now */
	memset(n->kindex, 0, (size_t)size * sizeof(n->kindex[0]));
	return n;
}

void
ctl_names_free(struct ctl_names *n)
{
	if (n == NULL)
		return;
	if (n->chunks != NULL)
		for (uint32_t c = 0; c <= n->cap / CTL_NAMES_CHUNK; c++)
			free(n->chunks[c]);
	free(n->chunks);
	free(n->index);
	free(n->kindex);
	free(n->per_slot);
	free(n->free);
	free(n);
}

static uint64_t
ctl_names_hash(uint16_t slot, const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ slot;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 0x100000001b3ULL;
	return h;
}

/*
 * The entry for the next name, *at its number: a forgotten one, else the next never used
 * (a new chunk, written through, every CTL_NAMES_CHUNK).
 */
static struct ctl_name_ent *
ctl_names_next(struct ctl_names *n, uint32_t *at)
{
	struct ctl_name_ent **c = &n->chunks[n->count / CTL_NAMES_CHUNK];

	if (n->nfree > 0) {
		*at = n->free[--n->nfree];
		return ctl_names_ent(n, *at);
	}
	if (*c == NULL) {
		if ((*c = malloc(CTL_NAMES_CHUNK * sizeof(**c))) == NULL)
			return NULL;
		memset(*c, 0, CTL_NAMES_CHUNK * sizeof(**c));
	}
	*at = n->count++;
	return &(*c)[*at % CTL_NAMES_CHUNK];
}

static int ctl_names_put(struct ctl_names *n, uint16_t slot, const char *name, size_t len,
    uint32_t *num);

static uint32_t
ctl_names_kslot(const struct ctl_names *n, uint16_t slot, uint64_t key)
{
	return (uint32_t)((key ^ ((uint64_t)slot * 0x9e3779b97f4a7c15ULL)) >> 20) & n->mask;
}

/* Index entry number i by its (slot, key), where its probe ends. */
static void
ctl_names_kindex_put(struct ctl_names *n, uint32_t i)
{
	const struct ctl_name_ent *e = ctl_names_ent(n, i);
	uint32_t k = ctl_names_kslot(n, e->slot, e->key);

	while (n->kindex[k] != 0)
		k = (k + 1) & n->mask;
	n->kindex[k] = i + 1;
}

int
ctl_names_add_keyed(struct ctl_names *n, uint16_t slot, const char *name, size_t len,
    uint64_t key, const char **stored)
{
	struct ctl_name_ent *e;
	uint32_t num;
	int rc;

	if ((rc = ctl_names_put(n, slot, name, len, &num)) != 0)
		return rc;
	e = ctl_names_ent(n, num);
	if (stored != NULL)
		*stored = e->name;
	if (key != 0 && e->key == 0) {
		e->key = key;
		ctl_names_kindex_put(n, num);
	}
	return 0;
}

const char *
ctl_names_by_key(const struct ctl_names *n, uint16_t slot, uint64_t key, size_t *len)
{
	if (key == 0)
		return NULL;
	for (uint32_t i = ctl_names_kslot(n, slot, key); n->kindex[i] != 0;
	    i = (i + 1) & n->mask) {
		const struct ctl_name_ent *e = ctl_names_ent(n, n->kindex[i] - 1);

		if (e->key == key && e->slot == slot && e->len != 0) {
			*len = e->len;
			return e->name;
		}
	}
	return NULL;
}

/* (slot, name) held, as entry number *num: found, or added. 0 or -errno. */
static int
ctl_names_put(struct ctl_names *n, uint16_t slot, const char *name, size_t len, uint32_t *num)
{
	struct ctl_name_ent *e;
	uint32_t at;
	uint64_t h;

	if (len == 0 || len > DP_EVT_NAME_MAX)
		return -EINVAL;
	h = ctl_names_hash(slot, name, len);
	for (uint32_t i = (uint32_t)h & n->mask;; i = (i + 1) & n->mask) {
		if (n->index[i] == 0) {
			/* past its share a VM loses its own new names, never a neighbour's */
			if (n->count - n->nfree == n->cap || n->per_slot[slot] >= n->slot_cap) {
				n->overflowed = true;
				return -ENOSPC;
			}
			if ((e = ctl_names_next(n, &at)) == NULL)
				return -ENOMEM;
			*e = (struct ctl_name_ent){ .hash = h, .slot = slot, .len = (uint8_t)len };
			memcpy(e->name, name, len);
			n->index[i] = at + 1;
			n->per_slot[slot]++;
			*num = at;
			return 0;
		}
		e = ctl_names_ent(n, n->index[i] - 1);
		if (e->hash == h && e->slot == slot && e->len == len &&
		    memcmp(e->name, name, len) == 0) {
			*num = n->index[i] - 1;
			return 0;
		}
	}
}

int
ctl_names_add(struct ctl_names *n, uint16_t slot, const char *name, size_t len,
    const char **stored)
{
	uint32_t num;
	int rc;

	if ((rc = ctl_names_put(n, slot, name, len, &num)) == 0 && stored != NULL)
		*stored = ctl_names_ent(n, num)->name;
	return rc;
}

uint32_t
ctl_names_count(const struct ctl_names *n)
{
	return n->count - n->nfree;
}

/* Index entry number i (its hash is known) where its probe ends. */
static void
ctl_names_index(struct ctl_names *n, uint32_t i)
{
	uint32_t k = (uint32_t)ctl_names_ent(n, i)->hash & n->mask;

	while (n->index[k] != 0)
		k = (k + 1) & n->mask;
	n->index[k] = i + 1;
}

/*
 * Open addressing without tombstones: the index is built again from the entries still
 * held, once per slot a VM left (rare, on the control loop), rather than every probe
 * paying for deletions.
 */
int
ctl_names_forget(struct ctl_names *n, uint16_t slot)
{
	if (n->per_slot[slot] == 0)
		return 0;
	if (n->free == NULL && (n->free = malloc((size_t)n->cap * sizeof(n->free[0]))) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n->count; i++) {
		struct ctl_name_ent *e = ctl_names_ent(n, i);

		if (e->len != 0 && e->slot == slot) {
			e->len = 0;
			n->free[n->nfree++] = i;
		}
	}
	n->per_slot[slot] = 0;
	memset(n->index, 0, ((size_t)n->mask + 1) * sizeof(n->index[0]));
	memset(n->kindex, 0, ((size_t)n->mask + 1) * sizeof(n->kindex[0]));
	for (uint32_t i = 0; i < n->count; i++) {
		struct ctl_name_ent *e = ctl_names_ent(n, i);

		if (e->len == 0) {
			e->key = 0;	/* taken again as a new name, keyed again or not */
			continue;
		}
		ctl_names_index(n, i);
		if (e->key != 0)
			ctl_names_kindex_put(n, i);
	}
	return 0;
}

bool
ctl_names_overflowed(const struct ctl_names *n)
{
	return n->overflowed;
}

void
ctl_names_walk(const struct ctl_names *n,
    void (*fn)(uint16_t slot, const char *name, size_t len, void *arg), void *arg)
{
	for (uint32_t i = 0; i < n->count; i++) {
		const struct ctl_name_ent *e = ctl_names_ent(n, i);

		if (e->len != 0)
			fn(e->slot, e->name, e->len, arg);
	}
}

void
ctl_names_of(const struct ctl_names *n, uint16_t slot, void (*fn)(const char *name, void *arg),
    void *arg)
{
	for (uint32_t i = 0; i < n->count; i++) {
		const struct ctl_name_ent *e = ctl_names_ent(n, i);

		if (e->len != 0 && e->slot == slot)
			fn(e->name, arg);
	}
}
