/*
 * policy/load: byte sizes (pol_size_parse, pol_size_str), policies.NAME.budgets with its
 * errors (FILE:LINE:COL), the budgets' set the dataplane matches with, and --check's
 * warning about broad hosts without a budget.
 */
#include <errno.h>
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

#define VM1	"vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 10.77.0.11\n" \
		"    policy: p\n"
#define HEAD	"policies:\n  p:\n" \
		"    allow: [example.com, \"*.github.com\", 198.51.100.0/24]\n    budgets:\n"

static void
test_size_good(void **state)
{
	static const struct {
		const char *in;
		uint64_t want;
	} good[] = {
		{ "0", 0 }, { "1500", 1500 }, { "1500B", 1500 }, { "500k", 500000 },
		{ "500K", 500000 }, { "2kB", 2000 }, { "2KB", 2000 }, { "3KiB", 3072 },
		{ "100MB", 100000000 }, { "7M", 7000000 }, { "1MiB", 1048576 },
		{ "1GiB", 1073741824 }, { "2GB", 2000000000 }, { "1G", 1000000000 },
		{ "4TB", 4000000000000 }, { "1TiB", 1099511627776 },
		{ "18446744073709551615", UINT64_MAX },
	};
	uint64_t got;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		got = 1;
		if (pol_size_parse(good[i].in, &got) != 0 || got != good[i].want)
			fail_msg("\"%s\": got %llu, want %llu", good[i].in,
			    (unsigned long long)got, (unsigned long long)good[i].want);
	}
}

static void
test_size_bad(void **state)
{
	static const char *const bad[] = {
		"", "MB", " 1MB", "1MB ", "1 MB", "-1", "+1", "1.5MB", "1,5MB", "0x10", "1mb",
		"1m", "1g", "1Mb", "1kb", "1KIB", "1Kib", "1MBB", "1BB", "1e6", "1PB", "1PiB",
		"10MiB/s",
	};
	static const char *const range[] = {
		"18446744073709551616", "99999999999999999999", "20000000TB", "16777216TiB",
	};
	uint64_t got = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (pol_size_parse(bad[i], &got) != -EINVAL)
			fail_msg("\"%s\" accepted or not -EINVAL", bad[i]);
	for (size_t i = 0; i < sizeof(range) / sizeof(range[0]); i++)
		if (pol_size_parse(range[i], &got) != -ERANGE)
			fail_msg("\"%s\" not -ERANGE", range[i]);
	assert_int_equal(got, 42);	/* untouched on failure */
}

/* pol_size_str spells a size so that pol_size_parse reads back the same bytes. */
static void
test_size_str(void **state)
{
	static const struct {
		uint64_t n;
		const char *want;
	} v[] = {
		{ 1, "1B" }, { 999, "999B" }, { 1000, "1kB" }, { 1024, "1KiB" },
		{ 100000000, "100MB" }, { 1048576, "1MiB" }, { 1073741824, "1GiB" },
		{ 1500000, "1500kB" }, { 3 * 1099511627776ULL, "3TiB" }, { 0, "0B" },
	};
	char buf[32];
	uint64_t back;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		pol_size_str(v[i].n, buf, sizeof(buf));
		if (strcmp(buf, v[i].want) != 0)
			fail_msg("%llu: \"%s\", want \"%s\"", (unsigned long long)v[i].n, buf,
			    v[i].want);
		assert_int_equal(pol_size_parse(buf, &back), 0);
		assert_true(back == v[i].n);
	}
	for (uint64_t n = 1; n < (1ULL << 40); n = n * 3 + 1) {	/* any size round-trips */
		pol_size_str(n, buf, sizeof(buf));
		assert_int_equal(pol_size_parse(buf, &back), 0);
		assert_true(back == n);
	}
}

/* The budget a name or address of policy p is counted against, or -1. */
static int
budget_of(const struct pol_config *cfg, const char *host, bool addr)
{
	const struct pol_rule *r = NULL;
	struct pol_pattern pat;
	char why[POL_WHY_MAX];
	bool has_port;
	enum pol_verdict v;

	assert_int_equal(pol_host_parse(host, &pat, &has_port, why, sizeof(why)), 0);
	if (addr)
		v = pol_match_addr(cfg->budget_set, 0, pat.addr, pat.kind == POL_ADDR4 ? 4 : 16,
		    POL_PROTO_TCP, 443, &r);
	else
		v = pol_match_name(cfg->budget_set, 0, pat.name, strlen(pat.name), POL_PROTO_TCP,
		    443, &r);
	return v == POL_ALLOW ? (int)r->index : -1;
}

