/*
 * dp_gen_is_vm_addr() answers from a table built with the generation; it replaced a scan
 * of every VM, kept here (t_scan) as the reference. Every answer must be the scan's: for
 * 0, 1, 16 and every slot's worth of VMs, with IPv4 and IPv6 addresses, VMs with neither,
 * two VMs sharing one, slots a reload emptied, and addresses chosen to look alike to the
 * table (an IPv4 address's key bytes read as IPv6, neighbours, random ones). The same table
 * holds the resolvers for dp_gen_addr_kind(): its every answer is the scan's and
 * dp_gen_is_resolver()'s, with resolvers that are VMs' addresses too and ones that are not.
 * The filter in front of that table has a bit for each of its entries and no other.
 * And the (VLAN, MAC) index: each VM found by its MAC as a frame holds it, no other MAC found.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "dp.h"
#include "dp_gen.h"
#include "dp_gen_build.h"
#include "dp_hash.h"
#include "policy/load.h"
#include "t_eal.h"

#define T_RANDOM	4096	/* random addresses a generation is asked, each family */
#define T_MAX_VMS	4096	/* the most VMs a case configures (dataplane.max_vms) */

/* The scan dp_gen_is_vm_addr() was, word for word: what the table must answer. */
static bool
t_scan(const struct dp_gen *g, uint8_t family, const uint8_t *addr)
{
	for (uint16_t i = 0; i < g->nvms; i++) {
		const struct dp_vm *v = &g->vms[i];

		if (!v->present)
			continue;
		if (family == 4 && v->id.has4 && memcmp(v->id.ip4, addr, 4) == 0)
			return true;
		if (family == 6 && v->id.has6 && memcmp(v->id.ip6, addr, 16) == 0)
			return true;
	}
	return false;
}

struct t_tally {
	unsigned int asked, yes;
};

static void
t_ask(const struct dp_gen *g, uint8_t family, const uint8_t *addr, struct t_tally *t)
{
	bool want = t_scan(g, family, addr), resolver = dp_gen_is_resolver(g, family, addr);
	uint8_t kind = (want ? DP_ADDR_VM : 0) | (resolver ? DP_ADDR_RESOLVER : 0);

	if (dp_gen_is_vm_addr(g, family, addr) != want)
		fail_msg("family %u %02x%02x%02x%02x..%02x: table says %d, scan %d", family,
		    addr[0], addr[1], addr[2], addr[3], addr[15], !want, want);
	if (dp_gen_addr_kind(g, family, addr) != kind)
		fail_msg("family %u %02x%02x%02x%02x..%02x: kind %#x, scans %#x", family,
		    addr[0], addr[1], addr[2], addr[3], addr[15],
		    dp_gen_addr_kind(g, family, addr), kind);
	t->asked++;
	t->yes += want;
}

/*
 * VM i of a configuration: a fifth IPv4 only, a fifth IPv6 only, a fifth neither, the rest
 * both. Sequential addresses (as operators number VMs) in the usual prefixes, every
 * seventh VM's IPv6 address the bytes of its IPv4 one then zeros (the same key words as
 * that IPv4 address), and every eleventh sharing VM 0's addresses. Every third is on a
 * VLAN (100-108).
 */
static void
t_vm(struct pol_vm *v, uint32_t i, char *name, size_t cap)
{
	uint32_t a = i % 11 == 10 ? 0 : i;

	snprintf(name, cap, "vm%u", i);
	*v = (struct pol_vm){ .name = name, .id = { .mac = { 0x02, 0, 0, 0, (uint8_t)(i >> 8),
		(uint8_t)i }, .has4 = i % 5 != 1 && i % 5 != 2, .has6 = i % 5 != 0 && i % 5 != 2,
		.ip4 = { 10, 20, (uint8_t)(a >> 8), (uint8_t)a },
		.vlan = (uint16_t)(i % 3 == 2 ? 100 + i % 9 : 0) } };
	if (i % 7 == 3) {
		memcpy(v->id.ip6, v->id.ip4, 4);
	} else {
		v->id.ip6[0] = 0xfd;
		v->id.ip6[14] = (uint8_t)(a >> 8);
		v->id.ip6[15] = (uint8_t)a;
	}
}

