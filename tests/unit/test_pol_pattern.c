/*
 * policy/load pattern compiler: every form of the SPEC s3 table, canonicalisation through
 * ldns, and each refusal with its message.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "policy/load.h"

struct good {
	const char *text;
	enum pol_kind kind;
	const char *name;	/* names: canonical; addresses: the network in text form */
	uint8_t plen;
	uint16_t port;
};

static const struct good goods[] = {
	{ "pypi.org", POL_NAME_EXACT, "pypi.org", 0, 0 },
	{ "PyPI.ORG.", POL_NAME_EXACT, "pypi.org", 0, 0 },
	{ "files.pythonhosted.org:443", POL_NAME_EXACT, "files.pythonhosted.org", 0, 443 },
	{ "*.githubusercontent.com", POL_NAME_WILD, "githubusercontent.com", 0, 0 },
	{ "*.Example.COM:8443", POL_NAME_WILD, "example.com", 0, 8443 },
	{ "*.co.uk", POL_NAME_WILD, "co.uk", 0, 0 },
	{ "xn--bcher-kva.de", POL_NAME_EXACT, "xn--bcher-kva.de", 0, 0 },
	{ "_acme-challenge.example.com", POL_NAME_EXACT, "_acme-challenge.example.com", 0, 0 },
	{ "localhost", POL_NAME_EXACT, "localhost", 0, 0 },
	{ "github.com:22", POL_NAME_EXACT, "github.com", 0, 22 },
	{ "x.y:65535", POL_NAME_EXACT, "x.y", 0, 65535 },
	{ "203.0.113.7", POL_ADDR4, "203.0.113.7", 32, 0 },
	{ "203.0.113.0/24", POL_ADDR4, "203.0.113.0", 24, 0 },
	{ "198.51.100.0/24:443", POL_ADDR4, "198.51.100.0", 24, 443 },
	{ "203.0.113.7:53", POL_ADDR4, "203.0.113.7", 32, 53 },
	{ "[2001:db8::1]", POL_ADDR6, "2001:db8::1", 128, 0 },
	{ "[2001:db8::1]:443", POL_ADDR6, "2001:db8::1", 128, 443 },
	{ "2001:db8::/32", POL_ADDR6, "2001:db8::", 32, 0 },
	{ "2001:DB8::1", POL_ADDR6, "2001:db8::1", 128, 0 },
	{ "[2001:db8::/32]:443", POL_ADDR6, "2001:db8::", 32, 443 },
	{ "::ffff:192.0.2.1", POL_ADDR6, "::ffff:192.0.2.1", 128, 0 },
};

struct bad {
	const char *text;
	const char *why;
};

static const struct bad bads[] = {
	{ "", "empty pattern" },
	{ "*", "'*' would allow every host" },
	{ "*.", "'*' would allow every host" },
	{ "*.com", "a wildcard over a one-label suffix (*.com) would allow a whole top-level "
	    "domain" },
	{ "*.com.", "a wildcard over a one-label suffix (*.com) would allow a whole top-level "
	    "domain" },
	{ "*.com:443", "a wildcard over a one-label suffix (*.com) would allow a whole "
	    "top-level domain" },
	{ "*foo.com", "a wildcard must be the whole leftmost label (*.example.com)" },
	{ "a.*.com", "a wildcard must be the whole leftmost label (*.example.com)" },
	{ "*.*.example.com", "a wildcard must be the whole leftmost label (*.example.com)" },
	{ "bücher.de", "non-ASCII host name: write an IDN in its punycode form (xn--...)" },
	{ "exa mple.com", "contains a space or control character" },
	{ "a..b", "empty label" },
	{ ".example.com", "empty label" },
	{ "example..", "empty label" },
	{ ".", "empty host name" },
	{ ":443", "empty host name" },
	{ "ex!ample.com", "invalid character '!' in a host name" },
	{ "ex\\046ample.com", "invalid character '\\' in a host name" },
	{ "example.com:0", "port 0 out of range (1..65535)" },
	{ "example.com:65536", "port 65536 out of range (1..65535)" },
	{ "example.com:99999999999", "port 99999999999 out of range (1..65535)" },
	{ "example.com:", "empty port after ':'" },
	{ "example.com:https", "port \"https\" is not a number" },
	{ "example.com:-1", "port \"-1\" is not a number" },
	{ "300.1.2.3", "bad IPv4 address \"300.1.2.3\"" },
	{ "1.2.3", "bad IPv4 address \"1.2.3\"" },
	{ "example.123", "numeric last label \"123\": neither a host name nor an IPv4 "
	    "address" },
	{ "203.0.113.7/24", "host bits set after /24 (the network is 203.0.113.0/24)" },
	{ "203.0.113.0/33", "prefix length /33 out of range (0..32)" },
	{ "203.0.113.0/", "prefix length / out of range (0..32)" },
	{ "0.0.0.0/0", "/0 would allow every address" },
	{ "::/0", "/0 would allow every address" },
	{ "2001:db8::1/32", "host bits set after /32 (the network is 2001:db8::/32)" },
	{ "2001:db8::/129", "prefix length /129 out of range (0..128)" },
	{ "[2001:db8::1", "missing ']' after an IPv6 address" },
	{ "[2001:db8::1]443", "unexpected \"443\" after ']'" },
	{ "[2001:db8::1]:70000", "port 70000 out of range (1..65535)" },
	{ "[example.com]", "bad IPv6 address \"example.com\"" },
	{ "2001:db8::zz", "bad IPv6 address \"2001:db8::zz\"" },
	{ "example.com/24", "a prefix length needs an address, not a name" },
	{ "a.example.com:1:2", "bad IPv6 address \"a.example.com:1:2\"" },
};

