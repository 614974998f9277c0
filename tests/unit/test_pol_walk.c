/*
 * policy/match's walk of a name for its keys (pol_walk.h), eight bytes at a time, held to
 * the byte-by-byte walk it replaced: the same probes in the same order, the same end
 * (where a name stops being a host name), and each probe's hash the one the builder gives
 * that key (pol_hash_key()), over edge-case and many random names. Then whole matches
 * through the public API: patterns found whatever the case of the name asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pol_walk.h"

#define PROBES_MAX	(POL_NAME_MAX + 2)

struct probe {
	uint64_t hash;		/* finished, as pol_probe() is given it */
	uint8_t kind;
	size_t off, len;
};

struct probes {
	struct probe p[PROBES_MAX];
	unsigned int n;
};

static const uint32_t policy = 3;

static void
record(void *arg, uint64_t hash, uint8_t kind, size_t off, size_t len)
{
	struct probes *r = arg;

	assert_true(r->n < PROBES_MAX);
	r->p[r->n++] = (struct probe){ .hash = pol_hash_final(hash, policy, kind), .kind = kind,
		.off = off, .len = len };
}

/*
 * The walk as it was, a byte at a time right to left, each key hashed on its own by the
 * builder's general path: what pol_name_walk() must do.
 */
static bool
walk_bytes(const char *name, size_t len, bool wild, struct probes *r)
{
	size_t label = 0;

	r->n = 0;
	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > POL_NAME_MAX)
		return false;
	for (size_t i = len; i-- > 0;) {
		if (name[i] == '.') {
			if (label == 0 || label > POL_LABEL_MAX)
				return false;
			if (wild)
				r->p[r->n++] = (struct probe){ .hash = pol_hash_key(
				    (const uint8_t *)name + i + 1, len - i - 1, policy,
				    POL_NAME_WILD), .kind = POL_NAME_WILD, .off = i + 1,
				    .len = len - i - 1 };
			label = 0;
		} else {
			label++;
		}
	}
	if (label == 0 || label > POL_LABEL_MAX)
		return false;
	r->p[r->n++] = (struct probe){ .hash = pol_hash_key((const uint8_t *)name, len, policy,
	    POL_NAME_EXACT), .kind = POL_NAME_EXACT, .off = 0, .len = len };
	return true;
}

static unsigned int compared;

/* name (len bytes) walked both ways, with and without wildcards: the same probes. */
static void
same_walk(const char *name, size_t len)
{
	struct probes fast, slow;

	for (int wild = 0; wild <= 1; wild++) {
		bool want = walk_bytes(name, len, wild, &slow), got;

		fast.n = 0;
		got = pol_name_walk(name, len, wild, record, &fast);
		if (got != want || fast.n != slow.n)
			fail_msg("name of %zu bytes '%.*s' wild %d: %d with %u probes, want %d "
			    "with %u", len, (int)len, name, wild, got, fast.n, want, slow.n);
		for (unsigned int i = 0; i < fast.n; i++) {
			const struct probe *f = &fast.p[i], *s = &slow.p[i];

			if (f->hash != s->hash || f->kind != s->kind || f->off != s->off ||
			    f->len != s->len)
				fail_msg("name '%.*s' wild %d probe %u: kind %u at %zu+%zu hash "
				    "%016llx, want kind %u at %zu+%zu hash %016llx", (int)len,
				    name, wild, i, f->kind, f->off, f->len,
				    (unsigned long long)f->hash, s->kind, s->off, s->len,
				    (unsigned long long)s->hash);
		}
		compared++;
	}
}

/* name in a buffer of exactly its length, so that a read past it is valgrind's to see */
static void
same_walk_exact(const char *name, size_t len)
{
	char *copy = malloc(len > 0 ? len : 1);

	assert_non_null(copy);
	memcpy(copy, name, len);
	same_walk(copy, len);
	free(copy);
}

static void
same_walk_str(const char *name)
{
	same_walk_exact(name, strlen(name));
}

/* labels of the given lengths joined by dots, letters cycling in both cases */
static size_t
labels(char *out, size_t cap, const unsigned int *lens, unsigned int n)
{
	size_t at = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (i > 0 && at < cap)
			out[at++] = '.';
		for (unsigned int j = 0; j < lens[i] && at < cap; j++)
			out[at++] = (char)((j % 2 ? 'a' : 'A') + (i + j) % 26);
	}
	return at;
}

