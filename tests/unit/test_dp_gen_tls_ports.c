/*
 * dp_gen_is_tls_port() walks a generation's tls_ports to the 0 that ends them: every port
 * of the list is one and no other port is, port 0 least of all (the end, which a walk that
 * compared before it looked for the end would take for a TLS port). A zeroed generation
 * has none, and a list of DP_TLS_PORTS_MAX ports still ends: what follows the list, all
 * ones here, is never read as a port.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "dp.h"
#include "dp_gen.h"

/* Every port asked of g, whose list is the n of ports. */
static void
t_every_port(const struct dp_gen *g, const uint16_t *ports, size_t n)
{
	for (uint32_t port = 0; port <= UINT16_MAX; port++) {
		bool in = false;

		for (size_t i = 0; i < n; i++)
			in |= ports[i] == port;
		assert_int_equal(dp_gen_is_tls_port(g, (uint16_t)port), in);
	}
}

static void
test_tls_ports(void **state)
{
	static const uint16_t some[] = { 443, 8443, 1 }, full[DP_TLS_PORTS_MAX] = {
		443, 8443, 853, 993, 995, 465, 636, 989, 990, 992, 5061, 6697, 9443, 10443, 4443,
		8080 };
	struct dp_gen *g = malloc(sizeof(*g));

	(void)state;
	assert_non_null(g);
	memset(g, 0xff, sizeof(*g));	/* port 65535 wherever a walk reads past the list */
	memset(g->tls_ports, 0, sizeof(g->tls_ports));
	t_every_port(g, NULL, 0);
	memcpy(g->tls_ports, some, sizeof(some));
	t_every_port(g, some, sizeof(some) / sizeof(some[0]));
	memcpy(g->tls_ports, full, sizeof(full));
	t_every_port(g, full, sizeof(full) / sizeof(full[0]));
	free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_ports),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
