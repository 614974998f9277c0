/*
 * policy/load explanations: namegatectl check's line and exit status, and the --check
 * summary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/load.h"

#ifndef POL_FIXTURES
#define POL_FIXTURES "tests/policy"
#endif

/* pypi.org is on line 7, as in the example. */
static const char ng_yaml[] =
    "# namegate\n"
    "resolvers: [10.77.0.1]\n"
    "policies:\n"
    "  dev:\n"
    "    deny: [upload.pypi.org, \"*.evil.example\"]\n"
    "    allow:\n"
    "      - pypi.org\n"
    "      - \"*.githubusercontent.com\"\n"
    "      - github.com:22\n"
    "      - 198.51.100.0/24:443\n"
    "      - \"[2001:db8::1]:443\"\n"
    "  offline:\n"
    "    allow: []\n"
    "vms:\n"
    "  - name: vm1\n"
    "    mac: 02:00:00:00:00:01\n"
    "    ipv4: 10.77.0.11\n"
    "    policy: dev\n"
    "  - name: vm2\n"
    "    mac: 02:00:00:00:00:02\n"
    "    ipv4: 10.77.0.12\n"
    "    policy: offline\n"
    "    mode: audit\n";

static struct pol_config *cfg;

static int
setup(void **state)
{
	struct pol_errs errs = { 0 };

	(void)state;
	cfg = pol_load_buffer(ng_yaml, sizeof(ng_yaml) - 1, "ng.yaml", &errs);
	if (cfg == NULL)
		pol_errs_print(stderr, &errs);
	pol_errs_free(&errs);
	return cfg == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	pol_config_free(cfg);
	return 0;
}

/* check vm host: the exit status, and the one line printed (out, else err). */
static void
expect(const char *vm, const char *host, int rc, const char *line)
{
	char *out = NULL, *err = NULL;
	size_t olen = 0, elen = 0;
	FILE *fo = open_memstream(&out, &olen), *fe = open_memstream(&err, &elen);
	int got = pol_explain(cfg, vm, host, fo, fe);

	fclose(fo);
	fclose(fe);
	if (got != rc || strcmp(rc == 2 ? err : out, line) != 0)
		fail_msg("check %s %s: got %d \"%s%s\", want %d \"%s\"", vm, host, got, out, err,
		    rc, line);
	free(out);
	free(err);
}