/* Every address the generation's VMs have, its look-alikes, and random ones. */
static struct t_tally
t_ask_all(const struct dp_gen *g, const struct pol_config *cfg)
{
	static uint8_t rnd[T_RANDOM][16];
	struct t_tally t = { 0 };
	uint8_t a[16];

	for (size_t i = 0; i < cfg->nvms; i++) {
		const struct pol_vm_id *id = &cfg->vms[i].id;

		for (int d = -1; d <= 1; d++) {
			memcpy(a, id->ip4, 4);
			memset(a + 4, 0, 12);
			a[3] = (uint8_t)(a[3] + d);
			t_ask(g, 4, a, &t);
			t_ask(g, 6, a, &t);	/* an IPv4 address's key, asked as IPv6 */
			memcpy(a, id->ip6, 16);
			a[15] = (uint8_t)(a[15] + d);
			t_ask(g, 6, a, &t);
			t_ask(g, 4, a, &t);	/* the first four bytes, asked as IPv4 */
			t_ask(g, 0, a, &t);	/* no family: the scan says no */
			t_ask(g, 41, a, &t);
		}
	}
	for (size_t i = 0; i < cfg->nresolvers; i++) {
		t_ask(g, 4, cfg->resolvers[i].a, &t);
		t_ask(g, 6, cfg->resolvers[i].a, &t);
	}
	assert_int_equal(getrandom(rnd, sizeof(rnd), 0), (ssize_t)sizeof(rnd));
	for (size_t i = 0; i < T_RANDOM; i++) {
		t_ask(g, 4, rnd[i], &t);
		t_ask(g, 6, rnd[i], &t);
	}
	return t;
}

/*
 * The resolvers of a configuration of n VMs: VM 0's and VM 3's addresses (VM 3's IPv6
 * one is its IPv4 one's bytes), a neighbour of VM 1's IPv6 one, and two no VM has.
 */
static void
t_resolvers(struct pol_config *cfg, uint32_t n)
{
	static struct pol_addr r[DP_RESOLVERS_MAX];
	struct pol_vm v;
	char name[16];

	memset(r, 0, sizeof(r));
	t_vm(&v, 0, name, sizeof(name));
	r[0].family = 4;
	memcpy(r[0].a, v.id.ip4, 4);
	t_vm(&v, 3, name, sizeof(name));
	r[1].family = 4;
	memcpy(r[1].a, v.id.ip4, 4);
	r[2].family = 6;
	memcpy(r[2].a, v.id.ip6, 16);
	t_vm(&v, 1, name, sizeof(name));
	r[3].family = 6;
	memcpy(r[3].a, v.id.ip6, 16);
	r[3].a[15] ^= 0x80;
	r[4] = (struct pol_addr){ .family = 4, .a = { 192, 0, 2, 53 } };
	r[5] = (struct pol_addr){ .family = 6, .a = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x53 } };
	cfg->resolvers = r;
	cfg->nresolvers = n % 2 == 0 ? 6 : 3;	/* and a configuration with fewer */
}

/* A configuration of n VMs (t_vm), every keep-th of them kept (1: all). */
static struct pol_config *
t_config(uint32_t n, uint32_t keep)
{
	static char names[T_MAX_VMS][16];
	struct pol_config *cfg = calloc(1, sizeof(*cfg));

	assert_non_null(cfg);
	assert_true(n <= T_MAX_VMS);
	cfg->max_vms = n > 1024 ? n : 1024;	/* dataplane.max_vms, 1024 unless more are asked */
	cfg->vms = calloc(n ? n : 1, sizeof(cfg->vms[0]));
	assert_non_null(cfg->vms);
	for (uint32_t i = 0; i < n; i++)
		if (i % keep == 0)
			t_vm(&cfg->vms[cfg->nvms++], i, names[i], sizeof(names[i]));
	t_resolvers(cfg, n);
	return cfg;
}

static void
t_config_free(struct pol_config *cfg)
{
	free(cfg->vms);
	free(cfg);
}

/*
 * The longest run of taken entries, the most steps a probe takes: a hash that packed the
 * operators' sequential addresses together would make every answer pay for it.
 */
