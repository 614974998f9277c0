/*
 * control/grants/ctl_grants_live.c, the HA pair's side: a grant from the peer is made as
 * one on the socket (in the table, the state file and a new generation) and never echoed
 * back; its resync again changes nothing; the peer's revoke ends it; a grant made here
 * goes to the peer with its seconds left, a revoke with 0; a fleet's gateway sends and
 * takes none. A revoke made here wins over the peer's resync of the grant, across a
 * restart, until a grant is made again.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/dp_plane.h"
#include "ctl_grants.h"
#include "ctl_grants_live.h"
#include "ctl_sock.h"
#include "policy/load.h"

static unsigned int generations;	/* put out through the fake plane */

static int
fake_generation(void *dp, const struct pol_config *cfg, bool closing, FILE *err)
{
	(void)dp;
	(void)cfg;
	(void)closing;
	(void)err;
	generations++;
	return 0;
}

static uint32_t
fake_generation_id(void *dp)
{
	(void)dp;
	return generations;
}

/* What the pair's callback heard, the last of it. */
static struct {
	unsigned int calls;
	char vm[32], host[64];
	uint32_t left;
} heard;

static void
pair_heard(void *arg, const char *vm, const char *host, uint32_t left)
{
	(void)arg;
	heard.calls++;
	snprintf(heard.vm, sizeof(heard.vm), "%s", vm);
	snprintf(heard.host, sizeof(heard.host), "%s", host);
	heard.left = left;
}

static unsigned int live, revokes;	/* what a resync would send */

static void
count_live(void *arg, const char *vm, const char *host, uint32_t left)
{
	(void)arg;
	(void)vm;
	(void)host;
	if (left > 0)
		live++;
	else
		revokes++;
}

static unsigned int
live_grants(const struct ctl_grants_live *gl)
{
	live = revokes = 0;
	ctl_grants_live_each(gl, count_live, NULL);
	return live;
}

/*
 * The peer's record for vm1's example.org:443 (left 0: its revoke) taken: live grants
 * after it, and generations put out by it, are as said.
 */
static void
peer_says(struct ctl_grants_live *gl, uint32_t left, bool resync, unsigned int want_live,
    unsigned int want_gens)
{
	unsigned int gens = generations;
	char why[512];

	assert_int_equal(ctl_grants_live_peer(gl, "vm1", "example.org:443", left, resync, why,
	    sizeof(why)), 0);
	assert_int_equal(live_grants(gl), want_live);
	assert_int_equal(generations, gens + want_gens);
}

static bool
file_has(const char *path, const char *needle)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}


static struct ctl_grants_live *
pair_start(struct pol_config **cfg)
{
	static const struct dp_plane plane = { .generation = fake_generation,
		.generation_id = fake_generation_id };
	struct ctl_grants_live *gl;

	assert_non_null(gl = ctl_grants_live_start(cfg, NULL, &plane, stderr));
	ctl_grants_live_set_pair(gl, pair_heard, NULL);
	return gl;
}

/* Two VMs under policy p, the grants' state file in a new directory dir (XXXXXX'ed). */
static struct pol_config *
pair_config(char *dir, char *path, size_t pathlen)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;
	char yaml[512];
	int n;

	assert_non_null(mkdtemp(dir));
	snprintf(path, pathlen, "%s/grants.json", dir);
	n = snprintf(yaml, sizeof(yaml), "grants: {state: %s}\n"
	    "policies: {p: {allow: [pypi.org]}}\n"
	    "vms:\n"
	    "  - {name: vm1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: p}\n"
	    "  - {name: vm2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: p}\n", path);
	assert_non_null(cfg = pol_load_buffer(yaml, (size_t)n, "ng.yaml", &errs));
	return cfg;
}

