/*
 * policy/load: dns.max_names_per_suffix, its durations and its errors (FILE:LINE:COL),
 * what --check and check say about it, and the rule facts the dataplane budgets by.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pol_load_check.h"
#include "policy/load.h"

#define POLS	"policies:\n  p:\n    allow: [example.com, \"*.githubusercontent.com\"]\n"
#define VM1	"vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 10.77.0.11\n" \
		"    policy: p\n"

/* dns: block text (indented under "dns:") loads, with the budget count per seconds. */
static void
expect_budget(const char *dns, uint32_t count, uint32_t per)
{
	const struct pol_errs *e = &pol_check_errs;
	char text[1024];
	struct pol_config *cfg;

	snprintf(text, sizeof(text), "dns:\n%s" POLS VM1, dns);
	if ((cfg = pol_check_load(text)) == NULL)
		fail_msg("refused:\n%s\n%s:%u:%u: %s", text, e->n ? e->v[0].file : "",
		    e->n ? e->v[0].line : 0, e->n ? e->v[0].col : 0, e->n ? e->v[0].msg : "(none)");
	if (cfg->dns_names_count != count || cfg->dns_names_per != per)
		fail_msg("%s: got %u per %u s, want %u per %u s", dns, cfg->dns_names_count,
		    cfg->dns_names_per, count, per);
	pol_config_free(cfg);
}

/* text must fail, with first error exactly want. */
static void
expect_err(const char *dns, const char *want)
{
	char text[2048];

	snprintf(text, sizeof(text), "dns:\n%s" POLS VM1, dns);
	pol_refused(text, want);
}

static void
test_good(void **state)
{
	struct pol_config *cfg;

	(void)state;
	/* on by default: 1000 new names per suffix per hour */
	cfg = pol_check_load(POLS VM1);
	assert_non_null(cfg);
	assert_int_equal(cfg->dns_names_count, 1000);
	assert_int_equal(cfg->dns_names_per, 3600);
	pol_config_free(cfg);
	expect_budget("  max_names_per_suffix: {count: 50, per: 10m}\n", 50, 600);
	expect_budget("  max_names_per_suffix:\n    count: 7\n    per: 90\n", 7, 90);
	expect_budget("  max_names_per_suffix: {per: 1h30m}\n", 1000, 5400);
	expect_budget("  max_names_per_suffix: {count: 20}\n", 20, 3600);
	expect_budget("  max_names_per_suffix: {count: 1, per: 1s}\n", 1, 1);
	expect_budget("  max_names_per_suffix: {count: 1000000, per: 7d}\n", 1000000, 604800);
	expect_budget("  max_names_per_suffix: {count: 5, per: 1d2h3m4s}\n", 5, 93784);
	/* the off form: count 0 */
	expect_budget("  max_names_per_suffix: {count: 0}\n", 0, 3600);
}

static void
test_bad(void **state)
{
	(void)state;
	expect_err("  max_names_per_suffix: {count: -1}\n", "ng.yaml:2:33: "
	    "dns.max_names_per_suffix.count: expected an integer, got \"-1\"");
	expect_err("  max_names_per_suffix: {count: 1000001}\n", "ng.yaml:2:33: "
	    "dns.max_names_per_suffix.count: 1000001 is out of range (0..1000000)");
	expect_err("  max_names_per_suffix: {count: 5, per: 0}\n", "ng.yaml:2:41: "
	    "dns.max_names_per_suffix.per: 0 is out of range (1s..7d)");
	expect_err("  max_names_per_suffix: {count: 5, per: 8d}\n", "ng.yaml:2:41: "
	    "dns.max_names_per_suffix.per: 8d is out of range (1s..7d)");
	expect_err("  max_names_per_suffix: {count: 5, per: 1w}\n", "ng.yaml:2:41: "
	    "dns.max_names_per_suffix.per: expected a duration (90s, 10m, 1h30m, 1d), got \"1w\"");
	expect_err("  max_names_per_suffix: {count: 5, per: 30m1h}\n", "ng.yaml:2:41: "
	    "dns.max_names_per_suffix.per: expected a duration (90s, 10m, 1h30m, 1d), got "
	    "\"30m1h\"");
	expect_err("  max_names_per_suffix: {count: 5, per: h}\n", "ng.yaml:2:41: "
	    "dns.max_names_per_suffix.per: expected a duration (90s, 10m, 1h30m, 1d), got \"h\"");
	expect_err("  max_names_per_suffix: {count: 5, per: 99999999999s}\n", "ng.yaml:2:41: "
	    "dns.max_names_per_suffix.per: 99999999999s is out of range (1s..7d)");
	expect_err("  max_names_per_suffix: {count: 5, every: 1h}\n", "ng.yaml:2:36: "
	    "unknown key 'every' in dns.max_names_per_suffix (expected count, per)");
	expect_err("  max_names_per_suffix: off\n", "ng.yaml:2:25: "
	    "dns.max_names_per_suffix: expected a mapping, got a scalar");
	expect_err("  max_names_per_suffix: {count: 5, count: 6}\n", "ng.yaml:2:36: "
	    "duplicate key 'dns.max_names_per_suffix.count'");
}

