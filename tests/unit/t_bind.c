/*
 * The fixture of the dp_bind tests: see t_bind.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "dp_gen.h"
#include "dp_hash.h"
#include "t_bind.h"
#include "t_eal.h"

const struct pol_ports *
dp_gen_name_ports(const struct dp_gen *g, uint16_t slot, uint64_t name_hash)
{
	(void)g, (void)slot, (void)name_hash;
	return NULL;
}

struct rte_rcu_qsbr *q;
const struct pol_addr t_shared = { .family = 4, .a = { 203, 0, 113, 13 } };
const struct pol_addr t_other = { .family = 4, .a = { 203, 0, 113, 14 } };

struct pol_ports
t_ports(uint8_t b)
{
	struct pol_ports p = { .nallow = 1, .budget = b };

	p.allow[0] = 443;
	return p;
}

void
t_learn(struct dp_binds *b, uint16_t vm, const struct pol_addr *a, uint64_t name, uint8_t bud,
    uint32_t gen)
{
	struct pol_ports p = t_ports(bud);

	assert_int_equal(dp_bind_learn(b, vm, a, name, &p, gen, bud != 0 ? 500 : 1000, 64), 0);
}

struct pol_addr
t_nth_addr(uint32_t i)
{
	struct pol_addr a = { .family = i % 2 ? 6 : 4 };
	/*
	 * Scrambled, one to one below 2^24: CRC is linear, and a run of consecutive keys can
	 * land in as many distinct buckets under some seeds, where no key ever has to move.
	 */
	uint32_t x = i * 0x9e3779u & 0xffffff;

	x ^= x >> 11;
	a.a[0] = a.family == 4 ? 10 : 0x20;
	a.a[1] = (uint8_t)(x >> 16);
	a.a[2] = (uint8_t)(x >> 8);
	a.a[3] = (uint8_t)x;
	if (a.family == 6)
		a.a[15] = 1;
	return a;
}

int
t_bind_run(const char *name, const struct CMUnitTest *tests, size_t n)
{
	int rc;

	if (t_eal_init(name, "256") != 0 || dp_hash_init() != 0)
		return 1;
	q = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(2), RTE_CACHE_LINE_SIZE);
	if (q == NULL || rte_rcu_qsbr_init(q, 2) != 0)
		return 1;
	rte_rcu_qsbr_thread_register(q, 0);
	rte_rcu_qsbr_thread_online(q, 0);
	rc = _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
	rte_free(q);
	return t_eal_done(rc);
}