static void
test_budgets_good(void **state)
{
	const char *text = HEAD
	    "      - {host: \"*.github.com\", upload: 100MB, per: 1h}\n"
	    "      - host: api.github.com\n        upload: 1GiB\n        per: 90s\n"
	    "      - {host: 198.51.100.0/24, upload: 500k, per: 1d}\n"
	    "  q:\n    allow: [example.org]\n"
	    "    budgets: [{host: example.org, upload: 1, per: 3}]\n" VM1;
	struct pol_config *cfg = pol_check_load(text);
	const struct pol_budget *b;

	(void)state;
	if (cfg == NULL)
		fail_msg("%s", pol_check_errs.n ? pol_check_errs.v[0].msg : "?");
	assert_int_equal(cfg->nbudgets, 4);
	assert_int_equal(pol_config_budgets(cfg, 0), 3);
	assert_int_equal(pol_config_budgets(cfg, 1), 1);
	b = pol_config_budget(cfg, 0, 1);
	assert_non_null(b);
	assert_string_equal(b->host, "api.github.com");
	assert_true(b->upload == 1073741824ULL);
	assert_int_equal(b->per, 90);
	assert_int_equal(b->line, 6);
	b = pol_config_budget(cfg, 0, 2);
	assert_true(b->upload == 500000 && b->per == 86400);
	b = pol_config_budget(cfg, 1, 0);
	assert_true(b->upload == 1 && b->per == 3 && b->index == 0);
	assert_null(pol_config_budget(cfg, 1, 1));
	/* the most specific pattern decides, as for the policy's own rules */
	assert_int_equal(budget_of(cfg, "api.github.com", false), 1);
	assert_int_equal(budget_of(cfg, "uploads.github.com", false), 0);
	assert_int_equal(budget_of(cfg, "github.com", false), -1);
	assert_int_equal(budget_of(cfg, "example.com", false), -1);
	assert_int_equal(budget_of(cfg, "198.51.100.7", true), 2);
	assert_int_equal(budget_of(cfg, "198.51.101.7", true), -1);
	pol_config_free(cfg);
}

/* budgets entries (indented as list items under "budgets:") must fail with want first. */
static void
expect_err(const char *entries, const char *want)
{
	char text[2048];

	snprintf(text, sizeof(text), HEAD "%s" VM1, entries);
	pol_refused(text, want);
}

static void
test_budgets_bad(void **state)
{
	(void)state;
	expect_err("      - {host: example.com, upload: 1.5MB, per: 1h}\n",
	    "ng.yaml:5:37: policies.p.budgets[0].upload: expected a size (a whole number and B, "
	    "kB, MB, GB, TB, KiB, MiB, GiB or TiB: 500k, 100MB, 1GiB), got \"1.5MB\"");
	expect_err("      - {host: example.com, upload: 10mb, per: 1h}\n",
	    "ng.yaml:5:37: policies.p.budgets[0].upload: expected a size (a whole number and B, "
	    "kB, MB, GB, TB, KiB, MiB, GiB or TiB: 500k, 100MB, 1GiB), got \"10mb\"");
	expect_err("      - {host: example.com, upload: 0, per: 1h}\n",
	    "ng.yaml:5:37: policies.p.budgets[0].upload: 0 is out of range (1B..1TiB)");
	expect_err("      - {host: example.com, upload: 2TiB, per: 1h}\n",
	    "ng.yaml:5:37: policies.p.budgets[0].upload: 2TiB is out of range (1B..1TiB)");
	expect_err("      - {host: example.com, upload: 1MB, per: 0}\n",
	    "ng.yaml:5:47: policies.p.budgets[0].per: 0 is out of range (1s..7d)");
	expect_err("      - {host: example.com, upload: 1MB, per: 1 hour}\n",
	    "ng.yaml:5:47: policies.p.budgets[0].per: expected a duration (90s, 10m, 1h30m, 1d), "
	    "got \"1 hour\"");
	expect_err("      - {host: example.com, upload: 1MB}\n",
	    "ng.yaml:5:9: policies.p.budgets[0]: missing key 'per'");
	expect_err("      - {upload: 1MB, per: 1h}\n",
	    "ng.yaml:5:9: policies.p.budgets[0]: missing key 'host'");
	expect_err("      - {host: example.com, upload: 1MB, per: 1h, download: 1GB}\n",
	    "ng.yaml:5:51: unknown key 'download' in policies.p.budgets[0] (expected host, "
	    "upload, per)");
	expect_err("      - example.com\n",
	    "ng.yaml:5:9: policies.p.budgets[0]: expected a mapping (host, upload, per), got a "
	    "scalar");
	expect_err("      - {host: \"example.com:443\", upload: 1MB, per: 1h}\n",
	    "ng.yaml:5:9: policies.p.budgets[0].host: \"example.com:443\": a budget's host takes "
	    "no port (it counts every port)");
	expect_err("      - {host: \"exa mple.com\", upload: 1MB, per: 1h}\n",
	    "ng.yaml:5:9: policies.p.budgets[0].host: \"exa mple.com\": contains a space or "
	    "control character");
	expect_err("      - {host: \"*.github.com\", upload: 1MB, per: 1h}\n"
	    "      - {host: \"*.GitHub.com.\", upload: 2MB, per: 1h}\n",
	    "ng.yaml:6:9: policies.p.budgets[1].host: \"*.GitHub.com.\": a second budget for the "
	    "same host (the first at line 5)");
	expect_err("      - {host: a1.com, upload: 1, per: 1}\n      - {host: a2.com, upload: 1, "
	    "per: 1}\n      - {host: a3.com, upload: 1, per: 1}\n      - {host: a4.com, upload: "
	    "1, per: 1}\n      - {host: a5.com, upload: 1, per: 1}\n      - {host: a6.com, "
	    "upload: 1, per: 1}\n      - {host: a7.com, upload: 1, per: 1}\n      - {host: "
	    "a8.com, upload: 1, per: 1}\n      - {host: a9.com, upload: 1, per: 1}\n",
	    "ng.yaml:5:7: policies.p.budgets: 9 budgets, at most 8 per policy");
}

