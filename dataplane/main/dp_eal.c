/*
 * EAL's arguments and memory: see dp_eal.h. Nothing here needs EAL to be running, so
 * --check (no root, no devices) judges the same plan the daemon starts with.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "dp_bind.h"
#include "dp_eal.h"
#include "dp_eal_host.h"
#include "dp_gen.h"
#include "dp_ha_flows.h"
#include "dp_mem.h"
#include "dp_worker.h"
#include "policy/load.h"

#define DP_MIB			(1024ull * 1024)
/*
 * What is not a table: EAL's own (152 KiB after rte_eal_init here), the ports' queues and
 * descriptor rings (under 1 MiB for two net_null ports in test_dp_mem; a NIC's rings are a
 * few MiB), telemetry. A margin, not a measurement.
 */
#define DP_EAL_BASE		(32 * DP_MIB)
#define DP_EAL_ROUND		(16 * DP_MIB)	/* the -m namegate adds: whole steps of this */

unsigned int
dp_eal_mbufs(const struct pol_config *cfg)
{
	unsigned int n = cfg->workers * DP_PORTS * 2 * 1024 +
	    cfg->workers * DP_PORTS * DP_BURST * 4 + cfg->workers * 2 * DP_SLOW_RING + 4096;

	return cfg->mbufs > n ? cfg->mbufs : n;	/* a pcap device preloads its whole file */
}

uint64_t
dp_eal_tables(const struct pol_config *cfg)
{
	uint32_t workers = cfg->workers ? cfg->workers : 1;
	uint16_t vms = (uint16_t)cfg->max_vms;

	return dp_mem_pool(dp_eal_mbufs(cfg), RTE_MBUF_DEFAULT_BUF_SIZE, true) +
	    workers * dp_worker_mem(cfg->max_flows / workers, vms,
	    cfg->flow_log != NULL ? cfg->flow_log_ring : 0) +
	    dp_binds_mem(cfg->max_bindings, vms) +
	    2 * dp_gen_mem(cfg->max_bindings + 1, vms) +	/* a reload holds two generations */
	    dp_mem_alloc(rte_rcu_qsbr_get_memsize(workers)) +
	    (cfg->ha_sync_peer != NULL || cfg->ha_sync_listen != NULL ?	/* the pair's flows */
	    dp_ha_flows_mem(cfg->max_flows ? cfg->max_flows : 1, vms) : 0);
}

uint64_t
dp_eal_need(const struct pol_config *cfg)
{
	uint64_t tables = dp_eal_tables(cfg);

	/* the heap fragments: an eighth more, and EAL's own */
	return tables + tables / 8 + DP_EAL_BASE;
}

/* A PCI address, "0000:00:05.0" or "00:05.0", alone or before its devargs. */
static bool
dp_eal_is_pci(const char *port)
{
	size_t n = strcspn(port, ",");
	const char *p = port;

	if (n == 12 && isxdigit((unsigned char)p[0]) && p[4] == ':')
		p += 5, n -= 5;
	return n == 7 && isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1]) &&
	    p[2] == ':' && isxdigit((unsigned char)p[3]) && isxdigit((unsigned char)p[4]) &&
	    p[5] == '.' && p[6] >= '0' && p[6] <= '7';
}

/* MiB a size argument names: "512" (-m), "512,512" (--socket-mem); 0 if unreadable. */
static uint64_t
dp_eal_size_arg(const char *s, bool per_socket)
{
	uint64_t sum = 0;
	char *end;

	do {
		unsigned long long v = strtoull(s, &end, 10);

		if (end == s)
			return 0;
		sum += v;
		s = end + 1;
	} while (per_socket && *end == ',');
	return *end == '\0' ? sum * DP_MIB : 0;
}

/*
 * The memory size argv names, in bytes, and the index of the argument holding it (the
 * last one EAL would take); 0 when it names none.
 */
static int
dp_eal_size_of(char *const *argv, int argc, uint64_t *bytes)
{
	int at = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if ((strcmp(a, "-m") == 0 || strcmp(a, "--socket-mem") == 0) && i + 1 < argc) {
			*bytes = dp_eal_size_arg(argv[i + 1], a[1] == '-');
			at = i + 1;
		} else if (strncmp(a, "--socket-mem=", 13) == 0) {
			*bytes = dp_eal_size_arg(a + 13, true);
			at = i;
		} else if (strncmp(a, "-m", 2) == 0 && isdigit((unsigned char)a[2])) {
			*bytes = dp_eal_size_arg(a + 2, false);
			at = i;
		}
	}
	return at;
}

static int
dp_eal_push(struct dp_eal *e, char *arg, FILE *err)
{
	if (e->argc == DP_EAL_ARGS_MAX) {
		fprintf(err, "namegate: more than %d EAL arguments\n", DP_EAL_ARGS_MAX - 1);
		return -1;
	}
	e->argv[e->argc++] = arg;
	e->argv[e->argc] = NULL;
	return 0;
}

/* The memory namegate's own -m gives EAL for need bytes: whole steps of DP_EAL_ROUND. */
static uint64_t
dp_eal_rounded(uint64_t need)
{
	return (need + DP_EAL_ROUND - 1) / DP_EAL_ROUND * DP_EAL_ROUND;
}

/*
 * The arguments namegate chooses when nobody gave any: from the host and the ports (and
 * e->need, the tables'). Hugepages only where EAL can have the whole -m of them (dp_eal_host.h): a host with
 * some reserved but not mounted, or too few free, starts on plain pages, and says why.
 */
