/*
 * Drives control/nft/include/nft.h from test_nft.py, one command per line on stdin, one reply line on
 * stdout ("ok RC [...]" or "err RC message"). Run it inside a network namespace of the
 * test's own: it programs that namespace's nftables.
 *
 *	open TABLE [NAME,MAC,VLAN,IP4|-,IP6|- ...]
 *	build [ELEM ...]		ELEM: VM,ADDR,PROTO,PORT,TIMEOUT_MS (PROTO 0: address form)
 *	bind ELEM ...
 *	refill VM[,VM...] [ELEM ...]	empty those VMs' sets and fill them with ELEM...
 *	check				ok STATE
 *	stats				ok elements=N errors=N batches=N builds=N listings=N
 *	count				ok N: the elements the sets hold, counted by the kernel
 *	destroy | close | quit
 *	bench BATCH ITERS		RESULT line: nft_bind latency of BATCH new elements
 *	benchcheck ITERS		RESULT line: nft_check latency, nothing changed
 *	benchbuild N			RESULT line: nft_build time with N elements over all VMs
 *	burst N BATCH			RESULT line: N elements of VM 0 through nft_bind, BATCH a call
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nft.h"

#define DRV_MAX_VMS	256
#define DRV_MAX_ELEMS	4096

static struct nft_ctx *ctx;
static uint16_t nvms;
static char vm_names[DRV_MAX_VMS][NFT_NAME_MAX];

static void
reply(int rc)
{
	if (rc < 0)
		printf("err %d %s\n", rc, strerror(-rc));
	else
		printf("ok %d\n", rc);
}

static bool
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return true;
}

/* NAME,MAC,VLAN,IP4|-,IP6|- */
static bool
parse_vm(char *s, struct nft_vm *v, char *name)
{
	char *f[5], *save = NULL;

	for (int i = 0; i < 5; i++) {
		if ((f[i] = strtok_r(i == 0 ? s : NULL, ",", &save)) == NULL)
			return false;
	}
	memset(v, 0, sizeof(*v));
	snprintf(name, NFT_NAME_MAX, "%s", f[0]);
	v->name = name;
	v->id.vlan = (uint16_t)strtoul(f[2], NULL, 10);
	v->id.has4 = strcmp(f[3], "-") != 0;
	v->id.has6 = strcmp(f[4], "-") != 0;
	return parse_mac(f[1], v->id.mac) &&
	    (!v->id.has4 || inet_pton(AF_INET, f[3], v->id.ip4) == 1) &&
	    (!v->id.has6 || inet_pton(AF_INET6, f[4], v->id.ip6) == 1);
}

/* VM,ADDR,PROTO,PORT,TIMEOUT_MS */
static bool
parse_elem(char *s, struct nft_elem *e)
{
	char *f[5], *save = NULL;

	for (int i = 0; i < 5; i++) {
		if ((f[i] = strtok_r(i == 0 ? s : NULL, ",", &save)) == NULL)
			return false;
	}
	memset(e, 0, sizeof(*e));
	e->vm = (uint16_t)strtoul(f[0], NULL, 10);
	e->proto = (uint8_t)strtoul(f[2], NULL, 10);
	e->port = (uint16_t)strtoul(f[3], NULL, 10);
	e->timeout_ms = (uint32_t)strtoul(f[4], NULL, 10);
	if (inet_pton(AF_INET, f[1], e->addr) == 1) {
		e->family = 4;
		return true;
	}
	e->family = 6;
	return inet_pton(AF_INET6, f[1], e->addr) == 1;
}

static size_t
parse_elems(char *rest, struct nft_elem *e, bool *ok)
{
	char *tok, *save = NULL;
	size_t n = 0;

	*ok = true;
	for (tok = strtok_r(rest, " \n", &save); tok != NULL; tok = strtok_r(NULL, " \n", &save)) {
		if (n == DRV_MAX_ELEMS || !parse_elem(tok, &e[n])) {
			*ok = false;
			return n;
		}
		n++;
	}
	return n;
}

