/*
 * The l3fwd baseline's tables: an IPv4 rte_lpm and an IPv6 rte_lpm6 of prefixes drawn
 * (reproducibly) with the prefix lengths an Internet routing table has, all to the uplink,
 * a default route each (two /1s: rte_lpm takes no /0), and a host route per VM address
 * (from the traffic's manifest) to the VM port, so that each side's frames are routed to
 * the other port by the lookup.
 *
 * The sizes: rte_lpm's add searches the rules of its prefix length one by one, so a full
 * Internet table (about a million IPv4 prefixes) would take hours to load; 65,536 IPv4
 * prefixes (an enterprise or data-centre FIB) take about a second. The lookup's cost does
 * not grow with the rules anyway: it is one read of the 64 MiB tbl24 (and a tbl8 for
 * routes longer than /24: the VMs' host routes), 4 KiB pages here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <json-c/json.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <rte_malloc.h>

#include "bench_base.h"
#include "bench_base_routes.h"
#include "bench_stat.h"

#define BENCH_L3FWD_ROUTES4	65536
#define BENCH_L3FWD_ROUTES6	8192
#define BENCH_L3FWD_TBL8_4	1024	/* groups: the VMs' /32s and what a /25-/32 needs */
#define BENCH_L3FWD_TBL8_6	40000	/* about 2.3 a random /29-/48, and the VMs' /128s */

/* A prefix length and its share in thousandths (IPv4: the table's /24s are most of it). */
struct bench_len_share {
	uint8_t len;
	uint16_t per_mille;
};

static const struct bench_len_share bench_len4[] = {
	{ 24, 590 }, { 23, 95 }, { 22, 115 }, { 21, 45 }, { 20, 45 }, { 19, 26 }, { 18, 13 },
	{ 17, 8 }, { 16, 14 }, { 15, 5 }, { 14, 4 }, { 13, 3 }, { 12, 2 }, { 11, 1 }, { 8, 34 },
};

static const struct bench_len_share bench_len6[] = {
	{ 48, 500 }, { 32, 150 }, { 44, 100 }, { 40, 100 }, { 36, 50 }, { 29, 50 }, { 46, 50 },
};

static uint8_t
bench_draw_len(const struct bench_len_share *s, size_t n, uint64_t *rng)
{
	unsigned int x = bench_rnd(rng) % 1000;

	for (size_t i = 0; i < n; i++) {
		if (x < s[i].per_mille)
			return s[i].len;
		x -= s[i].per_mille;
	}
	return s[n - 1].len;
}

/* The IPv4 routes; 0 or the first add's error (negative). */
static int
bench_routes4(struct rte_lpm *lpm, const struct bench_l3fwd_hosts *h)
{
	uint64_t rng = 0x2545f4914f6cdd1dULL;
	/* the default route as two halves: rte_lpm takes no /0 */
	int rc = rte_lpm_add(lpm, 0, 1, 1) != 0 ? -EINVAL : rte_lpm_add(lpm, 1u << 31, 1, 1);

	for (unsigned int i = 0; rc == 0 && i < BENCH_L3FWD_ROUTES4; i++) {
		uint8_t len = bench_draw_len(bench_len4, RTE_DIM(bench_len4), &rng);

		rc = rte_lpm_add(lpm, bench_rnd(&rng), len, 1);
	}
	for (unsigned int i = 0; rc == 0 && i < h->n4; i++)
		rc = rte_lpm_add(lpm, h->ip4[i], 32, 0);
	return rc;
}