static void
test_walk_edges(void **state)
{
	static const char *const names[] = {
		"", ".", "..", "a", "a.", "a..", ".a", "a.b", "A.B.", "a..b", "-", "_._",
		"www.Example.COM", "www.example.com.", "a.b.c.d.e.f.g.h.i.j", "abcdefg",
		"abcdefgh", "abcdefghi", "abcdefg.", "abcdefgh.", ".abcdefgh", "abcdefg.h",
		"abcdefgh.ijklmnop", "a.bcdefghi", "ab.cdefghij.klmnopq.rs", "@[`{.AZaz",
		"x\\.y.example.com", "\\000.example", "\x80\xae.\xc1.example.ORG",
		"\xff\xff\xff\xff\xff\xff\xff\xff.z", "........", "a.......b",
	};
	/* label lengths, a name each: 63 is a label's most, 64 one too many, 0 empty */
	static const struct {
		unsigned int n, len[5];
	} shapes[] = {
		{ 1, { 63 } }, { 1, { 64 } }, { 4, { 63, 63, 63, 61 } }, { 4, { 63, 63, 63, 62 } },
		{ 4, { 62, 63, 63, 63 } }, { 4, { 1, 63, 63, 63 } }, { 2, { 64, 1 } },
		{ 2, { 1, 64 } }, { 3, { 7, 7, 7 } }, { 3, { 8, 8, 8 } }, { 2, { 15, 16 } },
		{ 3, { 63, 0, 1 } }, { 2, { 0, 5 } }, { 2, { 5, 0 } }, { 4, { 63, 63, 63, 63 } },
		{ 5, { 1, 1, 1, 1, 1 } }, { 5, { 9, 17, 25, 33, 41 } },
	};
	char buf[600];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		same_walk_str(names[i]);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		size_t len = labels(buf, sizeof(buf), shapes[i].len, shapes[i].n);

		same_walk_exact(buf, len);
		buf[len] = '.';
		same_walk_exact(buf, len + 1);
	}
	/* around the name's limit: 253 bytes and 254, with and without a trailing dot */
	for (size_t len = 248; len <= 258; len++) {
		for (size_t i = 0; i < len; i++)
			buf[i] = i % 40 == 39 ? '.' : (char)('a' + i % 26);
		same_walk_exact(buf, len);
		buf[len - 1] = '.';
		same_walk_exact(buf, len);
	}
	/* every dot position in names of every length to 24, each word boundary crossed */
	for (size_t len = 1; len <= 24; len++) {
		for (size_t d = 0; d < len; d++) {
			for (size_t i = 0; i < len; i++)
				buf[i] = i == d ? '.' : (char)('A' + (i * 7) % 58);
			same_walk_exact(buf, len);
		}
	}
}

/* xorshift: the same names each run */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void
test_walk_random(void **state)
{
	static const char alphabet[] = "abcxyzABCXYZ019-_.@[`{\\\x80\xae\xc1\xda\xff";
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	char buf[300];

	(void)state;
	compared = 0;
	for (unsigned int round = 0; round < 200000; round++) {
		size_t len = 0, cap = rnd(&seed) % 4 == 0 ? 260 : 40;

		len = (size_t)(rnd(&seed) % (cap + 1));
		if (rnd(&seed) % 2) {
			/* mostly host-like: labels of 1..64 bytes */
			size_t at = 0;

			while (at < len) {
				size_t l = 1 + (size_t)(rnd(&seed) % (rnd(&seed) % 8 == 0 ? 64 : 12));

				for (size_t j = 0; j < l && at < len; j++)
					buf[at++] = alphabet[rnd(&seed) % 12];
				if (at < len)
					buf[at++] = '.';
			}
		} else {
			for (size_t i = 0; i < len; i++)
				buf[i] = alphabet[rnd(&seed) % (sizeof(alphabet) - 1)];
		}
		same_walk_exact(buf, len);
	}
	assert_true(compared >= 400000);
}

/*
 * The probe's compare (pol_key_eq()), which alone tells apart two names of one hash: a
 * name key equals its stored, lower-case key in any case (folded: lower case only), and
 * is unequal when any one byte differs, at every length to past four words. The unkeyed
 * hash lets a name be picked to collide, so the compare is all that stands in its way.
 */
