/*
 * policy/match: the compiled matcher, built directly through struct pol_builder (no YAML):
 * exact and wildcard names on whole labels, ports, deny over allow, addresses, the rule
 * that decided, and policies kept apart. The port summaries and a policy's copy:
 * test_pol_match_ports.c.
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
/* The SPEC s3 python policy, plus a second policy to check isolation. */
static struct pol_set *
spec_set(void)
{
	struct pol_builder *b = pol_builder_new();
	struct pol_set *s;

	add_line = 0;
	assert_int_equal(pol_builder_policy(b, "python"), 0);
	assert_int_equal(pol_builder_policy(b, "other"), 1);
	assert_int_equal(pol_builder_policy(b, "python"), -EEXIST);
	add_name(b, 0, POL_NAME_EXACT, "pypi.org", 0, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "files.pythonhosted.org", 0, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_WILD, "githubusercontent.com", 0, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "github.com", 22, POL_LIST_ALLOW);
	add_addr(b, 0, "198.51.100.0", 24, 443, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "upload.pypi.org", 0, POL_LIST_DENY);
	add_name(b, 1, POL_NAME_EXACT, "example.com", 0, POL_LIST_ALLOW);
	s = build(b);
	return s;
}

static void
test_exact_and_whole_labels(void **state)
{
	static const struct {
		const char *name;
		enum pol_verdict v;
	} cased[] = {
		{ "FILES.PYTHONHOSTED.ORG", POL_ALLOW },
		{ "files.pythonhosted.orG", POL_ALLOW },
		{ "fileS.pythoNhosted.org", POL_ALLOW },
		{ "files.pythonhosted.orh", POL_NO_MATCH },
		{ "files.pythonhosted.or@", POL_NO_MATCH },
		{ "files.pythonhosted.or\xc7", POL_NO_MATCH },
	};
	struct pol_set *s = spec_set();

	(void)state;
	assert_int_equal(name_v(s, 0, "pypi.org", POL_PROTO_TCP, 443), POL_ALLOW);
	assert_int_equal(name_v(s, 0, "pypi.org", POL_PROTO_UDP, 53), POL_ALLOW);
	assert_int_equal(name_v(s, 0, "evilpypi.org", POL_PROTO_TCP, 443), POL_NO_MATCH);
	assert_int_equal(name_v(s, 0, "pypi.org.evil.example.net", POL_PROTO_TCP, 443),
	    POL_NO_MATCH);
	assert_int_equal(name_v(s, 0, "www.pypi.org", POL_PROTO_TCP, 443), POL_NO_MATCH);
	assert_int_equal(name_v(s, 0, "org", POL_PROTO_TCP, 443), POL_NO_MATCH);
	assert_int_equal(name_v(s, 0, "pypi.or", POL_PROTO_TCP, 443), POL_NO_MATCH);
	/* Case and one trailing dot are not part of a name's identity. */
	assert_int_equal(name_v(s, 0, "PyPI.ORG", POL_PROTO_TCP, 443), POL_ALLOW);
	assert_int_equal(name_v(s, 0, "pypi.org.", POL_PROTO_TCP, 443), POL_ALLOW);
	/* names compare a word of eight bytes at a time, then byte by byte: case in both */
	for (size_t i = 0; i < sizeof(cased) / sizeof(cased[0]); i++)
		assert_int_equal(name_v(s, 0, cased[i].name, POL_PROTO_TCP, 443), cased[i].v);
	/* A name given with a length: bytes past it don't count. */
	assert_int_equal(pol_match_name(s, 0, "pypi.org.evil", 8, POL_PROTO_TCP, 443, NULL),
	    POL_ALLOW);
	pol_set_free(s);
}

