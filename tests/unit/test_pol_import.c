/*
 * policy/load imports: Claude Code settings (sandbox.network.allowedDomains /
 * deniedDomains) and sandbox bound files (network.allowDomains / denyDomains), relative
 * paths, and errors named in the import's own FILE:LINE:COL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pol_load_check.h"
#include "policy/load.h"

#ifndef POL_FIXTURES
#define POL_FIXTURES "tests/policy"
#endif

#define CFG_NAME	POL_FIXTURES "/t.yaml"
#define VM1	"vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 10.77.0.11\n" \
		"    policy: p\n"

static enum pol_verdict
decide(const struct pol_config *cfg, const char *name, uint16_t port,
    const struct pol_rule **r)
{
	return pol_match_name(cfg->set, cfg->vms[0].policy, name, strlen(name),
	    port != 0 ? POL_PROTO_TCP : POL_PROTO_ANY, port, r);
}

static void
test_claude_settings(void **state)
{
	struct pol_config *cfg = pol_check_load("policies:\n  p:\n"
	    "    import: sandbox-settings.json\n    allow: [pypi.org]\n" VM1);
	const struct pol_rule *r;

	(void)state;
	if (cfg == NULL)
		fail_msg("%s", pol_check_err(0));
	assert_int_equal(decide(cfg, "registry.npmjs.org", 443, &r), POL_ALLOW);
	assert_true(r->imported);
	assert_string_equal(r->file, POL_FIXTURES "/sandbox-settings.json");
	assert_string_equal(r->key, "sandbox.network.allowedDomains");
	assert_int_equal(r->index, 0);
	assert_int_equal(r->line, 9);
	assert_int_equal(r->col, 9);
	assert_int_equal(decide(cfg, "a.b.npmjs.org", 80, NULL), POL_ALLOW);
	assert_int_equal(decide(cfg, "npmjs.org", 80, NULL), POL_NO_MATCH);
	assert_int_equal(decide(cfg, "api.anthropic.com", 443, NULL), POL_ALLOW);
	assert_int_equal(decide(cfg, "api.anthropic.com", 80, NULL), POL_NO_MATCH);
	assert_int_equal(decide(cfg, "evil.npmjs.org", 443, &r), POL_DENY);
	assert_string_equal(r->key, "sandbox.network.deniedDomains");
	/* The policy's own list and the import combine. */
	assert_int_equal(decide(cfg, "pypi.org", 443, &r), POL_ALLOW);
	assert_false(r->imported);
	assert_string_equal(r->file, CFG_NAME);
	assert_string_equal(cfg->imports[0], POL_FIXTURES "/sandbox-settings.json");
	pol_config_free(cfg);
}

static void
test_bound_files(void **state)
{
	struct pol_config *cfg = pol_check_load("policies:\n  p:\n    import: bound.json\n"
	    "  q:\n    import: " POL_FIXTURES "/bound.yaml\n" VM1);
	const struct pol_rule *r;
	struct pol_policy_stats st;

	(void)state;
	if (cfg == NULL)
		fail_msg("%s", pol_check_err(0));
	assert_int_equal(decide(cfg, "crates.io", 80, NULL), POL_ALLOW);
	assert_int_equal(decide(cfg, "static.crates.io", 443, &r), POL_ALLOW);
	assert_string_equal(r->key, "network.allowDomains");
	assert_int_equal(r->index, 1);
	assert_int_equal(decide(cfg, "static.crates.io", 80, NULL), POL_NO_MATCH);
	/* Absolute path, YAML, no denyDomains. */
	st = pol_set_policy_stats(cfg->set, 1);
	assert_int_equal(st.allow, 2);
	assert_int_equal(st.deny, 0);
	assert_int_equal(st.wildcards, 1);
	assert_string_equal(cfg->imports[1], POL_FIXTURES "/bound.yaml");
	pol_config_free(cfg);
}

static void
test_import_errors(void **state)
{
	(void)state;
	pol_refused("policies:\n  p:\n    import: missing.json\n" VM1, CFG_NAME ":3:13: "
	    "policies.p.import: cannot read '" POL_FIXTURES "/missing.json': No such file or "
	    "directory");
	pol_refused("policies:\n  p:\n    import: .\n" VM1, CFG_NAME ":3:13: policies.p.import: "
	    "cannot read '" POL_FIXTURES "/.': Is a directory");
	pol_refused("policies:\n  p:\n    import: /dev/null\n" VM1, CFG_NAME ":3:13: "
	    "policies.p.import: cannot read '/dev/null': not a regular file");
	pol_refused("policies:\n  p:\n    import: \"\"\n" VM1, CFG_NAME ":3:13: "
	    "policies.p.import: empty file name");
	pol_refused("policies:\n  p:\n    import: [a.json]\n" VM1, CFG_NAME ":3:13: "
	    "policies.p.import: expected a scalar, got a list");
	pol_refused("policies:\n  p:\n    import: import-syntax.json\n" VM1, POL_FIXTURES
	    "/import-syntax.json:3:38: YAML syntax error: did not find expected ',' or ']' "
	    "while parsing a flow sequence");
	pol_refused("policies:\n  p:\n    import: import-type.json\n" VM1, POL_FIXTURES
	    "/import-type.json:3:21: network.allowDomains: expected a list, got a scalar");
	pol_refused("policies:\n  p:\n    import: import-none.json\n" VM1, POL_FIXTURES
	    "/import-none.json:1:1: no sandbox.network.allowedDomains (Claude Code settings) or "
	    "network.allowDomains (sandbox bound file) in this file");
	pol_refused("policies:\n  p:\n    import: import-pattern.json\n" VM1, POL_FIXTURES
	    "/import-pattern.json:6:9: sandbox.network.allowedDomains[1]: \"*\": '*' would "
	    "allow every host");
	/* Not a mapping at all: a JSON list, or a scalar file. */
	pol_refused("policies:\n  p:\n    import: full.yaml\n" VM1, POL_FIXTURES "/full.yaml:2:1: "
	    "no sandbox.network.allowedDomains (Claude Code settings) or network.allowDomains "
	    "(sandbox bound file) in this file");
	pol_refused("policies:\n  p:\n    import: import-list.json\n" VM1, POL_FIXTURES
	    "/import-list.json:1:1: expected a mapping (a Claude Code settings file or a sandbox "
	    "bound file), got a list");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claude_settings),
		cmocka_unit_test(test_bound_files),
		cmocka_unit_test(test_import_errors),
	};

	/* as if from tests/policy/t.yaml, so imports resolve next to the fixtures */
	pol_check_file = CFG_NAME;
	return cmocka_run_group_tests(tests, NULL, pol_check_teardown);
}
