/*
 * Binding mirror: open addressing, deletions leave tombstones that inserts reuse.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_mirror.h"

#define CTL_MIRROR_EMPTY		0
#define CTL_MIRROR_DELETED	1

struct ctl_mirror {
	struct ctl_mirror_ent *t;
	uint32_t mask, used, cap, cursor;
};

struct ctl_mirror *
ctl_mirror_create(uint32_t cap)
{
	struct ctl_mirror *m = calloc(1, sizeof(*m));
	uint32_t size = 64;

	if (m == NULL)
		return NULL;
	while (size < 2 * cap && size < (1u << 28))
		size <<= 1;
	if ((m->t = calloc(size, sizeof(m->t[0]))) == NULL) {
		free(m);
		return NULL;
	}
	m->mask = size - 1;
	m->cap = size / 2;
	return m;
}

void
ctl_mirror_free(struct ctl_mirror *m)
{
	if (m != NULL)
		free(m->t);
	free(m);
}

static uint64_t
ctl_mirror_key(uint16_t slot, uint8_t family, const uint8_t *addr, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)slot << 8 | family);

	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 0x100000001b3ULL;
	h = (h ^ (uintptr_t)name) * 0x100000001b3ULL;	/* names are interned */
	return h < 2 ? h + 2 : h;
}

int
ctl_mirror_bind(struct ctl_mirror *m, uint16_t slot, uint8_t family, const uint8_t *addr,
    const char *name, uint64_t expires, uint32_t gen, const struct dp_evt_ports *ports)
{
	uint64_t key = ctl_mirror_key(slot, family, addr, name);
	struct ctl_mirror_ent *free_ent = NULL;

	for (uint32_t i = (uint32_t)key & m->mask, n = 0; n <= m->mask;
	    i = (i + 1) & m->mask, n++) {
		struct ctl_mirror_ent *e = &m->t[i];

		if (e->key == CTL_MIRROR_EMPTY) {
			if (free_ent == NULL) {
				if (m->used == m->cap)
					return -ENOSPC;
				free_ent = e;
				m->used++;
			}
			break;
		}
		if (e->key == CTL_MIRROR_DELETED) {
			if (free_ent == NULL)
				free_ent = e;
			continue;
		}
		if (e->key == key && e->slot == slot && e->family == family && e->name == name &&
		    memcmp(e->addr, addr, 16) == 0) {
			if (expires > e->expires)
				e->expires = expires;
			if (gen >= e->gen) {	/* the latest judgement, as the worker keeps it */
				e->gen = gen;
				e->ports = *ports;
			}
			return 0;
		}
	}
	if (free_ent == NULL)
		return -ENOSPC;
	*free_ent = (struct ctl_mirror_ent){ .key = key, .expires = expires, .name = name,
		.slot = slot, .family = family, .gen = gen, .ports = *ports };
	memcpy(free_ent->addr, addr, 16);
	return 0;
}

void
ctl_mirror_expire(struct ctl_mirror *m, uint64_t now, unsigned int budget)
{
	for (unsigned int n = 0; n < budget && n <= m->mask; n++) {
		struct ctl_mirror_ent *e = &m->t[m->cursor];

		m->cursor = (m->cursor + 1) & m->mask;
		if (e->key > CTL_MIRROR_DELETED && e->expires <= now)
			e->key = CTL_MIRROR_DELETED;	/* a probe chain goes on past it */
	}
}

void
ctl_mirror_walk_all(const struct ctl_mirror *m, uint64_t now,
    void (*fn)(const struct ctl_mirror_ent *e, void *arg), void *arg)
{
	for (uint32_t i = 0; i <= m->mask; i++) {
		const struct ctl_mirror_ent *e = &m->t[i];

		if (e->key > CTL_MIRROR_DELETED && e->expires > now)
			fn(e, arg);
	}
}

void
ctl_mirror_walk(const struct ctl_mirror *m, uint16_t slot, uint64_t now,
    void (*fn)(const struct ctl_mirror_ent *e, void *arg), void *arg)
{
	for (uint32_t i = 0; i <= m->mask; i++) {
		const struct ctl_mirror_ent *e = &m->t[i];

		if (e->key > CTL_MIRROR_DELETED && e->slot == slot && e->expires > now)
			fn(e, arg);
	}
}

void
ctl_mirror_forget(struct ctl_mirror *m, uint16_t slot)
{
	for (uint32_t i = 0; i <= m->mask; i++)
		if (m->t[i].key > CTL_MIRROR_DELETED && m->t[i].slot == slot)
			m->t[i].key = CTL_MIRROR_DELETED;	/* a probe chain goes on past it */
}
