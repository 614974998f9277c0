/*
 * (VM slot, name) set: open addressing over a power-of-two table, at most half full.
 * Main lcore only; names are few next to packets, so plain malloc is fine here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/dp_api.h"
#include "dp_names.h"

struct dp_name_ent {
	uint64_t hash;			/* 0: empty */
	uint16_t slot;
	uint8_t len;
	char name[DP_EVT_NAME_MAX + 1];
};

struct dp_names {
	struct dp_name_ent *t;
	uint32_t mask, count, cap;
	bool overflowed;
};

struct dp_names *
dp_names_create(uint32_t cap)
{
	struct dp_names *n = calloc(1, sizeof(*n));
	uint32_t size = 64;

	if (n == NULL)
		return NULL;
	while (size < 2 * cap && size < (1u << 30))
		size <<= 1;
	if ((n->t = calloc(size, sizeof(n->t[0]))) == NULL) {
		free(n);
		return NULL;
	}
	n->mask = size - 1;
	n->cap = size / 2;
	return n;
}

void
dp_names_free(struct dp_names *n)
{
	if (n != NULL)
		free(n->t);
	free(n);
}

static uint64_t
dp_names_hash(uint16_t slot, const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ slot;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 0x100000001b3ULL;
	return h | 1;
}

int
dp_names_add(struct dp_names *n, uint16_t slot, const char *name, size_t len,
    const char **stored)
{
	uint64_t h;

	if (len == 0 || len > DP_EVT_NAME_MAX)
		return -EINVAL;
	h = dp_names_hash(slot, name, len);
	for (uint32_t i = (uint32_t)h & n->mask;; i = (i + 1) & n->mask) {
		struct dp_name_ent *e = &n->t[i];

		if (e->hash == 0) {
			if (n->count == n->cap) {
				n->overflowed = true;
				return -ENOSPC;
			}
			*e = (struct dp_name_ent){ .hash = h, .slot = slot, .len = (uint8_t)len };
			memcpy(e->name, name, len);
			n->count++;
			if (stored != NULL)
				*stored = e->name;
			return 0;
		}
		if (e->hash == h && e->slot == slot && e->len == len &&
		    memcmp(e->name, name, len) == 0) {
			if (stored != NULL)
				*stored = e->name;
			return 0;
		}
	}
}

uint32_t
dp_names_count(const struct dp_names *n)
{
	return n->count;
}

bool
dp_names_overflowed(const struct dp_names *n)
{
	return n->overflowed;
}

void
dp_names_walk(const struct dp_names *n,
    void (*fn)(uint16_t slot, const char *name, size_t len, void *arg), void *arg)
{
	for (uint32_t i = 0; i <= n->mask; i++)
		if (n->t[i].hash != 0)
			fn(n->t[i].slot, n->t[i].name, n->t[i].len, arg);
}

void
dp_names_of(const struct dp_names *n, uint16_t slot, void (*fn)(const char *name, void *arg),
    void *arg)
{
	for (uint32_t i = 0; i <= n->mask; i++)
		if (n->t[i].hash != 0 && n->t[i].slot == slot)
			fn(n->t[i].name, arg);
}
