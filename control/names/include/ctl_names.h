/*
 * The names each VM has resolved (through DNS answers the fast path learned from), kept by
 * the main lcore from the workers' BIND events. A reload judges them again with the new
 * policy, so that flows and bindings the new policy no longer allows can be cut.
 */
#ifndef CTL_NAMES_H
#define CTL_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl_names;

/* The blocked names namegatectl suggest draws from: in all, and of one VM. */
#define CTL_TRIED_NAMES		4096
#define CTL_TRIED_NAMES_PER_VM	256

/*
 * A set for up to cap (VM slot, name) pairs, no more, and at most slot_cap of one slot's:
 * names are never forgotten, so without a share one VM resolving name after name would
 * fill the set for every VM. NULL on allocation failure.
 */
struct ctl_names *ctl_names_create(uint32_t cap, uint32_t slot_cap);
void ctl_names_free(struct ctl_names *n);

/*
 * Remember (slot, name); -ENOSPC once the set or slot's share is full (the set then stays
 * as it is: see dp_publish).
 * *stored (may be NULL) points at the set's copy, NUL-terminated, valid for the set's life.
 */
int ctl_names_add(struct ctl_names *n, uint16_t slot, const char *name, size_t len,
    const char **stored);

/*
 * Forget every name of slot, whose VM is gone (a slot is given to another VM only after
 * this: dp_vmslot.h). Their entries are taken again by later names, so nothing may still
 * point at them (the mirror's bindings of slot: ctl_mirror_forget_slot() first). 0, or -ENOMEM
 * with nothing forgotten.
 */
int ctl_names_forget(struct ctl_names *n, uint16_t slot);

/* The names of slot, for namegatectl suggest: fn is called once per name. */
void ctl_names_of(const struct ctl_names *n, uint16_t slot,
    void (*fn)(const char *name, void *arg), void *arg);

/*
 * ctl_names_add(), and the name found again by key (the fast path's hash of it, which is
 * all a flow keeps) with ctl_names_by_key(). Key 0: not keyed.
 */
int ctl_names_add_keyed(struct ctl_names *n, uint16_t slot, const char *name, size_t len,
    uint64_t key, const char **stored);

/* The name of slot keyed key (NUL-terminated, *len bytes), or NULL. */
const char *ctl_names_by_key(const struct ctl_names *n, uint16_t slot, uint64_t key,
    size_t *len);

/* The names held (those forgotten not counted). */
uint32_t ctl_names_count(const struct ctl_names *n);
bool ctl_names_overflowed(const struct ctl_names *n);

void ctl_names_walk(const struct ctl_names *n,
    void (*fn)(uint16_t slot, const char *name, size_t len, void *arg), void *arg);

#endif
