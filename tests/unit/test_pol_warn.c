/*
 * policy/load broad-host warnings: what --check flags as a way out to anyone, and what
 * it leaves alone.
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

#define VM1	"vms:\n  - name: vm1\n    mac: 02:00:00:00:00:01\n    ipv4: 10.77.0.11\n" \
		"    policy: p\n"

struct seen {
	char text[8192];
	size_t n;
};

static void
collect(const struct pol_rule *r, const char *host, const char *why, void *arg)
{
	struct seen *s = arg;
	size_t o = strlen(s->text);

	snprintf(s->text + o, sizeof(s->text) - o, "%s:%u %s -> %s: %s\n", r->file, r->line,
	    r->pattern, host, why);
	s->n++;
}

/* Warnings for a policy p whose allow list is allow (a YAML flow list body). */
static size_t
scan(const char *allow, const char *deny, struct seen *s)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;
	char text[2048];
	size_t n;

	snprintf(text, sizeof(text), "policies:\n  p:\n    allow: [%s]\n    deny: [%s]\n" VM1,
	    allow, deny);
	cfg = pol_load_buffer(text, strlen(text), "w.yaml", &errs);
	if (cfg == NULL) {
		pol_errs_print(stderr, &errs);
		fail();
	}
	memset(s, 0, sizeof(*s));
	n = pol_warn_scan(cfg, collect, s);
	assert_int_equal(n, s->n);
	pol_config_free(cfg);
	pol_errs_free(&errs);
	return n;
}

static void
test_upload_hosts(void **state)
{
	struct seen s;

	(void)state;
	assert_int_equal(scan("github.com", "", &s), 1);
	assert_non_null(strstr(s.text, "w.yaml:3 github.com -> github.com: anyone can open an "
	    "account there and receive uploads"));
	/* A port does not make it safe: git push over SSH. */
	assert_int_equal(scan("\"github.com:22\"", "", &s), 1);
	assert_int_equal(scan("\"*.githubusercontent.com\"", "", &s), 1);
	assert_non_null(strstr(s.text, "*.githubusercontent.com -> gist.githubusercontent.com: "
	    "serves anyone's gists"));
	assert_int_equal(scan("gist.githubusercontent.com", "", &s), 1);
	assert_int_equal(scan("pastebin.com, transfer.sh, webhook.site", "", &s), 3);
	assert_non_null(strstr(s.text, "transfer.sh -> transfer.sh: anonymous paste/file drop"));
	assert_int_equal(scan("\"*.ngrok-free.app\"", "", &s), 1);
}

static void
test_storage(void **state)
{
	struct seen s;

	(void)state;
	assert_int_equal(scan("\"*.s3.amazonaws.com\"", "", &s), 1);
	assert_non_null(strstr(s.text, "*.s3.amazonaws.com -> *.s3.amazonaws.com: cloud "
	    "storage"));
	assert_int_equal(scan("\"*.blob.core.windows.net\", storage.googleapis.com", "", &s), 2);
	/* One named bucket is the narrow form operators should use. */
	assert_int_equal(scan("mybucket.s3.amazonaws.com, acct.blob.core.windows.net", "", &s),
	    0);
	/* A wider wildcard covers every risky name below it. */
	assert_int_equal(scan("\"*.amazonaws.com\"", "", &s), 3);
}

static void
test_doh(void **state)
{
	struct seen s;

	(void)state;
	assert_int_equal(scan("dns.google, cloudflare-dns.com, dns.quad9.net", "", &s), 3);
	assert_non_null(strstr(s.text, "dns.google -> dns.google: public DNS-over-HTTPS "
	    "resolver"));
	assert_int_equal(scan("\"1.1.1.1:443\", \"8.8.8.0/24\", \"[2606:4700:4700::1111]:443\"",
	    "", &s), 3);
}

static void
test_quiet(void **state)
{
	struct seen s;

	(void)state;
	assert_int_equal(scan("pypi.org, files.pythonhosted.org, \"*.npmjs.org\", crates.io, "
	    "\"198.51.100.0/24:443\"", "", &s), 0);
	assert_int_equal(scan("", "", &s), 0);
	/* Denied anyway: nothing to warn about. */
	assert_int_equal(scan("\"*.githubusercontent.com\"", "gist.githubusercontent.com", &s),
	    0);
	/* Lookalikes on whole labels are other hosts. */
	assert_int_equal(scan("notgithub.com, github.com.example.net", "", &s), 0);
}

/* pol_warn_print() of text, loaded as ng.yaml: n warnings, written exactly as want. */
static void
expect_printed(const char *text, size_t n, const char *want)
{
	struct pol_errs errs = { 0 };
	struct pol_config *cfg;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	cfg = pol_load_buffer(text, strlen(text), "ng.yaml", &errs);
	assert_non_null(cfg);
	assert_int_equal(pol_warn_print(cfg, f), n);
	fclose(f);
	assert_string_equal(out, want);
	free(out);
	pol_config_free(cfg);
}

static void
test_print(void **state)
{
	(void)state;
	expect_printed("policies:\n  p:\n    allow:\n      - pypi.org\n      - github.com\n" VM1,
	    1, "ng.yaml:5:9: warning: policies.p.allow[1] \"github.com\" allows github.com: "
	    "anyone can open an account there and receive uploads: data can leave to an "
	    "attacker's account (git push, gists, issues)\n");
}

static void
test_shared_vlan(void **state)
{
	(void)state;
	/* a, c, d on VLAN 0: warned of once; b alone on 7 */
	expect_printed("policies:\n  p:\n    allow: [pypi.org]\nvms:\n"
	    "  - {name: a, mac: \"02:00:00:00:00:01\", ipv4: 10.0.0.1, policy: p}\n"
	    "  - {name: b, mac: \"02:00:00:00:00:02\", ipv4: 10.0.0.2, policy: p, vlan: 7}\n"
	    "  - {name: c, mac: \"02:00:00:00:00:03\", ipv4: 10.0.0.3, policy: p}\n"
	    "  - {name: d, mac: \"02:00:00:00:00:04\", ipv4: 10.0.0.4, policy: p}\n",
	    1, "ng.yaml:7:5: warning: vms a and c share VLAN 0: the segment must keep one from "
	    "sending as the other (one VLAN per VM, or the hypervisor's anti-spoofing, such as "
	    "libvirt's clean-traffic filter)\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upload_hosts),
		cmocka_unit_test(test_storage),
		cmocka_unit_test(test_doh),
		cmocka_unit_test(test_quiet),
		cmocka_unit_test(test_print),
		cmocka_unit_test(test_shared_vlan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
