/*
 * policy/match: the port summary a binding carries (it must decide every port as the
 * name's match does) and a policy's copy under another name, built directly through
 * struct pol_builder (no YAML).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pol_match_fixture.h"
/* Two port summaries say the same. */
static void
ports_equal(const struct pol_ports *a, const struct pol_ports *b)
{
	assert_int_equal(a->any, b->any);
	assert_int_equal(a->deny_any, b->deny_any);
	assert_int_equal(a->allow_more, b->allow_more);
	assert_int_equal(a->deny_more, b->deny_more);
	assert_int_equal(a->nallow, b->nallow);
	assert_int_equal(a->ndeny, b->ndeny);
	assert_memory_equal(a->allow, b->allow, a->nallow * sizeof(a->allow[0]));
	assert_memory_equal(a->deny, b->deny, a->ndeny * sizeof(a->deny[0]));
}

/* pol_match_name_and_ports() is pol_match_name() and pol_match_name_ports(), name by name. */
static void
both_agree(const struct pol_set *s, uint32_t pol, const char *name)
{
	const struct pol_rule *r1, *r2;
	struct pol_ports p1, p2;
	enum pol_verdict v;

	v = pol_match_name(s, pol, name, strlen(name), POL_PROTO_ANY, 0, &r1);
	(void)pol_match_name_ports(s, pol, name, strlen(name), &p1);
	assert_int_equal(pol_match_name_and_ports(s, pol, name, strlen(name), POL_PROTO_ANY, 0,
	    &r2, &p2), v);
	assert_ptr_equal(r1, r2);
	ports_equal(&p1, &p2);
}

/*
 * The port summary the fast path stores with a binding must decide every TCP/UDP port
 * exactly as pol_match_name() does, for names hit by exact, wildcard, port and deny rules.
 */
static void
test_ports_summary_agrees(void **state)
{
	static const char *const names[] = {
		"example.com", "a.example.com", "b.a.example.com", "git.example.com",
		"ssh.git.example.com", "other.net", "x.other.net", "deny.example.com",
	};
	static const uint16_t ports[] = { 1, 21, 22, 80, 443, 444, 8080, 8443, 9000, 65535 };
	struct pol_builder *b = pol_builder_new();
	struct pol_ports sum;
	struct pol_set *s;
	int pol;

	(void)state;
	assert_non_null(b);
	assert_true((pol = pol_builder_policy(b, "t")) >= 0);
	add_name(b, (uint32_t)pol, POL_NAME_EXACT, "example.com", 0, POL_LIST_ALLOW);
	add_name(b, (uint32_t)pol, POL_NAME_WILD, "example.com", 443, POL_LIST_ALLOW);
	add_name(b, (uint32_t)pol, POL_NAME_WILD, "example.com", 8443, POL_LIST_ALLOW);
	add_name(b, (uint32_t)pol, POL_NAME_EXACT, "git.example.com", 22, POL_LIST_ALLOW);
	add_name(b, (uint32_t)pol, POL_NAME_WILD, "git.example.com", 0, POL_LIST_ALLOW);
	add_name(b, (uint32_t)pol, POL_NAME_WILD, "git.example.com", 80, POL_LIST_DENY);
	add_name(b, (uint32_t)pol, POL_NAME_WILD, "other.net", 0, POL_LIST_ALLOW);
	add_name(b, (uint32_t)pol, POL_NAME_EXACT, "x.other.net", 9000, POL_LIST_DENY);
	add_name(b, (uint32_t)pol, POL_NAME_EXACT, "deny.example.com", 0, POL_LIST_DENY);
	assert_non_null(s = pol_builder_build(b));
	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		assert_true(pol_match_name_ports(s, (uint32_t)pol, names[n], strlen(names[n]),
		    &sum));
		both_agree(s, (uint32_t)pol, names[n]);
		for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
			bool want = name_v(s, (uint32_t)pol, names[n], POL_PROTO_TCP, ports[i]) ==
			    POL_ALLOW;

			if (pol_ports_allow(&sum, ports[i]) != want)
				fail_msg("%s:%u: summary says %d", names[n], ports[i], !want);
		}
	}
	assert_false(pol_match_name_ports(s, (uint32_t)pol, "bad..name", 9, &sum));
	assert_false(pol_ports_allow(&sum, 443));
	both_agree(s, (uint32_t)pol, "bad..name");
	both_agree(s, (uint32_t)pol, "x.bad..a.example.com");
	both_agree(s, 99, "example.com");
	assert_false(pol_match_name_ports(s, 99, "example.com", 11, &sum));
	assert_false(pol_ports_allow(&sum, 443));
	pol_set_free(s);
	pol_builder_free(b);
}

/* Deny ports that overflow the summary block every port: fail closed. */
static void
test_ports_summary_overflow(void **state)
{
	struct pol_builder *b = pol_builder_new();
	struct pol_ports sum;
	struct pol_set *s;
	int pol;

	(void)state;
	assert_true((pol = pol_builder_policy(b, "t")) >= 0);
	add_name(b, (uint32_t)pol, POL_NAME_EXACT, "example.com", 0, POL_LIST_ALLOW);
	for (uint16_t p = 1; p <= POL_PORTS_MAX + 1; p++)
		add_name(b, (uint32_t)pol, POL_NAME_EXACT, "example.com", p, POL_LIST_DENY);
	assert_non_null(s = pol_builder_build(b));
	assert_true(pol_match_name_ports(s, (uint32_t)pol, "example.com", 11, &sum));
	assert_true(sum.deny_more);
	assert_int_equal(name_v(s, (uint32_t)pol, "example.com", POL_PROTO_TCP, 443), POL_ALLOW);
	assert_false(pol_ports_allow(&sum, 443));
	pol_set_free(s);
	pol_builder_free(b);
}