/* "refill VM[,VM...] ELEMS...": the VMs whose sets to empty, then the elements. */
static int
cmd_refill(char *rest, struct nft_elem *elems)
{
	uint16_t vms[16];
	char *list, *tok, *save = NULL;
	size_t nrefill = 0, n;
	bool ok;

	if ((list = strtok_r(rest, " \n", &save)) == NULL)
		return -EINVAL;
	for (tok = strtok_r(list, ",", &list); tok != NULL && nrefill < 16;
	    tok = strtok_r(NULL, ",", &list))
		vms[nrefill++] = (uint16_t)strtoul(tok, NULL, 10);
	n = parse_elems(save, elems, &ok);
	return ok ? nft_refill(ctx, vms, nrefill, elems, n) : -EINVAL;
}

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Latency of nft_bind() for batch fresh elements (all in VM 0's v4 sets), iters times. */
static int
bench(size_t batch, size_t iters)
{
	static uint32_t next = 1;
	struct nft_elem *e;
	double *lat, t0;
	int rc = 0;

	e = calloc(batch, sizeof(*e));
	lat = calloc(iters, sizeof(*lat));
	if (e == NULL || lat == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t it = 0; it < iters; it++) {
		for (size_t i = 0; i < batch; i++, next++) {
			uint32_t a = htonl(0x0a000000u | next);	/* 10.0.0.0/8, fresh each */

			e[i] = (struct nft_elem){ .vm = 0, .family = 4, .timeout_ms = 300000,
			    .proto = (i & 1) ? 6 : 0, .port = (i & 1) ? 443 : 0 };
			memcpy(e[i].addr, &a, 4);
		}
		t0 = now_us();
		if ((rc = nft_bind(ctx, e, batch)) < 0)
			goto out;
		lat[it] = now_us() - t0;
	}
	qsort(lat, iters, sizeof(*lat), cmp_double);
	printf("RESULT nft_bind batch=%zu iters=%zu p50_us=%.0f p99_us=%.0f max_us=%.0f\n",
	    batch, iters, lat[iters / 2], lat[(iters * 99) / 100], lat[iters - 1]);
out:
	free(e);
	free(lat);
	return rc;
}

/*
 * A burst of n new elements for VM 0, batch per nft_bind() call as the daemon flushes them:
 * bindings open on every port, three elements each (address; address . tcp . 0; address .
 * udp . 0), binding k at 10.1.0.0 + k. bench_nft.py gives `nft -f` the same elements.
 */
static int
bench_burst(size_t n, size_t batch)
{
	static const uint8_t protos[3] = { 0, 6, 17 };
	struct nft_elem *e;
	double t0, t;
	int rc = 0;

	if (batch == 0 || (e = calloc(n, sizeof(*e))) == NULL)
		return batch == 0 ? -EINVAL : -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t a = htonl(0x0a010000u + (uint32_t)(i / 3));

		e[i] = (struct nft_elem){ .vm = 0, .family = 4, .timeout_ms = 300000,
		    .proto = protos[i % 3] };
		memcpy(e[i].addr, &a, 4);
	}
	t0 = now_us();
	for (size_t i = 0; i < n && rc == 0; i += batch)
		rc = nft_bind(ctx, e + i, n - i < batch ? n - i : batch);
	t = now_us() - t0;
	if (rc == 0)
		printf("RESULT nft_burst elements=%zu batch=%zu ms=%.1f\n", n, batch, t / 1e3);
	free(e);
	return rc;
}

/* A rebuild with n live bindings spread over every VM, v4 and v6, both forms: how long? */
static int
bench_build(size_t n)
{
	struct nft_elem *e;
	double t0;
	int rc;

	if (nvms == 0 || (e = calloc(n, sizeof(*e))) == NULL)
		return nvms == 0 ? -EINVAL : -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t a = htonl(0x0a000000u | (uint32_t)i);

		e[i] = (struct nft_elem){ .vm = (uint16_t)(i % nvms), .timeout_ms = 300000,
		    .family = (i & 2) ? 6 : 4, .proto = (i & 1) ? 17 : 0, .port = (i & 1) ? 53 : 0 };
		if (e[i].family == 6)
			e[i].addr[0] = 0x20, e[i].addr[1] = 0x01;
		memcpy(e[i].addr + (e[i].family == 6 ? 12 : 0), &a, 4);
	}
	t0 = now_us();
	rc = nft_build(ctx, e, n);
	if (rc == 0)
		printf("RESULT nft_build vms=%u elements=%zu ms=%.1f\n", nvms, n,
		    (now_us() - t0) / 1e3);
	free(e);
	return rc;
}

