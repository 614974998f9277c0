/*
 * Bindings: (VM, address) -> the allowed names that resolved to it, until their TTL runs
 * out. Learned from DNS answers by any worker, read by every worker when a connection
 * opens, expired by the main lcore. The one table all workers write.
 */
#ifndef DP_BIND_H
#define DP_BIND_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "policy/match.h"

#define DP_BIND_NAMES	3	/* names kept per address: a CDN address serves many */

struct dp_binds;

/*
 * A table for cap bindings across nvms VMs, its memory named name. Deleted slots are
 * reused only once every worker registered on qsbr has passed a quiescent point. NULL and
 * rte_errno on failure.
 */
struct dp_binds *dp_binds_create(const char *name, uint32_t cap, uint16_t nvms,
    struct rte_rcu_qsbr *qsbr, int socket);
void dp_binds_free(struct dp_binds *b);
/* The EAL memory dp_binds_create() takes for cap bindings and nvms VMs (dp_mem.h). */
uint64_t dp_binds_mem(uint32_t cap, uint16_t nvms);

/*
 * Bind addr for VM vm to the name whose canonical text hashes to name_hash, with the ports
 * generation gen's rules allow for it, until expires (seconds, dp_now()). A name already
 * bound has its expiry extended; a fourth name replaces the one closest to expiry. Visible
 * to every worker when this returns. Returns 0, -ENOSPC when the table is full, or
 * -EDQUOT when addr is new and vm has max_per_vm bindings already.
 */
int dp_bind_learn(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr,
    uint64_t name_hash, const struct pol_ports *ports, uint32_t gen, uint64_t expires,
    uint32_t max_per_vm);

/* dp_bind_allows()'s answer: two words, returned in registers, not through the stack */
struct dp_bind_allow {
	uint64_t name_hash;		/* allowed: the name that allowed it */
	uint8_t budgets;		/* allowed: what dp_bind_budgets() says */
	bool allowed;
};

/*
 * Is there a live binding of addr for vm through a name whose rules, in generation g,
 * allow port? Names learned under an older generation are judged by g's name table.
 */
struct dp_bind_allow dp_bind_allows(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr,
    uint16_t port, uint64_t now, const struct dp_gen *g);

/*
 * The egress budgets (a set, dp_budget.h) of every name bound to addr for vm, whatever
 * ports it allows, as generation g numbers them: bytes to the address count in all of
 * them, whichever name the VM connected by. A name the binding no longer keeps (evicted
 * by newer ones) stays in the set while the address is bound; a reload forgets those.
 */
uint8_t dp_bind_budgets(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr,
    uint64_t now, const struct dp_gen *g);

/* Is addr bound for vm through the name hashing to name_hash (sni_binding: strict)? */
bool dp_bind_has_name(struct dp_binds *b, uint16_t vm, const struct pol_addr *addr,
    uint64_t name_hash, uint64_t now);

/*
 * Main lcore: delete up to budget bindings that expired or whose VM generation g (may be
 * NULL) no longer has, resuming at *cursor. Returns how many.
 */
unsigned int dp_binds_sweep(struct dp_binds *b, uint64_t now, const struct dp_gen *g,
    unsigned int budget, uint32_t *cursor);

/* Live bindings of vm (the namegate_vm_bindings gauge). */
uint64_t dp_binds_count(const struct dp_binds *b, uint16_t vm);

/* The name hash bindings use: the keyed 64-bit hash of the canonical text (dp_hash.h). */
uint64_t dp_name_hash(const char *name, size_t len);

#endif