/*
 * pol_builder_copy_policy: a policy copied out of a built set decides every probe as the
 * original does, with the same rule, and what is added to the copy stays in the copy.
 */
static void
test_copy_policy(void **state)
{
	static const struct {
		const char *host;
		uint8_t proto;
		uint16_t port;
	} probes[] = {
		{ "pypi.org", POL_PROTO_TCP, 443 }, { "upload.pypi.org", POL_PROTO_TCP, 443 },
		{ "a.b.githubusercontent.com", POL_PROTO_UDP, 53 }, { "github.com", POL_PROTO_TCP, 22 },
		{ "github.com", POL_PROTO_TCP, 443 }, { "github.com", POL_PROTO_ANY, 0 },
		{ "githubusercontent.com", POL_PROTO_TCP, 443 }, { "198.51.100.7", POL_PROTO_TCP, 443 },
		{ "198.51.100.7", POL_PROTO_TCP, 80 }, { "198.51.100.200", POL_PROTO_TCP, 443 },
		{ "2001:db8::1", POL_PROTO_TCP, 443 }, { "2001:db8:bad::1", POL_PROTO_TCP, 443 },
		{ "evil.test", POL_PROTO_TCP, 443 }, { "example.com", POL_PROTO_TCP, 443 },
	};
	struct pol_builder *b = pol_builder_new(), *c = pol_builder_new();
	struct pol_set *s, *t;

	(void)state;
	add_line = 0;
	assert_int_equal(pol_builder_policy(b, "python"), 0);
	assert_int_equal(pol_builder_policy(b, "other"), 1);
	add_name(b, 0, POL_NAME_EXACT, "pypi.org", 0, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_WILD, "githubusercontent.com", 0, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "github.com", 22, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "github.com", 22, POL_LIST_ALLOW);	/* a repeat */
	add_name(b, 0, POL_NAME_EXACT, "upload.pypi.org", 0, POL_LIST_DENY);
	add_addr(b, 0, "198.51.100.0", 24, 443, POL_LIST_ALLOW);
	add_addr(b, 0, "198.51.100.200", 32, 0, POL_LIST_DENY);
	add_addr(b, 0, "2001:db8::", 32, 0, POL_LIST_ALLOW);
	add_addr(b, 0, "2001:db8:bad::", 48, 0, POL_LIST_DENY);
	add_name(b, 1, POL_NAME_EXACT, "example.com", 0, POL_LIST_ALLOW);
	assert_non_null(s = pol_builder_build(b));
	pol_builder_free(b);
	/* the copy: both policies, then python again with one more pattern */
	assert_int_equal(pol_builder_policy(c, "python"), 0);
	assert_int_equal(pol_builder_policy(c, "other"), 1);
	assert_int_equal(pol_builder_policy(c, "python+"), 2);
	for (uint32_t p = 0; p < 2; p++)
		assert_int_equal(pol_builder_copy_policy(c, p, s, p), 0);
	assert_int_equal(pol_builder_copy_policy(c, 2, s, 0), 0);
	assert_int_equal(pol_builder_copy_policy(c, 2, s, 7), -EINVAL);
	add_name(c, 2, POL_NAME_EXACT, "evil.test", 0, POL_LIST_ALLOW);
	add_name(c, 2, POL_NAME_EXACT, "upload.pypi.org", 0, POL_LIST_ALLOW);	/* deny wins */
	assert_non_null(t = pol_builder_build(c));
	pol_builder_free(c);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		for (uint32_t p = 0; p < 3; p++) {
			const struct pol_rule *r1 = NULL, *r2 = NULL;
			uint8_t a[16];
			enum pol_verdict v1, v2;
			bool addr = inet_pton(AF_INET, probes[i].host, a) == 1 ||
			    inet_pton(AF_INET6, probes[i].host, a) == 1;

			if (addr) {
				v1 = addr_v(s, p == 2 ? 0 : p, probes[i].host, probes[i].proto,
				    probes[i].port, &r1);
				v2 = addr_v(t, p, probes[i].host, probes[i].proto, probes[i].port,
				    &r2);
			} else {
				v1 = pol_match_name(s, p == 2 ? 0 : p, probes[i].host,
				    strlen(probes[i].host), probes[i].proto, probes[i].port, &r1);
				v2 = pol_match_name(t, p, probes[i].host, strlen(probes[i].host),
				    probes[i].proto, probes[i].port, &r2);
			}
			if (p == 2 && strcmp(probes[i].host, "evil.test") == 0) {
				assert_int_equal(v2, POL_ALLOW);	/* the addition */
				continue;
			}
			if (v1 != v2)
				fail_msg("%s:%u policy %u: %s, the copy says %s", probes[i].host,
				    probes[i].port, p, pol_verdict_str(v1), pol_verdict_str(v2));
			assert_true((r1 == NULL) == (r2 == NULL));
			if (r1 != NULL) {
				assert_int_equal(r1->line, r2->line);
				assert_string_equal(r1->pattern, r2->pattern);
				assert_string_equal(r1->key, r2->key);
			}
		}
	}
	/* the copy holds each distinct pattern once: the repeat is gone, the two additions in */
	assert_int_equal(pol_set_policy_stats(s, 0).allow, 6);
	assert_int_equal(pol_set_policy_stats(t, 0).allow, 5);
	assert_int_equal(pol_set_policy_stats(t, 2).allow, 7);
	assert_int_equal(pol_set_policy_stats(t, 2).deny, pol_set_policy_stats(s, 0).deny);
	pol_set_free(s);
	pol_set_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_policy),
		cmocka_unit_test(test_ports_summary_agrees),
		cmocka_unit_test(test_ports_summary_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