static void
test_pair(void **state)
{
	char dir[] = "/tmp/test_ctl_grants_pair.XXXXXX", path[96], why[512], cmd[128];
	struct ctl_peer op = { .uid = 0, .user = "root" };
	struct ctl_grants_live *gl;
	struct pol_config *cfg;
	struct ctl_grant g;

	(void)state;
	cfg = pair_config(dir, path, sizeof(path));
	gl = pair_start(&cfg);

	/* the peer's grant: made here, saved, in force; not sent back */
	peer_says(gl, 600, false, 1, 1);
	assert_true(file_has(path, "\"host\":\"example.org:443\""));
	assert_int_equal(heard.calls, 0);
	/* its resync on the next connection: nothing new */
	peer_says(gl, 590, true, 1, 0);
	/* a grant the peer could not have made here is refused, nothing made */
	assert_true(ctl_grants_live_peer(gl, "nosuchvm", "example.org", 600, false,
	    why, sizeof(why)) < 0);
	assert_int_equal(live_grants(gl), 1);

	/* made here: to the peer, with its seconds left */
	assert_int_equal(ctl_grants_live_make(gl, "vm2", "pypi.org", "10m", NULL, &op, &g, why,
	    sizeof(why)), 0);
	assert_int_equal(heard.calls, 1);
	assert_string_equal(heard.vm, "vm2");
	assert_string_equal(heard.host, "pypi.org");
	assert_int_equal(heard.left, 600);
	assert_int_equal(live_grants(gl), 2);

	/* the peer's revoke ends vm1's grant for its host, and only that */
	peer_says(gl, 0, false, 1, 1);
	assert_false(file_has(path, "example.org:443"));
	assert_int_equal(heard.calls, 1);

	/* a fleet's gateway: the store has the grants; none goes, none is taken */
	ctl_grants_live_set_store(gl, "f1", NULL, NULL);
	assert_int_equal(live_grants(gl), 0);
	assert_int_equal(ctl_grants_live_peer(gl, "vm1", "example.org", 600, true, why,
	    sizeof(why)), -EPERM);
	assert_int_equal(ctl_grants_live_make(gl, "vm1", "pypi.org", "10m", NULL, &op, &g, why,
	    sizeof(why)), 0);
	assert_int_equal(heard.calls, 1);

	ctl_grants_live_stop(gl);
	pol_config_free(cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void
test_revoke_wins_over_the_resync(void **state)
{
	char dir[] = "/tmp/test_ctl_grants_tomb.XXXXXX", path[96], why[512], cmd[128];
	struct ctl_peer op = { .uid = 0, .user = "root" };
	struct ctl_grants_live *gl;
	struct pol_config *cfg;
	struct ctl_grant g;
	unsigned int calls;

	(void)state;
	cfg = pair_config(dir, path, sizeof(path));
	gl = pair_start(&cfg);

	/* made, then revoked here while (say) the peer could not hear */
	assert_int_equal(ctl_grants_live_make(gl, "vm1", "example.org:443", "10m", NULL, &op, &g,
	    why, sizeof(why)), 0);
	assert_int_equal(ctl_grants_live_revoke(gl, g.id, &op, &g), 0);
	assert_int_equal(heard.left, 0);
	assert_true(file_has(path, "\"revoked\""));
	/* the peer's resync still has it: refused, and the revoke goes back to the peer */
	calls = heard.calls;
	assert_int_equal(ctl_grants_live_peer(gl, "vm1", "example.org:443", 590, true, why,
	    sizeof(why)), -ECANCELED);
	assert_int_equal(live_grants(gl), 0);
	assert_int_equal(heard.calls, calls + 1);
	assert_string_equal(heard.host, "example.org:443");
	assert_int_equal(heard.left, 0);
	/* and this box's own resync carries the revoke */
	assert_int_equal(revokes, 1);

	/* across a restart: the state file kept it */
	ctl_grants_live_stop(gl);
	gl = pair_start(&cfg);
	assert_int_equal(ctl_grants_live_peer(gl, "vm1", "example.org:443", 580, true, why,
	    sizeof(why)), -ECANCELED);
	assert_int_equal(live_grants(gl), 0);

	/* a grant the peer made since (not its resync) is a new decision: taken, kept no more */
	peer_says(gl, 600, false, 1, 1);
	assert_int_equal(revokes, 0);
	assert_false(file_has(path, "\"revoked\""));

	ctl_grants_live_stop(gl);
	pol_config_free(cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair),
		cmocka_unit_test(test_revoke_wins_over_the_resync),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
