/* What the policy matcher's unit tests build with: see pol_match_fixture.h. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pol_match_fixture.h"

uint32_t add_line;

void
add_name(struct pol_builder *b, uint32_t pol, enum pol_kind kind, const char *name,
    uint16_t port, enum pol_list list)
{
	struct pol_pattern p = { .kind = kind, .port = port };
	char text[300];
	struct pol_rule o = {
		.key = list == POL_LIST_ALLOW ? "policies.t.allow" : "policies.t.deny",
		.pattern = text, .file = "t.yaml", .index = add_line, .line = add_line + 1,
		.col = 7, .list = list,
	};

	add_line++;
	snprintf(p.name, sizeof(p.name), "%s", name);
	snprintf(text, sizeof(text), "%s%s", kind == POL_NAME_WILD ? "*." : "", name);
	assert_int_equal(pol_builder_add(b, pol, &p, &o), 0);
}

void
add_addr(struct pol_builder *b, uint32_t pol, const char *addr, unsigned int plen,
    uint16_t port, enum pol_list list)
{
	struct pol_pattern p = { .port = port, .plen = (uint8_t)plen };
	struct pol_rule o = {
		.key = list == POL_LIST_ALLOW ? "policies.t.allow" : "policies.t.deny",
		.pattern = addr, .file = "t.yaml", .index = add_line, .line = add_line + 1,
		.col = 7, .list = list,
	};

	add_line++;
	if (inet_pton(AF_INET, addr, p.addr) == 1) {
		p.kind = POL_ADDR4;
	} else {
		assert_int_equal(inet_pton(AF_INET6, addr, p.addr), 1);
		p.kind = POL_ADDR6;
	}
	assert_int_equal(pol_builder_add(b, pol, &p, &o), 0);
}

struct pol_builder *
builder_p(void)
{
	struct pol_builder *b = pol_builder_new();

	add_line = 0;
	assert_int_equal(pol_builder_policy(b, "p"), 0);
	return b;
}

struct pol_set *
build(struct pol_builder *b)
{
	struct pol_set *s = pol_builder_build(b);

	pol_builder_free(b);
	assert_non_null(s);
	return s;
}

enum pol_verdict
name_v(const struct pol_set *s, uint32_t pol, const char *name, uint8_t proto, uint16_t port)
{
	return pol_match_name(s, pol, name, strlen(name), proto, port, NULL);
}

enum pol_verdict
addr_v(const struct pol_set *s, uint32_t pol, const char *text, uint8_t proto, uint16_t port,
    const struct pol_rule **rule)
{
	uint8_t a[16];

	if (inet_pton(AF_INET, text, a) == 1)
		return pol_match_addr(s, pol, a, 4, proto, port, rule);
	assert_int_equal(inet_pton(AF_INET6, text, a), 1);
	return pol_match_addr(s, pol, a, 16, proto, port, rule);
}