/* Latency of nft_check() when nothing changed: what polling it costs the event loop. */
static int
bench_check(size_t iters)
{
	double *lat, t0;
	int rc = 0;

	if ((lat = calloc(iters, sizeof(*lat))) == NULL)
		return -ENOMEM;
	for (size_t it = 0; it < iters; it++) {
		t0 = now_us();
		if ((rc = nft_check(ctx)) != NFT_INTACT) {
			rc = rc < 0 ? rc : -ESTALE;
			goto out;
		}
		lat[it] = now_us() - t0;
	}
	qsort(lat, iters, sizeof(*lat), cmp_double);
	printf("RESULT nft_check iters=%zu p50_us=%.0f p99_us=%.0f max_us=%.0f\n", iters,
	    lat[iters / 2], lat[(iters * 99) / 100], lat[iters - 1]);
out:
	free(lat);
	return rc;
}

static void
cmd_open(char *rest)
{
	struct nft_vm vms[DRV_MAX_VMS];
	char *tok, *save = NULL, *table;
	uint16_t n = 0;

	if ((table = strtok_r(rest, " \n", &save)) == NULL) {
		reply(-EINVAL);
		return;
	}
	while ((tok = strtok_r(NULL, " \n", &save)) != NULL) {
		if (n == DRV_MAX_VMS || !parse_vm(tok, &vms[n], vm_names[n])) {
			reply(-EINVAL);
			return;
		}
		n++;
	}
	nft_close(ctx);
	ctx = nft_open(table, vms, n);
	nvms = n;
	reply(ctx == NULL ? -errno : 0);
}

int
main(void)
{
	static struct nft_elem elems[DRV_MAX_ELEMS];
	char line[65536], *rest;
	struct nft_stats st;
	size_t n;
	bool ok;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		char *cmd = strtok_r(line, " \n", &rest);

		if (cmd == NULL)
			continue;
		if (strcmp(cmd, "quit") == 0)
			break;
		if (strcmp(cmd, "open") == 0) {
			cmd_open(rest);
			continue;
		}
		if (ctx == NULL) {
			reply(-ENOTCONN);
			continue;
		}
		if (strcmp(cmd, "build") == 0 || strcmp(cmd, "bind") == 0) {
			n = parse_elems(rest, elems, &ok);
			if (!ok)
				reply(-EINVAL);
			else if (cmd[1] == 'u')
				reply(nft_build(ctx, elems, n));
			else
				reply(nft_bind(ctx, elems, n));
		} else if (strcmp(cmd, "refill") == 0) {
			reply(cmd_refill(rest, elems));
		} else if (strcmp(cmd, "check") == 0) {
			int rc = nft_check(ctx);

			if (rc < 0)
				reply(rc);
			else
				printf("ok %s\n", nft_state_str((enum nft_state)rc));
		} else if (strcmp(cmd, "stats") == 0) {
			nft_stats_get(ctx, &st);
			printf("ok elements=%llu errors=%llu batches=%llu builds=%llu listings=%llu\n",
			    (unsigned long long)st.elements, (unsigned long long)st.errors,
			    (unsigned long long)st.batches, (unsigned long long)st.builds,
			    (unsigned long long)st.listings);
		} else if (strcmp(cmd, "count") == 0) {
			uint64_t held;
			int rc = nft_count(ctx, &held);

			if (rc < 0)
				reply(rc);
			else
				printf("ok %llu\n", (unsigned long long)held);
		} else if (strcmp(cmd, "destroy") == 0) {
			reply(nft_destroy(ctx));
		} else if (strcmp(cmd, "close") == 0) {
			nft_close(ctx);
			ctx = NULL;
			reply(0);
		} else if (strcmp(cmd, "benchbuild") == 0) {
			char *a = strtok_r(NULL, " \n", &rest);

			reply(bench_build(a ? strtoul(a, NULL, 10) : 0));
		} else if (strcmp(cmd, "benchcheck") == 0) {
			char *a = strtok_r(NULL, " \n", &rest);
			size_t iters = a ? strtoul(a, NULL, 10) : 0;

			reply(iters == 0 ? -EINVAL : bench_check(iters));
		} else if (strcmp(cmd, "burst") == 0) {
			char *a = strtok_r(NULL, " \n", &rest), *b = strtok_r(NULL, " \n", &rest);

			reply(bench_burst(a ? strtoul(a, NULL, 10) : 0, b ? strtoul(b, NULL, 10) : 0));
		} else if (strcmp(cmd, "bench") == 0) {
			char *a = strtok_r(NULL, " \n", &rest), *b = strtok_r(NULL, " \n", &rest);
			size_t batch = a ? strtoul(a, NULL, 10) : 0, iters = b ? strtoul(b, NULL, 10) : 0;

			reply(batch == 0 || iters == 0 ? -EINVAL : bench(batch, iters));
		} else {
			reply(-EINVAL);
		}
	}
	nft_close(ctx);
	return 0;
}