/* The IPv6 routes; 0 or the first add's error (negative). */
static int
bench_routes6(struct rte_lpm6 *lpm, const struct bench_l3fwd_hosts *h)
{
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	uint8_t ip[16] = { 0 };
	int rc = rte_lpm6_add(lpm, ip, 1, 1);

	ip[0] = 0x80;
	rc = rc != 0 ? rc : rte_lpm6_add(lpm, ip, 1, 1);
	for (unsigned int i = 0; rc == 0 && i < BENCH_L3FWD_ROUTES6; i++) {
		uint8_t len = bench_draw_len(bench_len6, RTE_DIM(bench_len6), &rng);

		for (int k = 0; k < 16; k += 4) {
			uint32_t r = bench_rnd(&rng);

			memcpy(ip + k, &r, 4);
		}
		ip[0] = (uint8_t)(0x20 | (ip[0] & 0x1f));	/* global unicast, 2000::/3 */
		rc = rte_lpm6_add(lpm, ip, len, 1);
	}
	for (unsigned int i = 0; rc == 0 && i < h->n6; i++)
		rc = rte_lpm6_add(lpm, h->ip6[i], 128, 0);
	return rc;
}

struct bench_l3fwd *
bench_l3fwd_new(const uint16_t ports[2], const struct bench_l3fwd_hosts *h, int socket)
{
	struct rte_lpm_config c4 = { .max_rules = BENCH_L3FWD_ROUTES4 + 64 + 1,
	    .number_tbl8s = BENCH_L3FWD_TBL8_4 };
	struct rte_lpm6_config c6 = { .max_rules = BENCH_L3FWD_ROUTES6 + 64 + 1,
	    .number_tbl8s = BENCH_L3FWD_TBL8_6 };
	struct bench_l3fwd *l = rte_zmalloc_socket("bench_l3fwd", sizeof(*l), 0, socket);
	int rc;

	if (l == NULL)
		goto fail;
	for (int p = 0; p < 2; p++) {
		struct rte_ether_addr own;

		l->port[p] = ports[p];
		/* l3fwd's default next hop: 02:00:00:00:00:<port>; then the port's own MAC */
		memcpy(l->eth[p], (uint8_t[6]){ 0x02, 0, 0, 0, 0, (uint8_t)ports[p] }, 6);
		rte_eth_macaddr_get(ports[p], &own);
		memcpy(l->eth[p] + 6, own.addr_bytes, 6);
	}
	if ((l->lpm4 = rte_lpm_create("bench_lpm4", socket, &c4)) == NULL ||
	    (l->lpm6 = rte_lpm6_create("bench_lpm6", socket, &c6)) == NULL)
		goto fail;
	if ((rc = bench_routes4(l->lpm4, h)) != 0 || (rc = bench_routes6(l->lpm6, h)) != 0) {
		rte_errno = -rc;
		goto fail;
	}
	return l;
fail:
	fprintf(stderr, "bench_l3fwd: the route tables: %s\n", rte_strerror(rte_errno));
	bench_l3fwd_free(l);
	return NULL;
}

void
bench_l3fwd_free(struct bench_l3fwd *l)
{
	if (l == NULL)
		return;
	rte_lpm_free(l->lpm4);
	rte_lpm6_free(l->lpm6);
	rte_free(l);
}

int
bench_l3fwd_hosts_load(struct bench_l3fwd_hosts *h, const char *traffic)
{
	char path[4096];
	struct json_object *root, *vms, *v;

	memset(h, 0, sizeof(*h));
	snprintf(path, sizeof(path), "%s/manifest.json", traffic);
	if ((root = json_object_from_file(path)) == NULL ||
	    !json_object_object_get_ex(root, "vms", &vms)) {
		fprintf(stderr, "bench_l3fwd: %s: no vms\n", path);
		json_object_put(root);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(vms); i++) {
		struct json_object *vm = json_object_array_get_idx(vms, i);
		struct in_addr a4;

		if (json_object_object_get_ex(vm, "ip4", &v) && h->n4 < RTE_DIM(h->ip4) &&
		    inet_pton(AF_INET, json_object_get_string(v), &a4) == 1)
			h->ip4[h->n4++] = ntohl(a4.s_addr);
		if (json_object_object_get_ex(vm, "ip6", &v) && h->n6 < RTE_DIM(h->ip6) &&
		    json_object_is_type(v, json_type_string) &&
		    inet_pton(AF_INET6, json_object_get_string(v), h->ip6[h->n6]) == 1)
			h->n6++;
	}
	json_object_put(root);
	return h->n4 > 0 ? 0 : -1;
}
