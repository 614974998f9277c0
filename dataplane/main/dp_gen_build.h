/*
 * Building a generation from a loaded configuration (the main lcore, at start and on
 * every publish).
 */
#ifndef DP_GEN_BUILD_H
#define DP_GEN_BUILD_H

#include <stdint.h>

#include "policy/load.h"

struct dp_gen;
struct dp_vmslots;

/*
 * Build generation id from cfg for nworkers workers. A VM of prev (may be NULL) keeps its
 * slot; a new one gets a slot slots (may be NULL: none) says is free, else one never used
 * (dp_vmslot.h). max_vms is cfg's at start and prev's after. The generation borrows cfg
 * (names, the pol_set): cfg must outlive it. NULL and rte_errno on failure (E2BIG: out of
 * VM slots).
 */
struct dp_gen *dp_gen_create(const struct pol_config *cfg, uint32_t id, unsigned int nworkers,
    const struct dp_gen *prev, const struct dp_vmslots *slots);

#endif