static void
test_wildcard(void **state)
{
	struct pol_set *s = spec_set();
	const struct pol_rule *r;

	(void)state;
	assert_int_equal(name_v(s, 0, "raw.githubusercontent.com", POL_PROTO_TCP, 443),
	    POL_ALLOW);
	assert_int_equal(name_v(s, 0, "a.b.c.githubusercontent.com", POL_PROTO_TCP, 443),
	    POL_ALLOW);
	/* Not the apex, not a longer last label, not a suffix inside a label. */
	assert_int_equal(name_v(s, 0, "githubusercontent.com", POL_PROTO_TCP, 443),
	    POL_NO_MATCH);
	assert_int_equal(name_v(s, 0, "xgithubusercontent.com", POL_PROTO_TCP, 443),
	    POL_NO_MATCH);
	assert_int_equal(name_v(s, 0, "githubusercontent.com.evil.net", POL_PROTO_TCP, 443),
	    POL_NO_MATCH);
	assert_int_equal(pol_match_name(s, 0, "RAW.GitHubUserContent.com.", 26, POL_PROTO_TCP,
	    443, &r), POL_ALLOW);
	assert_string_equal(r->pattern, "*.githubusercontent.com");
	pol_set_free(s);
}

static void
test_ports(void **state)
{
	struct pol_builder *b = builder_p();
	struct pol_set *s;
	const struct pol_rule *r;

	(void)state;
	add_name(b, 0, POL_NAME_EXACT, "git.example.com", 22, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "git.example.com", 443, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "git.example.com", 9418, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "any.example.com", 0, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "any.example.com", 25, POL_LIST_DENY);
	s = build(b);

	/* Several patterns for one name combine. */
	assert_int_equal(name_v(s, 0, "git.example.com", POL_PROTO_TCP, 22), POL_ALLOW);
	assert_int_equal(name_v(s, 0, "git.example.com", POL_PROTO_TCP, 443), POL_ALLOW);
	assert_int_equal(pol_match_name(s, 0, "git.example.com", 15, POL_PROTO_UDP, 9418, &r),
	    POL_ALLOW);
	assert_int_equal(r->index, 2);
	assert_int_equal(name_v(s, 0, "git.example.com", POL_PROTO_TCP, 80), POL_NO_MATCH);
	assert_int_equal(name_v(s, 0, "git.example.com", POL_PROTO_TCP, 23), POL_NO_MATCH);
	/* A DNS question: some port is allowed. ICMP has no port: only port-less rules. */
	assert_int_equal(name_v(s, 0, "git.example.com", POL_PROTO_ANY, 0), POL_ALLOW);
	assert_int_equal(name_v(s, 0, "git.example.com", 1, 0), POL_NO_MATCH);
	assert_int_equal(name_v(s, 0, "any.example.com", 1, 0), POL_ALLOW);
	/* Port-less allow, port deny: the port is cut, the name still resolves. */
	assert_int_equal(name_v(s, 0, "any.example.com", POL_PROTO_TCP, 80), POL_ALLOW);
	assert_int_equal(pol_match_name(s, 0, "any.example.com", 15, POL_PROTO_TCP, 25, &r),
	    POL_DENY);
	assert_int_equal(r->list, POL_LIST_DENY);
	assert_int_equal(name_v(s, 0, "any.example.com", POL_PROTO_ANY, 0), POL_ALLOW);
	pol_set_free(s);
}