/* What an operator reads: --check's summary, and check for a name under a wildcard. */
static void
test_explain(void **state)
{
	struct pol_config *cfg;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	cfg = pol_check_load("dns:\n  max_names_per_suffix: {count: 40, per: 2h}\n" POLS VM1);
	assert_non_null(cfg);
	f = open_memstream(&out, &len);
	pol_config_summary(cfg, f);
	assert_int_equal(pol_explain(cfg, "vm1", "Raw.GitHubUserContent.com", f, stderr), 0);
	assert_int_equal(pol_explain(cfg, "vm1", "raw.githubusercontent.com:443", f, stderr), 0);
	assert_int_equal(pol_explain(cfg, "vm1", "example.com", f, stderr), 0);
	fclose(f);
	assert_non_null(strstr(out, ", new names per wildcard suffix 40 per 2h, "));
	assert_non_null(strstr(out, "\nallow raw.githubusercontent.com for vm1: "
	    "policies.p.allow[1] \"*.githubusercontent.com\" (ng.yaml:5); at most 40 new names "
	    "under githubusercontent.com per 2h (dns.max_names_per_suffix)\n"));
	/* a connection's check is about the connection; an exact name has no budget */
	assert_non_null(strstr(out, "\nallow raw.githubusercontent.com:443 for vm1: "
	    "policies.p.allow[1] \"*.githubusercontent.com\" (ng.yaml:5)\n"));
	assert_non_null(strstr(out, "\nallow example.com for vm1: policies.p.allow[0] "
	    "\"example.com\" (ng.yaml:5)\n"));
	free(out);
	pol_config_free(cfg);

	cfg = pol_check_load("dns:\n  max_names_per_suffix: {count: 0}\n" POLS VM1);
	assert_non_null(cfg);
	out = NULL;
	f = open_memstream(&out, &len);
	pol_config_summary(cfg, f);
	assert_int_equal(pol_explain(cfg, "vm1", "raw.githubusercontent.com", f, stderr), 0);
	fclose(f);
	assert_non_null(strstr(out, ", new names per wildcard suffix off, "));
	assert_non_null(strstr(out, "; no budget of new names under the wildcard "
	    "(dns.max_names_per_suffix count 0)\n"));
	free(out);
	pol_config_free(cfg);
}

/* The deciding rule tells the dataplane whether to budget, and which suffix. */
static void
test_rule_suffix(void **state)
{
	const struct pol_rule *r = NULL;
	struct pol_config *cfg;

	(void)state;
	cfg = pol_check_load("policies:\n  p:\n    allow: [\"*.GitHubUserContent.com.\", "
	    "\"*.a.example.com\", x.a.example.com]\n" VM1);
	assert_non_null(cfg);
	assert_int_equal(pol_match_name(cfg->set, 0, "raw.githubusercontent.com", 25,
	    POL_PROTO_ANY, 0, &r), POL_ALLOW);
	assert_int_equal(r->kind, POL_NAME_WILD);
	assert_int_equal(r->name_len, strlen("githubusercontent.com"));
	/* the most specific wildcard decides, and an exact name beats them */
	assert_int_equal(pol_match_name(cfg->set, 0, "y.a.example.com", 15, POL_PROTO_ANY, 0,
	    &r), POL_ALLOW);
	assert_int_equal(r->kind, POL_NAME_WILD);
	assert_int_equal(r->name_len, strlen("a.example.com"));
	assert_int_equal(pol_match_name(cfg->set, 0, "x.a.example.com", 15, POL_PROTO_ANY, 0,
	    &r), POL_ALLOW);
	assert_int_equal(r->kind, POL_NAME_EXACT);
	pol_config_free(cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_rule_suffix),
	};

	return cmocka_run_group_tests(tests, NULL, pol_check_teardown);
}