static int
dp_eal_derive(const struct pol_config *cfg, struct dp_eal *e, FILE *err)
{
	struct dp_eal_host host;

	dp_eal_host_read(&host, "");
	if (dp_eal_host_short(&host, dp_eal_rounded(e->need), e->plain_why,
	    sizeof(e->plain_why)) != NULL) {
		e->passed_over = dp_eal_host_reserved(&host) != 0;
		if (dp_eal_push(e, (char *)"--no-huge", err) != 0)
			return -1;
	}
	if (!dp_eal_is_pci(cfg->vm_port) && !dp_eal_is_pci(cfg->uplink_port) &&
	    dp_eal_push(e, (char *)"--no-pci", err) != 0)
		return -1;
	/* two daemons on one host own two nft tables: their EAL files never meet either */
	snprintf(e->prefix, sizeof(e->prefix), "%s", cfg->nft_table);
	if (dp_eal_push(e, (char *)"--file-prefix", err) != 0 || dp_eal_push(e, e->prefix, err) != 0)
		return -1;
	return 0;
}

int
dp_eal_plan(const struct pol_config *cfg, char **cli, int ncli, struct dp_eal *e, FILE *err)
{
	char **given = ncli > 0 ? cli : cfg->eal;
	int ngiven = ncli > 0 ? ncli : (int)cfg->neal;

	memset(e, 0, sizeof(*e));
	e->source = ncli > 0 ? DP_EAL_COMMAND_LINE : cfg->neal > 0 ? DP_EAL_FILE : DP_EAL_DERIVED;
	e->argv[e->argc++] = (char *)"namegate";
	for (int i = 0; i < ngiven; i++)
		if (dp_eal_push(e, given[i], err) != 0)
			return -1;
	e->need = dp_eal_need(cfg);
	if (e->source == DP_EAL_DERIVED && dp_eal_derive(cfg, e, err) != 0)
		return -1;
	e->hugepages = true;
	for (int i = 1; i < e->argc; i++)
		if (strcmp(e->argv[i], "--no-huge") == 0)
			e->hugepages = false;
	if ((e->size_at = dp_eal_size_of(e->argv, e->argc, &e->have)) == 0) {
		e->have = dp_eal_rounded(e->need);
		snprintf(e->mem, sizeof(e->mem), "%llu", (unsigned long long)(e->have / DP_MIB));
		if (dp_eal_push(e, (char *)"-m", err) != 0 || dp_eal_push(e, e->mem, err) != 0)
			return -1;
		e->sized = true;
	}
	return 0;
}

static unsigned long long
dp_eal_mib(uint64_t bytes)
{
	return (unsigned long long)((bytes + DP_MIB - 1) / DP_MIB);
}

void
dp_eal_print(const struct dp_eal *e, FILE *out)
{
	static const char *const from[] = { "derived from the host and ports", "dataplane.eal",
		"the command line" };
	struct dp_eal_host host;
	char why[sizeof(e->plain_why)];

	fputs("eal:", out);
	for (int i = 1; i < e->argc; i++)
		fprintf(out, " %s", e->argv[i]);
	fprintf(out, " (%s%s)\n", from[e->source], e->sized ? ", -m sized from the tables" : "");
	fprintf(out, "memory: the tables need %llu MiB, EAL will have %llu MiB%s\n",
	    dp_eal_mib(e->need), dp_eal_mib(e->have), e->hugepages ? " of hugepages" : "");
	if (!e->hugepages && e->plain_why[0] != '\0')
		fprintf(out, "memory: plain pages (--no-huge): %s\n", e->plain_why);
	if (!e->hugepages)
		return;
	dp_eal_host_read(&host, "");
	fprintf(out, "memory: this host has %llu MiB of hugepages free in hugetlbfs mounts now\n",
	    dp_eal_mib(dp_eal_host_usable(&host)));
	/* given arguments are taken as given: a start on them fails, say so beforehand */
	if (dp_eal_host_short(&host, e->have, why, sizeof(why)) != NULL)
		fprintf(out, "memory: warning: EAL will not start here: %s\n", why);
}

int
dp_eal_check(const struct pol_config *cfg, const struct dp_eal *e, struct pol_errs *errs)
{
	struct pol_pos at = cfg->eal_pos;

	if (e->need <= e->have)
		return 0;
	/* argv[i] is dataplane.eal[i - 1]: argv[0] is the program's name */
	if (e->source == DP_EAL_FILE && e->size_at > 0 && cfg->eal_item_pos != NULL)
		at = cfg->eal_item_pos[e->size_at - 1];
	if (at.line == 0 || e->source == DP_EAL_COMMAND_LINE)
		at = cfg->max_flows_pos;
	if (at.line == 0)
		at = (struct pol_pos){ 1, 1 };
	pol_err_add(errs, cfg->path, at.line, at.col, "the tables need %llu MiB of EAL memory "
	    "(max_vms %u, max_flows %u, max_bindings %u, %u worker%s) and %s gives EAL %llu "
	    "MiB%s: raise -m or lower max_flows", dp_eal_mib(e->need), cfg->max_vms,
	    cfg->max_flows, cfg->max_bindings,
	    cfg->workers, cfg->workers == 1 ? "" : "s",
	    e->source == DP_EAL_COMMAND_LINE ? "the command line" : "dataplane.eal",
	    dp_eal_mib(e->have), e->hugepages ? " of hugepages" : "");
	return -1;
}

void
dp_eal_explain(const struct dp_eal *e, FILE *out)
{
	fprintf(out, "namegate: needs %llu MiB, EAL has %llu MiB%s: raise -m or lower "
	    "max_flows\n", dp_eal_mib(e->need), dp_eal_mib(e->have),
	    e->hugepages ? " of hugepages" : "");
}