static void
test_deny_beats_allow(void **state)
{
	struct pol_builder *b = builder_p();
	struct pol_set *s;
	const struct pol_rule *r;

	(void)state;
	add_name(b, 0, POL_NAME_EXACT, "x.evil.example", 0, POL_LIST_ALLOW);	/* line 1 */
	add_name(b, 0, POL_NAME_WILD, "evil.example", 0, POL_LIST_DENY);	/* line 2 */
	add_name(b, 0, POL_NAME_WILD, "good.example", 0, POL_LIST_ALLOW);	/* line 3 */
	add_name(b, 0, POL_NAME_EXACT, "bad.good.example", 0, POL_LIST_DENY);	/* line 4 */
	add_name(b, 0, POL_NAME_WILD, "a.good.example", 0, POL_LIST_ALLOW);	/* line 5 */
	add_name(b, 0, POL_NAME_EXACT, "both.example", 0, POL_LIST_ALLOW);	/* line 6 */
	add_name(b, 0, POL_NAME_EXACT, "both.example", 0, POL_LIST_DENY);	/* line 7 */
	s = build(b);

	/* A wildcard deny beats a more specific exact allow. */
	assert_int_equal(pol_match_name(s, 0, "x.evil.example", 14, POL_PROTO_TCP, 443, &r),
	    POL_DENY);
	assert_int_equal(r->line, 2);
	assert_int_equal(pol_match_name(s, 0, "bad.good.example", 16, POL_PROTO_ANY, 0, &r),
	    POL_DENY);
	assert_int_equal(r->line, 4);
	assert_int_equal(pol_match_name(s, 0, "both.example", 12, POL_PROTO_TCP, 1, &r),
	    POL_DENY);
	assert_int_equal(r->line, 7);
	/* The most specific allow explains. */
	assert_int_equal(pol_match_name(s, 0, "z.a.good.example", 16, POL_PROTO_TCP, 1, &r),
	    POL_ALLOW);
	assert_int_equal(r->line, 5);
	assert_int_equal(pol_match_name(s, 0, "z.b.good.example", 16, POL_PROTO_TCP, 1, &r),
	    POL_ALLOW);
	assert_int_equal(r->line, 3);
	pol_set_free(s);
}

static void
test_addresses(void **state)
{
	struct pol_builder *b = builder_p();
	struct pol_set *s;
	const struct pol_rule *r;

	(void)state;
	add_addr(b, 0, "203.0.113.7", 32, 0, POL_LIST_ALLOW);		/* line 1 */
	add_addr(b, 0, "198.51.100.0", 24, 443, POL_LIST_ALLOW);	/* line 2 */
	add_addr(b, 0, "198.51.100.128", 25, 0, POL_LIST_ALLOW);	/* line 3 */
	add_addr(b, 0, "198.51.100.200", 32, 0, POL_LIST_DENY);		/* line 4 */
	add_addr(b, 0, "2001:db8::", 32, 0, POL_LIST_ALLOW);		/* line 5 */
	add_addr(b, 0, "2001:db8::1", 128, 443, POL_LIST_ALLOW);	/* line 6 */
	add_addr(b, 0, "2001:db8:bad::", 48, 0, POL_LIST_DENY);		/* line 7 */
	add_addr(b, 0, "10.0.0.0", 8, 0, POL_LIST_ALLOW);		/* line 8 */
	s = build(b);

	assert_int_equal(addr_v(s, 0, "203.0.113.7", POL_PROTO_TCP, 80, NULL), POL_ALLOW);
	assert_int_equal(addr_v(s, 0, "203.0.113.8", POL_PROTO_TCP, 80, NULL), POL_NO_MATCH);
	assert_int_equal(addr_v(s, 0, "198.51.100.9", POL_PROTO_TCP, 443, &r), POL_ALLOW);
	assert_int_equal(r->line, 2);
	assert_int_equal(addr_v(s, 0, "198.51.100.9", POL_PROTO_TCP, 80, NULL), POL_NO_MATCH);
	/* Longest prefix explains; deny of one host inside an allowed prefix wins. */
	assert_int_equal(addr_v(s, 0, "198.51.100.130", POL_PROTO_TCP, 443, &r), POL_ALLOW);
	assert_int_equal(r->line, 3);
	assert_int_equal(addr_v(s, 0, "198.51.100.200", POL_PROTO_TCP, 443, &r), POL_DENY);
	assert_int_equal(r->line, 4);
	assert_int_equal(addr_v(s, 0, "10.255.255.255", POL_PROTO_UDP, 53, NULL), POL_ALLOW);
	assert_int_equal(addr_v(s, 0, "11.0.0.0", POL_PROTO_UDP, 53, NULL), POL_NO_MATCH);
	/* IPv6, and bytes that look like ASCII capitals must not be case-folded. */
	assert_int_equal(addr_v(s, 0, "2001:db8:4142::1", POL_PROTO_TCP, 80, &r), POL_ALLOW);
	assert_int_equal(r->line, 5);
	assert_int_equal(addr_v(s, 0, "2001:db8::1", POL_PROTO_TCP, 443, &r), POL_ALLOW);
	assert_int_equal(r->line, 6);
	assert_int_equal(addr_v(s, 0, "2001:db8:bad::5", POL_PROTO_TCP, 443, &r), POL_DENY);
	assert_int_equal(r->line, 7);
	assert_int_equal(addr_v(s, 0, "2001:db9::", POL_PROTO_TCP, 443, NULL), POL_NO_MATCH);
	/* The families are kept apart: ::ffff:203.0.113.7 is an IPv6 address. */
	assert_int_equal(addr_v(s, 0, "::ffff:203.0.113.7", POL_PROTO_TCP, 80, NULL),
	    POL_NO_MATCH);
	assert_int_equal(pol_match_addr(s, 0, (const uint8_t *)"abcdefgh", 8, POL_PROTO_TCP, 1,
	    NULL), POL_BAD_NAME);
	pol_set_free(s);
}