static void
test_good(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		struct pol_pattern p;
		char why[POL_WHY_MAX] = "", a[INET6_ADDRSTRLEN];

		if (pol_pattern_parse(g->text, &p, why, sizeof(why)) != 0)
			fail_msg("\"%s\": %s", g->text, why);
		assert_int_equal(p.kind, g->kind);
		assert_int_equal(p.port, g->port);
		if (g->kind == POL_NAME_EXACT || g->kind == POL_NAME_WILD) {
			assert_string_equal(p.name, g->name);
			continue;
		}
		assert_int_equal(p.plen, g->plen);
		inet_ntop(g->kind == POL_ADDR4 ? AF_INET : AF_INET6, p.addr, a, sizeof(a));
		assert_string_equal(a, g->name);
	}
}

static void
test_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct pol_pattern p;
		char why[POL_WHY_MAX] = "";

		if (pol_pattern_parse(bads[i].text, &p, why, sizeof(why)) != -EINVAL)
			fail_msg("\"%s\" was accepted", bads[i].text);
		if (strcmp(why, bads[i].why) != 0)
			fail_msg("\"%s\": got \"%s\", want \"%s\"", bads[i].text, why, bads[i].why);
	}
}

/* Labels of 63 and names of 253 are the limits (RFC 1035 s2.3.4). */
static void
test_lengths(void **state)
{
	struct pol_pattern p;
	char why[POL_WHY_MAX], name[300];

	(void)state;
	memset(name, 'a', 63);
	strcpy(name + 63, ".example");
	assert_int_equal(pol_pattern_parse(name, &p, why, sizeof(why)), 0);
	name[0] = 'b';
	memmove(name + 1, name, strlen(name) + 1);
	assert_int_equal(pol_pattern_parse(name, &p, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "label longer than 63 characters");

	/* 4 labels of 62 + 3 dots = 251, then ".x" = 253. */
	memset(name, 'a', sizeof(name));
	for (int i = 62; i < 251; i += 63)
		name[i] = '.';
	strcpy(name + 251, ".x");
	assert_int_equal(strlen(name), 253);
	assert_int_equal(pol_pattern_parse(name, &p, why, sizeof(why)), 0);
	assert_int_equal(strlen(p.name), 253);
	strcpy(name + 251, ".xy");
	assert_int_equal(pol_pattern_parse(name, &p, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "name longer than 253 characters");
	memset(name, 'a', 280);
	name[280] = '\0';
	assert_int_equal(pol_pattern_parse(name, &p, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "longer than 253 characters");
}

static void
test_host_parse(void **state)
{
	struct pol_pattern p;
	char why[POL_WHY_MAX];
	bool has_port;

	(void)state;
	assert_int_equal(pol_host_parse("PyPI.org:443", &p, &has_port, why, sizeof(why)), 0);
	assert_true(has_port);
	assert_string_equal(p.name, "pypi.org");
	assert_int_equal(p.port, 443);
	assert_int_equal(pol_host_parse("pypi.org", &p, &has_port, why, sizeof(why)), 0);
	assert_false(has_port);
	assert_int_equal(pol_host_parse("2001:db8::1", &p, &has_port, why, sizeof(why)), 0);
	assert_int_equal(p.kind, POL_ADDR6);
	assert_int_equal(p.plen, 128);
	assert_int_equal(pol_host_parse("*.pypi.org", &p, &has_port, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "a wildcard, not a host");
	assert_int_equal(pol_host_parse("10.0.0.0/8", &p, &has_port, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "a prefix, not a host");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_host_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