static uint32_t
t_longest_run(const struct dp_gen *g)
{
	uint32_t longest = 0, run = 0;

	/* twice round, so that a run through the end is counted whole */
	for (uint32_t i = 0; i < 2 * (g->vm_addr_mask + 1); i++) {
		run = g->vm_addr_family[i & g->vm_addr_mask] != 0 ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	return longest;
}

/*
 * The filter in front of the table (vm_addr_seen): every entry's bit is set, or the inline
 * dp_gen_addr_kind() would answer 0 for a VM's address without a probe; and no more bits
 * than entries, or it would spare an answer no probe. Its bits set.
 */
static unsigned int
t_seen(const struct dp_gen *g)
{
	unsigned int entries = 0, set = 0;

	for (uint32_t i = 0; i <= g->vm_addr_mask; i++) {
		uint8_t family = g->vm_addr_family[i] & 0x0f;
		uint32_t b;

		if (family == 0)
			continue;
		entries++;
		b = dp_gen_addr_seen_bit(family, (const uint8_t *)g->vm_addrs[i].w);
		assert_true(g->vm_addr_seen[b / 64] >> (b % 64) & 1);
	}
	for (size_t w = 0; w < DP_ADDR_SEEN_BITS / 64; w++)
		set += (unsigned int)__builtin_popcountll(g->vm_addr_seen[w]);
	assert_true(set <= entries);
	return set;
}

/*
 * dp_gen_vm_by_mac() reads a MAC in a frame with one 8-byte load: each present VM's MAC,
 * followed by two random bytes (an ethertype, the next MAC), finds its slot; on another
 * VLAN (untagged, for a VM with one) none, and one bit off only a VM whose MAC that is.
 */
static void
t_by_mac(const struct dp_gen *g)
{
	for (uint16_t s = 0; s < g->nvms; s++) {
		uint8_t frame[8];
		int other;

		if (!g->vms[s].present)
			continue;
		memcpy(frame, g->vms[s].id.mac, 6);
		frame[6] = (uint8_t)rand();
		frame[7] = (uint8_t)rand();
		assert_int_equal(dp_gen_vm_by_mac(g, g->vms[s].id.vlan, frame), s);
		assert_int_equal(dp_gen_vm_by_mac(g, (uint16_t)(g->vms[s].id.vlan ^ 1), frame),
		    -1);
		/* untagged, a VLAN's VM is no VM: the lean check (dp_lean_vm()) asks no more */
		if (g->vms[s].id.vlan != 0)
			assert_int_equal(dp_gen_vm_by_mac(g, 0, frame), -1);
		frame[rand() % 6] ^= (uint8_t)(1u << (rand() % 8));
		other = dp_gen_vm_by_mac(g, g->vms[s].id.vlan, frame);
		assert_true(other == -1 || memcmp(g->vms[other].id.mac, frame, 6) == 0);
	}
}

/* A frame's key for a MAC is the key of the MAC alone, whatever two bytes follow it. */
static void
test_vm_key_frame(void **state)
{
	(void)state;
	for (int i = 0; i < 100000; i++) {
		uint8_t frame[8], mac[6];
		uint16_t vlan = (uint16_t)(rand() & 0xfff);

		for (int b = 0; b < 8; b++)
			frame[b] = (uint8_t)rand();
		memcpy(mac, frame, 6);
		assert_true(dp_gen_vm_key_frame(vlan, frame) == dp_gen_vm_key(vlan, mac));
		assert_true(dp_gen_vm_key(vlan, mac) != DP_VM_INDEX_EMPTY);
	}
}

static void
t_counts(uint32_t n)
{
	struct pol_config *cfg = t_config(n, 1), *fewer = t_config(n, 3);
	struct dp_gen *g, *next;
	struct t_tally t;
	size_t kept;

	assert_int_equal(dp_hash_init(), 0);	/* a fresh secret, as at a start */
	assert_non_null(g = dp_gen_create(cfg, 1, 1, NULL, NULL));
	/* a bit for each VM's two addresses and each resolver at most */
	assert_true(t_seen(g) <= 2 * n + cfg->nresolvers);
	t = t_ask_all(g, cfg);
	assert_true(n == 0 ? t.yes == 0 : t.yes > n / 2);
	t_by_mac(g);
	print_message("%u VMs: %u asked, %u theirs, longest probe %u\n", n, t.asked, t.yes,
	    t_longest_run(g));
	assert_true(t_longest_run(g) <= 24);
	/* a reload that drops two VMs of three: their slots stay, empty, and are not asked */
	assert_non_null(next = dp_gen_create(fewer, 2, 1, g, NULL));
	assert_int_equal(next->nvms, g->nvms);
	/* each VM kept (found by name) is in the slot it had, the rest empty */
	kept = 0;
	for (uint16_t s = 0; s < g->nvms; s++) {
		if (!next->vms[s].present)
			continue;
		assert_string_equal(next->vms[s].name, g->vms[s].name);
		kept++;
	}
	assert_int_equal(kept, fewer->nvms);
	assert_true(t_seen(next) <= 2 * n + fewer->nresolvers);
	t = t_ask_all(next, cfg);
	assert_true(n == 0 ? t.yes == 0 : t.yes > n / 6);
	dp_gen_free(next);
	dp_gen_free(g);
	t_config_free(fewer);
	t_config_free(cfg);
}

static void
test_no_vms(void **state)
{
	(void)state;
	t_counts(0);
}

static void
test_one_vm(void **state)
{
	(void)state;
	t_counts(1);
}

static void
test_16_vms(void **state)
{
	(void)state;
	t_counts(16);
}

/* The longest run of taken entries in the (vlan, MAC) index: the most steps its probe takes. */
static uint32_t
t_longest_mac_run(const struct dp_gen *g)
{
	uint32_t longest = 0, run = 0;

	for (uint32_t i = 0; i < 2 * (g->vm_index_mask + 1); i++) {
		run = g->vm_keys[i & g->vm_index_mask] != DP_VM_INDEX_EMPTY ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	return longest;
}

/*
 * 1,000 VMs in a progression: one MAC, each on a VLAN of its own (1-1000: clones, one a
 * tenant); MACs that differ in their first bytes only; MACs numbered in their last two
 * bytes. A few multipliers in a hundred put such keys in long runs, so each shape is built
 * under many generations' secrets: each VM is found, and no run is over the builder's
 * bound. A probe start from the product's high word put the first shape in one run of
 * 1,000; a builder that keeps its first multiplier leaves runs of 30 to 300.
 */
static void
test_mac_index_spread(void **state)
{
	struct pol_config *cfg = t_config(1000, 1);
	uint32_t worst[3] = { 0 };
	struct dp_gen *g;

	(void)state;
	assert_int_equal(dp_hash_init(), 0);
	for (uint32_t id = 1; id <= 64; id++) {
		for (int shape = 0; shape < 3; shape++) {
			for (uint32_t i = 0; i < cfg->nvms; i++) {
				uint8_t *mac = cfg->vms[i].id.mac;

				memcpy(mac, "\x52\x54\x00\x12\x34\x56", 6);
				if (shape == 1) {
					mac[0] = (uint8_t)(i << 1);	/* unicast */
					mac[1] = (uint8_t)(i >> 7);
				} else if (shape == 2) {
					mac[4] = (uint8_t)(i >> 8);
					mac[5] = (uint8_t)i;
				}
				cfg->vms[i].id.vlan = shape == 0 ? (uint16_t)(1 + i) : 0;
			}
			assert_non_null(g = dp_gen_create(cfg, id, 1, NULL, NULL));
			for (uint16_t sl = 0; sl < g->nvms; sl++)
				if (g->vms[sl].present)
					assert_int_equal(dp_gen_vm_by_mac(g, g->vms[sl].id.vlan,
					    g->vms[sl].id.mac), sl);
			if (t_longest_mac_run(g) > worst[shape])
				worst[shape] = t_longest_mac_run(g);
			/* 4,096 entries: bits + 4 */
			assert_true(t_longest_mac_run(g) <= 16);
			dp_gen_free(g);
		}
	}
	print_message("longest (vlan, MAC) runs over 64 secrets: %u, %u, %u\n", worst[0],
	    worst[1], worst[2]);
	t_config_free(cfg);
}

/* Every slot of the default max_vms: the table at its fullest, for several secrets. */
static void
test_every_slot(void **state)
{
	(void)state;
	for (int round = 0; round < 4; round++)
		t_counts(1024);
}

/* And of max_vms 4096: the tables grow with it, so probes stay as short. */
static void
test_every_slot_4096(void **state)
{
	(void)state;
	t_counts(T_MAX_VMS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vm_key_frame),
		cmocka_unit_test(test_no_vms),
		cmocka_unit_test(test_one_vm),
		cmocka_unit_test(test_16_vms),
		cmocka_unit_test(test_every_slot),
		cmocka_unit_test(test_mac_index_spread),
		cmocka_unit_test(test_every_slot_4096),
	};

	return T_EAL_RUN("test_dp_gen_vm_addr", "256", tests);
}