/* A policy of addr/plen alone (verdict v) says nothing of other, of the other family. */
static void
check_one_family(const char *addr, unsigned int plen, enum pol_list list, enum pol_verdict v,
    const char *other)
{
	struct pol_builder *b = builder_p();
	const struct pol_rule *r;
	struct pol_set *s;

	add_addr(b, 0, addr, plen, 0, list);
	add_name(b, 0, POL_NAME_EXACT, "example.com", 0, POL_LIST_ALLOW);
	s = build(b);
	assert_int_equal(addr_v(s, 0, addr, POL_PROTO_TCP, 443, &r), v);
	assert_int_equal(r->line, 1);
	assert_int_equal(addr_v(s, 0, other, POL_PROTO_TCP, 443, &r), POL_NO_MATCH);
	assert_null(r);
	/* what pol_policy_has_addrs() says of each family: asked once, it stands for this */
	assert_true(pol_policy_has_addrs(s, 0, strchr(addr, ':') != NULL ? 16 : 4));
	assert_false(pol_policy_has_addrs(s, 0, strchr(other, ':') != NULL ? 16 : 4));
	pol_set_free(s);
}

/*
 * A family without address patterns is answered without visiting any prefix length: each
 * word of the IPv6 lengths alone must still be visited, and the other family never is.
 */
static void
test_addresses_one_family(void **state)
{
	static const unsigned int plen6[] = { 0, 32, 63, 64, 65, 127, 128 };
	static const unsigned int plen4[] = { 0, 8, 31, 32 };
	const struct pol_rule *r;
	struct pol_builder *b;
	struct pol_set *s;

	(void)state;
	for (size_t i = 0; i < sizeof(plen6) / sizeof(plen6[0]); i++)
		check_one_family("2001:db8::", plen6[i], POL_LIST_ALLOW, POL_ALLOW, "0.0.0.0");
	for (size_t i = 0; i < sizeof(plen4) / sizeof(plen4[0]); i++)
		check_one_family("10.0.0.0", plen4[i], POL_LIST_DENY, POL_DENY, "::a00:0");
	b = builder_p();		/* names only: no address of either family matches */
	add_name(b, 0, POL_NAME_EXACT, "example.com", 0, POL_LIST_ALLOW);
	s = build(b);
	assert_int_equal(addr_v(s, 0, "10.0.0.1", POL_PROTO_TCP, 443, &r), POL_NO_MATCH);
	assert_null(r);
	assert_int_equal(addr_v(s, 0, "2001:db8::1", POL_PROTO_UDP, 53, &r), POL_NO_MATCH);
	assert_null(r);
	assert_int_equal(pol_match_addr(s, 0, (const uint8_t *)"abcdefgh", 8, POL_PROTO_TCP, 1,
	    NULL), POL_BAD_NAME);
	assert_false(pol_policy_has_addrs(s, 0, 4) || pol_policy_has_addrs(s, 0, 16) ||
	    pol_policy_has_addrs(s, 0, 8) || pol_policy_has_addrs(s, 1, 4) ||
	    pol_policy_has_addrs(NULL, 0, 4));
	pol_set_free(s);
}

