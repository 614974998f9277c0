/*
 * policy/load: policies.NAME.ask and the approval: keys. An ask pattern lands in the ask
 * set at its policy's index, not in the policy itself (allow and deny are untouched), and
 * only host names and wildcards without a port are accepted.
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

#define VMS	"vms:\n" \
		"  - {name: vm1, mac: \"02:00:00:00:00:01\", ipv4: 10.77.0.11, policy: q}\n" \
		"  - {name: vm2, mac: \"02:00:00:00:00:02\", ipv4: 10.77.0.12, policy: p}\n"

static struct pol_errs errs;

static struct pol_config *
load(const char *text)
{
	pol_errs_free(&errs);
	return pol_load_buffer(text, strlen(text), "ng.yaml", &errs);
}

static enum pol_verdict
ask(const struct pol_config *cfg, const char *vm, const char *name)
{
	const struct pol_vm *v = pol_config_vm(cfg, vm);

	assert_non_null(v);
	return pol_match_name(cfg->ask, v->ask_policy, name, strlen(name), POL_PROTO_ANY, 0,
	    NULL);
}

static enum pol_verdict
policy(const struct pol_config *cfg, const char *vm, const char *name)
{
	const struct pol_vm *v = pol_config_vm(cfg, vm);

	return pol_match_name(cfg->set, v->policy, name, strlen(name), POL_PROTO_ANY, 0, NULL);
}

static void
test_ask_patterns_and_defaults(void **state)
{
	struct pol_config *cfg = load("policies:\n"
	    "  p: {allow: [pypi.org], ask: [\"*.ask.test\", evil.test], deny: [bad.ask.test]}\n"
	    "  q: {allow: [github.com]}\n" VMS);

	(void)state;
	if (cfg == NULL)
		fail_msg("%s:%u:%u: %s", errs.v[0].file, errs.v[0].line, errs.v[0].col,
		    errs.v[0].msg);
	/* vm1's policy is q, the second declared: the ask set keeps the indices */
	assert_int_equal(pol_config_vm(cfg, "vm1")->ask_policy, pol_config_vm(cfg, "vm1")->policy);
	assert_int_equal(ask(cfg, "vm2", "a.ask.test"), POL_ALLOW);
	assert_int_equal(ask(cfg, "vm2", "EVIL.test"), POL_ALLOW);
	assert_int_equal(ask(cfg, "vm2", "ask.test"), POL_NO_MATCH);	/* a wildcard's own */
	assert_int_equal(ask(cfg, "vm1", "a.ask.test"), POL_NO_MATCH);	/* q asks for nothing */
	/* ask patterns are not allow patterns: the policy itself says nothing of them */
	assert_int_equal(policy(cfg, "vm2", "a.ask.test"), POL_NO_MATCH);
	assert_int_equal(policy(cfg, "vm2", "bad.ask.test"), POL_DENY);
	assert_int_equal(policy(cfg, "vm2", "pypi.org"), POL_ALLOW);
	assert_int_equal(cfg->approval_timeout, 8);
	assert_int_equal(cfg->approval_max_per_vm, 8);
	assert_null(cfg->approval_webhook);
	pol_config_free(cfg);
}

static void
test_approval_keys(void **state)
{
	struct pol_config *cfg = load("policies:\n  p: {ask: [a.test]}\n  q: {}\n" VMS
	    "approval:\n  timeout: 20s\n  max_pending_per_vm: 3\n"
	    "  webhook: http://127.0.0.1:9/hook\n");

	(void)state;
	assert_non_null(cfg);
	assert_int_equal(cfg->approval_timeout, 20);
	assert_int_equal(cfg->approval_max_per_vm, 3);
	assert_string_equal(cfg->approval_webhook, "http://127.0.0.1:9/hook");
	pol_config_free(cfg);
}

/* check's line for host on vm2 (policy p), and its return. */
static int
explain(const struct pol_config *cfg, const char *host, char *line, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&buf, &n);
	int rc;

	assert_non_null(out);
	rc = pol_explain(cfg, "vm2", host, out, stderr);
	fclose(out);
	snprintf(line, len, "%s", buf);
	free(buf);
	return rc;
}

static void
test_check_says_ask(void **state)
{
	struct pol_config *cfg = load("policies:\n"
	    "  p: {allow: [pypi.org], ask: [\"*.ask.test\"], deny: [bad.ask.test]}\n"
	    "  q: {}\n" VMS "approval: {timeout: 5s}\n");
	char line[512];

	(void)state;
	assert_non_null(cfg);
	assert_int_equal(explain(cfg, "a.ask.test", line, sizeof(line)), 1);
	assert_string_equal(line, "ask a.ask.test for vm2: policies.p.ask[0] \"*.ask.test\" "
	    "(ng.yaml:2): its DNS query waits for namegatectl approve, at most 5s "
	    "(approval.timeout)\n");
	/* deny and allow decide before ask */
	assert_int_equal(explain(cfg, "bad.ask.test", line, sizeof(line)), 1);
	assert_true(strncmp(line, "block bad.ask.test for vm2: policies.p.deny[0]", 46) == 0);
	assert_int_equal(explain(cfg, "pypi.org", line, sizeof(line)), 0);
	pol_config_free(cfg);
}

static void
test_ask_errors(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "policies:\n  p: {ask: [\"pypi.org:443\"]}\n  q: {}\n" VMS,
		    "ng.yaml:2:13: policies.p.ask[0]: \"pypi.org:443\": ask takes host names and "
		    "wildcards without a port (what waits is a DNS question)" },
		{ "policies:\n  p: {ask: [203.0.113.0/24]}\n  q: {}\n" VMS,
		    "ng.yaml:2:13: policies.p.ask[0]: \"203.0.113.0/24\": ask takes host names and "
		    "wildcards without a port (what waits is a DNS question)" },
		{ "policies:\n  p: {ask: a.test}\n  q: {}\n" VMS, NULL },
		{ "policies:\n  p: {}\n  q: {}\n" VMS "approval:\n  timeout: 61s\n", NULL },
		{ "policies:\n  p: {}\n  q: {}\n" VMS "approval:\n  max_pending_per_vm: 0\n", NULL },
		{ "policies:\n  p: {}\n  q: {}\n" VMS "approval:\n  wait: 3s\n", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pol_config *cfg = load(cases[i].text);
		char got[512];

		if (cfg != NULL) {
			pol_config_free(cfg);
			fail_msg("accepted:\n%s", cases[i].text);
		}
		assert_true(errs.n > 0);
		snprintf(got, sizeof(got), "%s:%u:%u: %s", errs.v[0].file, errs.v[0].line,
		    errs.v[0].col, errs.v[0].msg);
		if (cases[i].want != NULL && strcmp(got, cases[i].want) != 0)
			fail_msg("got  %s\nwant %s", got, cases[i].want);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ask_patterns_and_defaults),
		cmocka_unit_test(test_approval_keys),
		cmocka_unit_test(test_check_says_ask),
		cmocka_unit_test(test_ask_errors),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	pol_errs_free(&errs);
	return rc;
}
