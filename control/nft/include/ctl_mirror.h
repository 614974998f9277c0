/*
 * The live bindings with their names, as the main lcore learns them from the workers'
 * BIND events: what `namegatectl bindings VM` lists, and what the nftables sets are
 * rebuilt from. The fast path's own table (dp_bind.c) keeps only name hashes.
 */
#ifndef CTL_MIRROR_H
#define CTL_MIRROR_H

#include <stdint.h>

#include "api/dp_api.h"

struct ctl_mirror;

struct ctl_mirror_ent {
	uint64_t key;			/* 0: empty, 1: deleted */
	uint64_t expires;		/* seconds, dp_now() */
	const char *name;		/* owned by the name set (ctl_names) */
	uint16_t slot;
	uint8_t family;
	uint8_t addr[16];
	uint32_t gen;			/* the generation that judged it last */
	struct dp_evt_ports ports;	/* what it opens under gen */
};

/*
 * Room for cap bindings (one per VM slot, address and name), of which one VM slot may hold
 * slot_cap; NULL on allocation failure.
 */
struct ctl_mirror *ctl_mirror_create(uint32_t cap, uint32_t slot_cap);
void ctl_mirror_free(struct ctl_mirror *m);

/*
 * (slot, addr) is bound to name until expires, opening ports as generation gen judged
 * it; a later expiry wins, and a later generation's judgement. -ENOSPC when the table is
 * full or slot holds its share.
 */
int ctl_mirror_bind(struct ctl_mirror *m, uint16_t slot, uint8_t family, const uint8_t *addr,
    const char *name, uint64_t expires, uint32_t gen, const struct dp_evt_ports *ports);

/* Forget up to budget expired bindings. */
void ctl_mirror_expire(struct ctl_mirror *m, uint64_t now, unsigned int budget);

/*
 * Forget every binding of slot (its VM is gone and so are its bindings in the fast path):
 * before the names they point at are forgotten, and the slot given to another VM.
 */
void ctl_mirror_forget_slot(struct ctl_mirror *m, uint16_t slot);

/* The bindings slot holds, expired ones not yet forgotten included. */
uint32_t ctl_mirror_count(const struct ctl_mirror *m, uint16_t slot);

/* fn for every binding live at now, every VM's. */
void ctl_mirror_walk_all(const struct ctl_mirror *m, uint64_t now,
    void (*fn)(const struct ctl_mirror_ent *e, void *arg), void *arg);


/*
 * fn for the bindings live at now among n of the table's places from place from (0: the
 * first); returns where to go on, 0 once the table is done. The table never moves its
 * entries, so a walk in steps sees each binding that stays live throughout.
 */
uint32_t ctl_mirror_walk_some(const struct ctl_mirror *m, uint64_t now, uint32_t from,
    uint32_t n, void (*fn)(const struct ctl_mirror_ent *e, void *arg), void *arg);

/* fn for every binding of slot live at now. */
void ctl_mirror_walk(const struct ctl_mirror *m, uint16_t slot, uint64_t now,
    void (*fn)(const struct ctl_mirror_ent *e, void *arg), void *arg);

#endif