static void
test_policies_apart(void **state)
{
	struct pol_set *s = spec_set();

	(void)state;
	assert_int_equal(name_v(s, 1, "pypi.org", POL_PROTO_TCP, 443), POL_NO_MATCH);
	assert_int_equal(name_v(s, 1, "example.com", POL_PROTO_TCP, 443), POL_ALLOW);
	assert_int_equal(name_v(s, 0, "example.com", POL_PROTO_TCP, 443), POL_NO_MATCH);
	assert_int_equal(addr_v(s, 1, "198.51.100.1", POL_PROTO_TCP, 443, NULL), POL_NO_MATCH);
	assert_int_equal(name_v(s, 2, "example.com", POL_PROTO_TCP, 443), POL_NO_MATCH);
	assert_int_equal(name_v(NULL, 0, "example.com", POL_PROTO_TCP, 443), POL_NO_MATCH);
	pol_set_free(s);
}

static void
test_bad_names(void **state)
{
	struct pol_set *s = spec_set();
	char label[80], name[300];

	(void)state;
	assert_int_equal(name_v(s, 0, "", POL_PROTO_TCP, 443), POL_BAD_NAME);
	assert_int_equal(name_v(s, 0, ".", POL_PROTO_TCP, 443), POL_BAD_NAME);
	assert_int_equal(name_v(s, 0, ".pypi.org", POL_PROTO_TCP, 443), POL_BAD_NAME);
	assert_int_equal(name_v(s, 0, "x..pypi.org", POL_PROTO_TCP, 443), POL_BAD_NAME);
	assert_int_equal(name_v(s, 0, "pypi.org..", POL_PROTO_TCP, 443), POL_BAD_NAME);
	/* An empty label must not reach a wildcard: "..githubusercontent.com". */
	assert_int_equal(name_v(s, 0, ".githubusercontent.com", POL_PROTO_TCP, 443),
	    POL_BAD_NAME);
	memset(label, 'a', 64);
	label[64] = '\0';
	snprintf(name, sizeof(name), "%s.githubusercontent.com", label);
	assert_int_equal(name_v(s, 0, name, POL_PROTO_TCP, 443), POL_BAD_NAME);
	label[63] = '\0';
	snprintf(name, sizeof(name), "%s.githubusercontent.com", label);
	assert_int_equal(name_v(s, 0, name, POL_PROTO_TCP, 443), POL_ALLOW);
	memset(name, 'a', sizeof(name));
	for (size_t i = 50; i < sizeof(name); i += 50)
		name[i] = '.';
	assert_int_equal(pol_match_name(s, 0, name, 254, POL_PROTO_TCP, 1, NULL), POL_BAD_NAME);
	pol_set_free(s);
}

static void
test_rule_info_and_stats(void **state)
{
	struct pol_set *s = spec_set();
	const struct pol_rule *r;
	struct pol_policy_stats st;

	(void)state;
	assert_int_equal(pol_match_name(s, 0, "upload.pypi.org", 15, POL_PROTO_TCP, 443, &r),
	    POL_DENY);
	assert_string_equal(r->policy, "python");
	assert_string_equal(r->key, "policies.t.deny");
	assert_string_equal(r->pattern, "upload.pypi.org");
	assert_string_equal(r->file, "t.yaml");
	assert_int_equal(r->line, 6);
	assert_int_equal(r->col, 7);
	assert_int_equal(r->index, 5);
	assert_int_equal(pol_set_policies(s), 2);
	assert_string_equal(pol_set_policy_name(s, 1), "other");
	assert_null(pol_set_policy_name(s, 2));
	assert_int_equal(pol_set_policy_find(s, "other"), 1);
	assert_int_equal(pol_set_policy_find(s, "nope"), -ENOENT);
	st = pol_set_policy_stats(s, 0);
	assert_int_equal(st.allow, 5);
	assert_int_equal(st.deny, 1);
	assert_int_equal(st.names, 4);
	assert_int_equal(st.wildcards, 1);
	assert_int_equal(st.addrs, 1);
	assert_int_equal(pol_set_rules(s), 7);
	assert_string_equal(pol_set_rule(s, 2)->pattern, "*.githubusercontent.com");
	assert_null(pol_set_rule(s, 7));
	assert_string_equal(pol_verdict_str(POL_ALLOW), "allow");
	assert_string_equal(pol_verdict_str(POL_DENY), "deny");
	pol_set_free(s);
}