static void
test_key_eq(void **state)
{
	char stored[40], key[40];
	uint64_t seed = 99;

	(void)state;
	for (size_t len = 0; len <= sizeof(stored); len++) {
		for (size_t i = 0; i < len; i++)
			stored[i] = (char)("ab.-_09yz"[rnd(&seed) % 9]);
		memcpy(key, stored, len);
		for (int folded = 0; folded <= 1; folded++) {
			assert_true(pol_key_eq(stored, key, len, POL_NAME_EXACT, folded));
			for (size_t i = 0; i < len; i++) {
				key[i] ^= 0x01;	/* another byte, of any kind */
				assert_false(pol_key_eq(stored, key, len, POL_NAME_WILD, folded));
				key[i] ^= 0x01;
				if (key[i] >= 'a' && key[i] <= 'z') {
					key[i] ^= 0x20;	/* a capital: the same name unfolded */
					assert_true(pol_key_eq(stored, key, len, POL_NAME_EXACT,
					    folded) == !folded);
					key[i] ^= 0x20;
				}
			}
		}
		for (size_t i = 0; i < len; i++) {
			key[i] ^= 0x20;	/* an address key is bytes: no case */
			assert_false(pol_key_eq(stored, key, len, POL_ADDR6, false));
			key[i] ^= 0x20;
		}
	}
}

static void
add_name(struct pol_builder *b, enum pol_kind kind, const char *name, unsigned int line)
{
	struct pol_pattern p = { .kind = kind };
	struct pol_rule o = {
		.key = "policies.t.allow", .pattern = name, .file = "t.yaml", .index = line,
		.line = line + 1, .col = 7, .list = POL_LIST_ALLOW,
	};

	assert_true(strlen(name) < sizeof(p.name));
	memcpy(p.name, name, strlen(name) + 1);
	assert_int_equal(pol_builder_add(b, 0, &p, &o), 0);
}

/* name with its letters' case flipped where bits says */
static void
spell(char *out, const char *name, uint64_t bits)
{
	size_t i = 0;

	for (; name[i] != '\0'; i++) {
		char c = name[i];

		if (bits >> (i % 64) & 1)
			c = c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
		out[i] = c;
	}
	out[i] = '\0';
}

/*
 * Patterns of every length to past two words, exact and wildcard, found by the walk in
 * names spelled in any case and under deeper labels; a name one byte off is not.
 */
static void
test_walk_matches(void **state)
{
	struct pol_builder *b = pol_builder_new();
	const struct pol_rule *rule;
	char names[40][64], asked[128];
	struct pol_set *s;
	uint64_t seed = 12345;

	(void)state;
	assert_non_null(b);
	assert_int_equal(pol_builder_policy(b, "t"), 0);
	for (unsigned int i = 0; i < 40; i++) {
		size_t len = 1 + i % 20, at = 0;

		for (; at < len; at++)
			names[i][at] = at % 6 == 5 && at + 1 < len ? '.' : (char)('a' + (i + at) % 26);
		memcpy(names[i] + at, ".net", 5);
		add_name(b, i % 2 ? POL_NAME_WILD : POL_NAME_EXACT, names[i], i);
	}
	s = pol_builder_build(b);
	assert_non_null(s);
	pol_builder_free(b);
	for (unsigned int i = 0; i < 40; i++) {
		for (unsigned int k = 0; k < 8; k++) {
			spell(asked + (i % 2 ? 4 : 0), names[i], rnd(&seed));
			if (i % 2)
				memcpy(asked, "Ab3.", 4);
			assert_int_equal(pol_match_name(s, 0, asked, strlen(asked), POL_PROTO_TCP, 443,
			    &rule), POL_ALLOW);
			assert_int_equal(rule->index, i);
		}
		memcpy(asked, names[i], strlen(names[i]));
		memcpy(asked + strlen(names[i]), "x", 2);
		assert_int_equal(pol_match_name(s, 0, asked, strlen(asked), POL_PROTO_TCP, 443,
		    &rule), POL_NO_MATCH);
	}
	pol_set_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_edges),
		cmocka_unit_test(test_walk_random),
		cmocka_unit_test(test_walk_matches),
		cmocka_unit_test(test_key_eq),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
