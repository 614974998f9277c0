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

/*
 * pol_match_lower_and_ports() on name (len bytes) against pol_match_name_and_ports(): for a
 * name with no capital the same verdict, rule and summary, but POL_NO_MATCH for
 * POL_BAD_NAME under a policy without wildcards; under such a policy a name with a capital
 * matches nothing (fail closed), under one with wildcards the same again.
 */
static void
lower_agrees(const struct pol_set *s, uint32_t pol, bool wild, const char *name, size_t len,
    uint8_t proto, uint16_t port)
{
	const struct pol_rule *r1, *r2;
	struct pol_ports p1, p2, none = { .any = false };
	enum pol_verdict v1, v2;
	bool capital = false;

	for (size_t i = 0; i < len; i++)
		capital |= name[i] >= 'A' && name[i] <= 'Z';
	v1 = pol_match_name_and_ports(s, pol, name, len, proto, port, &r1, &p1);
	v2 = pol_match_lower_and_ports(s, pol, name, len, proto, port, &r2, &p2);
	if (!wild && capital) {
		v1 = POL_NO_MATCH;
		r1 = NULL;
		p1 = none;
	} else if (!wild && v1 == POL_BAD_NAME) {
		v1 = POL_NO_MATCH;
	}
	if (v1 != v2)
		fail_msg("'%.*s' wild %d: %s, want %s", (int)len, name, wild,
		    pol_verdict_str(v2), pol_verdict_str(v1));
	assert_ptr_equal(r1, r2);
	ports_equal(&p1, &p2);
}

/* Every name of pats, and names made from their pieces, asked both ways. */
static void
test_lower_agrees(void **state)
{
	static const char *const pats[] = {
		"a", "ab.c", "example.com", "www.example.com", "abcdefgh", "abcdefg.hijklmno",
		"x.abcdefghijklmnop.example.org", "deny.example.com", "p-1_2.example.com",
	};
	static const char alpha[] = "abcdefghmnop.-_XE";
	static const uint16_t ports[] = { 0, 22, 443 };
	char name[300];
	uint64_t r = 7;

	(void)state;
	for (int wild = 0; wild <= 1; wild++) {
		struct pol_builder *b = builder_p();
		struct pol_set *s;

		for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
			add_name(b, 0, POL_NAME_EXACT, pats[i], (uint16_t)(i % 3 == 2 ? 443 : 0),
			    strncmp(pats[i], "deny", 4) == 0 ? POL_LIST_DENY : POL_LIST_ALLOW);
		add_name(b, 0, POL_NAME_EXACT, "example.com", 22, POL_LIST_DENY);
		if (wild)
			add_name(b, 0, POL_NAME_WILD, "example.com", 0, POL_LIST_ALLOW);
		s = build(b);
		for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
			size_t n = strlen(pats[i]);

			memcpy(name, pats[i], n);
			name[n] = '.';
			for (size_t k = 0; k < sizeof(ports) / sizeof(ports[0]); k++) {
				uint8_t proto = ports[k] == 0 ? POL_PROTO_ANY : POL_PROTO_TCP;

				lower_agrees(s, 0, wild, name, n, proto, ports[k]);
				lower_agrees(s, 0, wild, name, n + 1, proto, ports[k]);
				name[n - 1] ^= 0x20;	/* a capital, or a byte no name has */
				lower_agrees(s, 0, wild, name, n, proto, ports[k]);
				name[n - 1] ^= 0x20;
			}
		}
		/* random names from a few bytes: dots side by side, labels long, names long */
		for (int i = 0; i < 20000; i++) {
			size_t n;

			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			n = i < 300 ? (size_t)i : r % 40;
			for (size_t k = 0; k < n; k++)
				name[k] = i < 300 ? (char)(k % 64 == 63 ? '.' : 'a') :
				    alpha[(r >> (k % 56)) % (sizeof(alpha) - 1)];
			lower_agrees(s, 0, wild, name, n, POL_PROTO_ANY, 0);
		}
		assert_int_equal(pol_match_lower_and_ports(s, 1, "a", 1, POL_PROTO_ANY, 0, NULL,
		    &(struct pol_ports){ .any = true }), POL_NO_MATCH);
		pol_set_free(s);
	}
}

/*
 * A summary whose counts a writer tore (dp_bind_view.c judges bindings in place): the
 * lists are read within their arrays, whatever nallow and ndeny say. The bytes after each
 * list hold the port, so a loop that ran on by the counts would find it there.
 */
static void
test_ports_torn_counts(void **state)
{
	struct {
		struct pol_ports p;
		uint16_t after[4];
	} t;

	(void)state;
	_Static_assert(offsetof(struct pol_ports, deny) ==
	    offsetof(struct pol_ports, allow) + sizeof(t.p.allow), "deny follows allow");
	memset(&t, 0, sizeof(t));
	for (unsigned int i = 0; i < POL_PORTS_MAX; i++)
		t.p.allow[i] = (uint16_t)(1 + i);
	t.p.deny[0] = 443;		/* allow[POL_PORTS_MAX], were it read */
	t.p.nallow = 255;
	assert_false(pol_ports_allow(&t.p, 443));
	assert_true(pol_ports_allow(&t.p, 1));

	memset(&t, 0, sizeof(t));
	assert_true(offsetof(__typeof__(t), after) == sizeof(t.p) &&
	    offsetof(struct pol_ports, deny) + sizeof(t.p.deny) == sizeof(t.p));
	t.p.any = true;
	t.after[0] = 443;		/* deny[POL_PORTS_MAX], were it read */
	t.p.ndeny = 255;
	for (unsigned int i = 0; i < POL_PORTS_MAX; i++)
		t.p.deny[i] = (uint16_t)(1 + i);
	assert_true(pol_ports_allow(&t.p, 443));
	assert_false(pol_ports_allow(&t.p, 6));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_policy),
		cmocka_unit_test(test_lower_agrees),
		cmocka_unit_test(test_ports_summary_agrees),
		cmocka_unit_test(test_ports_summary_overflow),
		cmocka_unit_test(test_ports_torn_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