/* Repeats keep the first pattern written; an empty set decides nothing. */
static void
test_repeats_and_empty(void **state)
{
	struct pol_builder *b = builder_p();
	struct pol_set *s;
	const struct pol_rule *r;
	struct pol_pattern bad = { .kind = POL_NAME_EXACT };
	struct pol_rule o = { .list = POL_LIST_ALLOW };

	(void)state;
	assert_int_equal(pol_builder_policy(b, "empty"), 1);
	add_name(b, 0, POL_NAME_EXACT, "a.example", 0, POL_LIST_ALLOW);
	add_name(b, 0, POL_NAME_EXACT, "a.example", 0, POL_LIST_ALLOW);
	assert_int_equal(pol_builder_add(b, 0, &bad, &o), -EINVAL);	/* empty name */
	assert_int_equal(pol_builder_add(b, 5, &bad, &o), -EINVAL);	/* no such policy */
	s = build(b);
	assert_int_equal(pol_match_name(s, 0, "a.example", 9, POL_PROTO_TCP, 1, &r), POL_ALLOW);
	assert_int_equal(r->line, 1);
	assert_int_equal(name_v(s, 1, "a.example", POL_PROTO_ANY, 0), POL_NO_MATCH);
	pol_set_free(s);
}

/* Many keys in one table: every one is found, none borrowed from a neighbour. */
static void
test_many(void **state)
{
	struct pol_builder *b = builder_p();
	struct pol_set *s;
	char name[64];

	(void)state;
	assert_int_equal(pol_builder_policy(b, "q"), 1);
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "h%d.zone%d.example", i, i % 97);
		add_name(b, (uint32_t)(i & 1), i % 3 == 0 ? POL_NAME_WILD : POL_NAME_EXACT, name,
		    (uint16_t)(i % 5 == 0 ? 443 : 0), POL_LIST_ALLOW);
	}
	s = build(b);
	for (int i = 0; i < 20000; i++) {
		char q[80];
		uint32_t pol = (uint32_t)(i & 1);

		snprintf(name, sizeof(name), "h%d.zone%d.example", i, i % 97);
		snprintf(q, sizeof(q), "x.%s", name);
		if (i % 3 == 0) {
			assert_int_equal(name_v(s, pol, name, POL_PROTO_ANY, 0), POL_NO_MATCH);
			assert_int_equal(name_v(s, pol, q, POL_PROTO_TCP, 443), POL_ALLOW);
		} else {
			assert_int_equal(name_v(s, pol, name, POL_PROTO_TCP, 443), POL_ALLOW);
			assert_int_equal(name_v(s, pol, q, POL_PROTO_ANY, 0), POL_NO_MATCH);
		}
		assert_int_equal(name_v(s, pol ^ 1, name, POL_PROTO_ANY, 0), POL_NO_MATCH);
		if (i % 5 == 0 && i % 3 != 0)
			assert_int_equal(name_v(s, pol, name, POL_PROTO_TCP, 80), POL_NO_MATCH);
	}
	pol_set_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_and_whole_labels),
		cmocka_unit_test(test_wildcard),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_deny_beats_allow),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_addresses_one_family),
		cmocka_unit_test(test_policies_apart),
		cmocka_unit_test(test_bad_names),
		cmocka_unit_test(test_rule_info_and_stats),
		cmocka_unit_test(test_repeats_and_empty),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
