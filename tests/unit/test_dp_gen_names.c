/*
 * A generation's names table (dp_gen_names_init/add): a reload, grant, revoke, approval
 * or expiry builds one with every name the VMs have resolved, and fails whole when one
 * add fails. Sized at the count it must hold, a cuckoo hash refused some adds by the luck
 * of the secret drawn at start (at counts just under a power of two, most runs); now
 * every name fits, at five counts with ten fresh secrets each.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <rte_malloc.h>

#include "dp.h"
#include "dp_gen.h"
#include "dp_hash.h"
#include "t_eal.h"

#define T_NAMES_MAX	8191
#define T_ROUNDS	10

/* Counts just under a power of two filled the hash whole: those failed most. */
static const uint32_t t_counts[] = { 1000, 2040, 4095, 8000, T_NAMES_MAX };

static void
test_every_name_fits_whatever_the_secret(void **state)
{
	static uint64_t hashes[T_NAMES_MAX];
	struct pol_ports ports = { 0 };

	(void)state;
	for (uint32_t round = 0; round < T_ROUNDS * 5; round++) {
		const uint32_t count = t_counts[round % 5];
		struct dp_gen *g = rte_zmalloc("t_gen", sizeof(*g), 0);

		assert_int_equal(dp_hash_init(), 0);	/* a fresh secret, as at a start */
		assert_non_null(g);
		g->id = round + 1;
		assert_int_equal(getrandom(hashes, sizeof(hashes), 0), (ssize_t)sizeof(hashes));
		assert_int_equal(dp_gen_names_init(g, count + 1), 0);
		for (uint32_t i = 0; i < count; i++) {
			ports.nallow = (uint8_t)(i % 3);
			assert_int_equal(dp_gen_names_add(g, (uint16_t)(i % 2), hashes[i], &ports),
			    0);
		}
		for (uint32_t i = 0; i < count; i += 97) {
			const struct pol_ports *p = dp_gen_name_ports(g, (uint16_t)(i % 2), hashes[i]);

			assert_non_null(p);
			assert_int_equal(p->nallow, i % 3);
		}
		dp_gen_free(g);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_name_fits_whatever_the_secret),
	};

	return T_EAL_RUN("test_dp_gen_names", "256", tests);
}
