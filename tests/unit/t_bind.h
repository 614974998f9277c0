/*
 * The fixture test_dp_bind.c and test_dp_bind_allow.c share: RCU with this thread as
 * worker 0, two addresses, names allowing port 443, the scrambled run of addresses, and
 * main()'s body (EAL, dp_hash_init(), the RCU) around cmocka's run. dp_gen_name_ports() is
 * a fake in t_bind.c: no name table.
 */
#ifndef T_BIND_H
#define T_BIND_H

#include <stddef.h>
#include <stdint.h>

#include "dp_bind.h"

struct CMUnitTest;

#define T_CAP		4096	/* a table of 1,024 buckets: keys spread over many */
#define T_NOW		10

extern struct rte_rcu_qsbr *q;		/* this thread plays worker 0; a reader, worker 1 */
extern const struct pol_addr t_shared, t_other;

/* A name allowing port 443, counted in budget b (1 + index, 0: none). */
struct pol_ports t_ports(uint8_t b);

/* Bind a to name for vm until 1000, or, for a budgeted name, 500: the first to go. */
void t_learn(struct dp_binds *b, uint16_t vm, const struct pol_addr *a, uint64_t name,
    uint8_t bud, uint32_t gen);

/* Address i: IPv4 for even i, IPv6 for odd, all distinct below 2^24. */
struct pol_addr t_nth_addr(uint32_t i);

/* main()'s whole body: the n tests of program name run on EAL and the RCU; exit status. */
int t_bind_run(const char *name, const struct CMUnitTest *tests, size_t n);

#endif
