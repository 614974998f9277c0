/*
 * Binding mirror: open addressing with linear probing; deletions leave tombstones that
 * inserts reuse, and the table is rebuilt in place of them when they pile up.
 *
 * Every VM slot has its share: a VM whose names resolve to many addresses (a CDN's, or
 * ones an accomplice's resolver picks) fills its own share and then loses its own new
 * bindings, never a neighbour's listing or nftables elements. Where a key lands is keyed
 * with a secret drawn at start, so a VM cannot pick addresses that pile its entries onto
 * the run a neighbour's keys probe.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ctl_mirror.h"

#define CTL_MIRROR_EMPTY		0
#define CTL_MIRROR_DELETED	1
#define CTL_MIRROR_SLOTS	65536	/* a uint16_t slot indexes per_slot */

struct ctl_mirror {
	struct ctl_mirror_ent *t;
	uint32_t mask, used, cap, cursor;	/* used: live entries and tombstones */
	uint32_t live, slot_cap;
	uint32_t *per_slot;			/* live entries by slot */
	uint64_t seed[2];
};

struct ctl_mirror *
ctl_mirror_create(uint32_t cap, uint32_t slot_cap)
{
	struct ctl_mirror *m = calloc(1, sizeof(*m));
	uint32_t size = 64;

	if (m == NULL)
		return NULL;
	while (size < 2 * cap && size < (1u << 28))
		size <<= 1;
	m->t = calloc(size, sizeof(m->t[0]));
	m->per_slot = calloc(CTL_MIRROR_SLOTS, sizeof(m->per_slot[0]));
	if (m->t == NULL || m->per_slot == NULL ||
	    getrandom(m->seed, sizeof(m->seed), 0) != (ssize_t)sizeof(m->seed)) {
		ctl_mirror_free(m);
		return NULL;
	}
	m->mask = size - 1;
	m->cap = cap < size / 2 ? cap : size / 2;
	m->slot_cap = slot_cap;
	return m;
}

void
ctl_mirror_free(struct ctl_mirror *m)
{
	if (m == NULL)
		return;
	free(m->t);
	free(m->per_slot);
	free(m);
}

static uint64_t
ctl_mirror_key(const struct ctl_mirror *m, uint16_t slot, uint8_t family, const uint8_t *addr,
    const char *name)
{
	uint64_t h = m->seed[0] ^ ((uint64_t)slot << 8 | family);

	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 0x100000001b3ULL;
	h = (h ^ (uintptr_t)name) * 0x100000001b3ULL;	/* names are interned */
	h ^= m->seed[1];
	h = (h ^ h >> 30) * 0xbf58476d1ce4e5b9ULL;	/* every bit of the seed into every bit */
	h = (h ^ h >> 27) * 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h < 2 ? h + 2 : h;
}

/* Put e, known absent, in the first free entry of its run (a rebuild: no tombstones). */
static void
ctl_mirror_place(struct ctl_mirror_ent *t, uint32_t mask, const struct ctl_mirror_ent *e)
{
	uint32_t i = (uint32_t)e->key & mask;

	while (t[i].key != CTL_MIRROR_EMPTY)
		i = (i + 1) & mask;
	t[i] = *e;
}

/*
 * The live entries again, without the tombstones: once these are a quarter of the table,
 * an insert whose run has none would find the table "full" with room to spare.
 */
static void
ctl_mirror_rebuild(struct ctl_mirror *m)
{
	struct ctl_mirror_ent *t = calloc((size_t)m->mask + 1, sizeof(t[0]));

	if (t == NULL)
		return;		/* tombstones are still reused: try at the next expiry */
	for (uint32_t i = 0; i <= m->mask; i++)
		if (m->t[i].key > CTL_MIRROR_DELETED)
			ctl_mirror_place(t, m->mask, &m->t[i]);
	free(m->t);
	m->t = t;
	m->used = m->live;
}

static void
ctl_mirror_delete(struct ctl_mirror *m, struct ctl_mirror_ent *e)
{
	e->key = CTL_MIRROR_DELETED;	/* a probe chain goes on past it */
	m->per_slot[e->slot]--;
	m->live--;
}

int
ctl_mirror_bind(struct ctl_mirror *m, uint16_t slot, uint8_t family, const uint8_t *addr,
    const char *name, uint64_t expires, uint32_t gen, const struct dp_evt_ports *ports)
{
	uint64_t key = ctl_mirror_key(m, slot, family, addr, name);
	struct ctl_mirror_ent *free_ent = NULL;

	for (uint32_t i = (uint32_t)key & m->mask, n = 0; n <= m->mask;
	    i = (i + 1) & m->mask, n++) {
		struct ctl_mirror_ent *e = &m->t[i];

		if (e->key == CTL_MIRROR_EMPTY) {
			if (free_ent == NULL)
				free_ent = e;
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
	/* past its share a VM loses its own new bindings, never a neighbour's */
	if (free_ent == NULL || m->live == m->cap || m->per_slot[slot] >= m->slot_cap)
		return -ENOSPC;
	if (free_ent->key == CTL_MIRROR_EMPTY)
		m->used++;
	*free_ent = (struct ctl_mirror_ent){ .key = key, .expires = expires, .name = name,
		.slot = slot, .family = family, .gen = gen, .ports = *ports };
	memcpy(free_ent->addr, addr, 16);
	m->per_slot[slot]++;
	m->live++;
	return 0;
}

void
ctl_mirror_expire(struct ctl_mirror *m, uint64_t now, unsigned int budget)
{
	for (unsigned int n = 0; n < budget && n <= m->mask; n++) {
		struct ctl_mirror_ent *e = &m->t[m->cursor];

		m->cursor = (m->cursor + 1) & m->mask;
		if (e->key > CTL_MIRROR_DELETED && e->expires <= now)
			ctl_mirror_delete(m, e);
	}
	if (m->used - m->live > (m->mask + 1) / 4)
		ctl_mirror_rebuild(m);
}

void
ctl_mirror_forget_slot(struct ctl_mirror *m, uint16_t slot)
{
	for (uint32_t i = 0; i <= m->mask && m->per_slot[slot] > 0; i++)
		if (m->t[i].key > CTL_MIRROR_DELETED && m->t[i].slot == slot)
			ctl_mirror_delete(m, &m->t[i]);
}

uint32_t
ctl_mirror_count(const struct ctl_mirror *m, uint16_t slot)
{
	return m->per_slot[slot];
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

uint32_t
ctl_mirror_walk_some(const struct ctl_mirror *m, uint64_t now, uint32_t from, uint32_t n,
    void (*fn)(const struct ctl_mirror_ent *e, void *arg), void *arg)
{
	uint32_t i = from;

	for (; i <= m->mask && i - from < n; i++) {
		const struct ctl_mirror_ent *e = &m->t[i];

		if (e->key > CTL_MIRROR_DELETED && e->expires > now)
			fn(e, arg);
	}
	return i <= m->mask ? i : 0;
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