static void
test_check(void **state)
{
	(void)state;
	expect("vm1", "pypi.org:443", 0,
	    "allow pypi.org:443 for vm1: policies.dev.allow[0] \"pypi.org\" (ng.yaml:7)\n");
	expect("vm1", "PyPI.org.", 0,
	    "allow pypi.org for vm1: policies.dev.allow[0] \"pypi.org\" (ng.yaml:7)\n");
	expect("vm1", "evilpypi.org:443", 1,
	    "block evilpypi.org:443 for vm1: no pattern of policy 'dev' matches (default "
	    "deny)\n");
	expect("vm1", "pypi.org.evil.example.net:443", 1,
	    "block pypi.org.evil.example.net:443 for vm1: no pattern of policy 'dev' matches "
	    "(default deny)\n");
	expect("vm1", "upload.pypi.org:443", 1, "block upload.pypi.org:443 for vm1: "
	    "policies.dev.deny[0] \"upload.pypi.org\" (ng.yaml:5)\n");
	expect("vm1", "x.y.evil.example", 1, "block x.y.evil.example for vm1: "
	    "policies.dev.deny[1] \"*.evil.example\" (ng.yaml:5)\n");
	expect("vm1", "raw.githubusercontent.com:443", 0, "allow raw.githubusercontent.com:443 "
	    "for vm1: policies.dev.allow[1] \"*.githubusercontent.com\" (ng.yaml:8)\n");
	expect("vm1", "githubusercontent.com:443", 1, "block githubusercontent.com:443 for vm1: "
	    "no pattern of policy 'dev' matches (default deny)\n");
	expect("vm1", "github.com:22", 0,
	    "allow github.com:22 for vm1: policies.dev.allow[2] \"github.com:22\" (ng.yaml:9)\n");
	expect("vm1", "github.com:443", 1, "block github.com:443 for vm1: no pattern of policy "
	    "'dev' matches (default deny)\n");
	/* Without a port: may the name be resolved (some port is allowed). */
	expect("vm1", "github.com", 0,
	    "allow github.com for vm1: policies.dev.allow[2] \"github.com:22\" (ng.yaml:9)\n");
	expect("vm1", "198.51.100.77:443", 0, "allow 198.51.100.77:443 for vm1: "
	    "policies.dev.allow[3] \"198.51.100.0/24:443\" (ng.yaml:10)\n");
	expect("vm1", "198.51.100.77:80", 1, "block 198.51.100.77:80 for vm1: no pattern of "
	    "policy 'dev' matches (default deny)\n");
	expect("vm1", "[2001:DB8::1]:443", 0, "allow [2001:db8::1]:443 for vm1: "
	    "policies.dev.allow[4] \"[2001:db8::1]:443\" (ng.yaml:11)\n");
	expect("vm2", "pypi.org:443", 1, "block pypi.org:443 for vm2: no pattern of policy "
	    "'offline' matches (default deny); vm2 is in audit mode: counted as would_block, "
	    "traffic passes\n");
	expect("vm9", "pypi.org", 2, "unknown VM 'vm9' in ng.yaml\n");
	expect("vm1", "*.pypi.org", 2, "bad host \"*.pypi.org\": a wildcard, not a host\n");
	expect("vm1", "pypi.org:99999", 2,
	    "bad host \"pypi.org:99999\": port 99999 out of range (1..65535)\n");
	expect("vm1", "a..b", 2, "bad host \"a..b\": empty label\n");
	expect("vm1", "10.0.0.0/8", 2, "bad host \"10.0.0.0/8\": a prefix, not a host\n");
}

static void
test_check_imported(void **state)
{
	struct pol_errs errs = { 0 };
	struct pol_config *saved = cfg;

	(void)state;
	cfg = pol_load_file(POL_FIXTURES "/ng.yaml", &errs);
	assert_non_null(cfg);
	expect("vm3", "x.npmjs.org:443", 0, "allow x.npmjs.org:443 for vm3: "
	    "policies.from-sandbox.import sandbox.network.allowedDomains[1] \"*.npmjs.org\" ("
	    POL_FIXTURES "/sandbox-settings.json:10)\n");
	expect("vm4", "crates.io:443", 0, "allow crates.io:443 for vm4: policies.bound.import "
	    "network.allowDomains[0] \"crates.io\" (" POL_FIXTURES "/bound.json:3)\n");
	pol_config_free(cfg);
	cfg = saved;
}

static void
test_summary(void **state)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	(void)state;
	pol_config_summary(cfg, f);
	fclose(f);
	assert_non_null(strstr(out, "ng.yaml: OK: 2 VMs, 2 policies, 7 patterns\n"));
	assert_non_null(strstr(out, "\npolicy dev: 5 allow, 2 deny (3 names, 2 wildcards, "
	    "2 addresses)\n"));
	assert_non_null(strstr(out, "\npolicy offline: 0 allow, 0 deny (0 names, 0 wildcards, "
	    "0 addresses): offline, DNS answers are refused\n"));
	assert_non_null(strstr(out, "\nvm vm1: mac 02:00:00:00:00:01 vlan 0 ipv4 10.77.0.11 "
	    "policy dev (enforce)\n"));
	assert_non_null(strstr(out, "\nvm vm2: mac 02:00:00:00:00:02 vlan 0 ipv4 10.77.0.12 "
	    "policy offline (audit)\n"));
	assert_non_null(strstr(out, "\nresolvers: 10.77.0.1\ntls_ports: 443 8443\n"));
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_check_imported),
		cmocka_unit_test(test_summary),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