/* What fn printed for configuration text, which must load; the caller frees it. */
static char *
printed(const char *text, void (*fn)(const struct pol_config *, FILE *))
{
	struct pol_config *cfg = pol_check_load(text);
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	assert_non_null(cfg);
	assert_non_null(out = open_memstream(&buf, &len));
	fn(cfg, out);
	fclose(out);
	pol_config_free(cfg);
	return buf;
}

static void
explain_three(const struct pol_config *cfg, FILE *out)
{
	assert_int_equal(pol_explain(cfg, "vm1", "api.github.com:443", out, stderr), 0);
	assert_int_equal(pol_explain(cfg, "vm1", "198.51.100.9:22", out, stderr), 0);
	assert_int_equal(pol_explain(cfg, "vm1", "example.com:443", out, stderr), 0);
}

/* check names the budget that counts a host it allows, and none for one it does not. */
static void
test_explain(void **state)
{
	char *buf = printed(HEAD "      - {host: \"*.github.com\", upload: 100MB, per: 1h}\n"
	    "      - {host: 198.51.100.0/24, upload: 1GiB, per: 90s}\n" VM1, explain_three);

	(void)state;
	if (strstr(buf, "allow api.github.com:443 for vm1: policies.p.allow[1] \"*.github.com\" "
	    "(ng.yaml:3); counted in policies.p.budgets[0] \"*.github.com\": 100MB per 1h per VM "
	    "(line 5)\n") == NULL || strstr(buf, "; counted in policies.p.budgets[1] "
	    "\"198.51.100.0/24\": 1GiB per 1m30s per VM (line 6)\n") == NULL ||
	    strstr(buf, "example.com:443 for vm1: policies.p.allow[0] \"example.com\" "
	    "(ng.yaml:3)\n") == NULL)
		fail_msg("%s", buf);
	free(buf);
}

static void
warn_budgets(const struct pol_config *cfg, FILE *out)
{
	assert_int_equal(pol_warn_budgets(cfg, out), 2);
}

/* --check: wildcards and ranges without a budget are named, budgeted ones are not. */
static void
test_warn(void **state)
{
	char *buf = printed("policies:\n  p:\n    allow: [example.com, \"*.github.com\", "
	    "\"*.example.net\", 198.51.100.0/24, 192.0.2.1]\n"
	    "    budgets: [{host: \"*.github.com\", upload: 1MB, per: 1h}]\n" VM1, warn_budgets);

	(void)state;
	if (strstr(buf, "ng.yaml:3:42: warning: policies.p.allow[2] \"*.example.net\" allows "
	    "many hosts without an egress budget: what they receive is unbounded (no entry of "
	    "policies.p.budgets counts it)\n") == NULL ||
	    strstr(buf, "policies.p.allow[3] \"198.51.100.0/24\" allows many hosts") == NULL ||
	    strstr(buf, "github") != NULL || strstr(buf, "192.0.2.1") != NULL)
		fail_msg("%s", buf);
	free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_good),
		cmocka_unit_test(test_size_bad),
		cmocka_unit_test(test_size_str),
		cmocka_unit_test(test_budgets_good),
		cmocka_unit_test(test_budgets_bad),
		cmocka_unit_test(test_warn),
		cmocka_unit_test(test_explain),
	};

	return cmocka_run_group_tests(tests, NULL, pol_check_teardown);
}
