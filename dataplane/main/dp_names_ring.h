/*
 * The DNS name budgets' admitted questions, kept for the HA pair's resync (dp_hasync_names.c),
 * in a fixed pool the VMs share fairly: while places are free any VM takes one; once all
 * are taken, a new question takes the oldest of the VM holding most, which is the asker's
 * own when it holds most. So a VM loses a question only to one holding fewer: one asking
 * without end (a hostile VM, or one with many budgeted suffixes) pushes out its own,
 * never the ones another VM's budget on the peer depends on, and an idle VM's questions
 * stay until their window ends.
 *
 * Each VM's questions form a list, oldest first: the order they were kept in is the order
 * their windows end, so the expired ones are always at a list's head.
 */
#ifndef DP_NAMES_RING_H
#define DP_NAMES_RING_H

#include <stdint.h>

#include "ctl_ha_wire.h"

struct dp_names_entry {
	uint64_t at;			/* when kept (whole seconds, from 1); 0: free */
	uint32_t next;			/* the slot's next younger one, or the free list's */
	uint16_t slot;
	uint16_t qtype;
	uint8_t vm_len, name_len, suffix_len;
	char vm[CTL_HA_VM_MAX];
	char name[CTL_HA_NAME_MAX];
};

struct dp_names_ring;

/* A pool of size questions for VM slots below max_vms; NULL when out of memory. */
struct dp_names_ring *dp_names_ring_new(uint32_t size, uint16_t max_vms);
void dp_names_ring_free(struct dp_names_ring *q);

/*
 * r (a NAMES record) kept for slot at now, a question counting for per seconds. Returns 1
 * when a question still inside its window had to go for it (the resync will miss that
 * one), 0 when none did, -1 when r was not kept (slot out of range, strings too long).
 */
int dp_names_ring_keep(struct dp_names_ring *q, uint16_t slot, uint64_t now, uint64_t per,
    const struct ctl_ha_rec *r);

/* The question in place i (< dp_names_ring_size()) if it is still inside its window. */
const struct dp_names_entry *dp_names_ring_live(const struct dp_names_ring *q, uint32_t i,
    uint64_t now, uint64_t per);

uint32_t dp_names_ring_size(const struct dp_names_ring *q);

/* How many questions slot holds, its expired ones not yet reclaimed included. */
uint32_t dp_names_ring_held(const struct dp_names_ring *q, uint16_t slot);

#endif
