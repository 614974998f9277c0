/*
 * The daemon's context set up after rte_eal_init() and torn down at exit: EAL's memory
 * backed, the mbuf pool, the ports (and the exception path's TAPs and bridge), the RCU
 * state, the VM slots, the first generation, the binding table and the workers' tables.
 * dp_run.c starts the control side on it and runs the main lcore's loop.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "ctl_bridge.h"
#include "dp_bind.h"
#include "dp_commit.h"
#include "dp_eal.h"
#include "dp_gen.h"
#include "dp_gen_build.h"
#include "dp_hash.h"
#include "dp_port.h"
#include "dp_run.h"
#include "dp_vmslot.h"
#include "dp_worker.h"
#include "policy/load.h"

/* The exception path's interface names: from the nft table's, so two tables never share. */
static void
dp_slow_names(const struct pol_config *cfg, char *vm, char *up, char *br, size_t len)
{
	snprintf(vm, len, "%.10s-xv", cfg->nft_table);
	snprintf(up, len, "%.10s-xu", cfg->nft_table);
	snprintf(br, len, "%.10s-xb", cfg->nft_table);
}

/* Disable IPv6 on an interface: the kernel's own router solicitations must not leak out. */
static void
dp_slow_quiet(const char *ifname)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
	if ((f = fopen(path, "w")) != NULL) {
		fputs("1\n", f);
		fclose(f);
	}
}

/*
 * SPEC s2: two TAPs, the VM side and the uplink side, joined by a kernel bridge whose
 * nftables table (control/nft/include/nft.h) judges what the fast path hands over.
 */
static int
dp_slow_open(struct dp_ctx *ctx, const struct pol_config *cfg)
{
	char vm[IF_NAMESIZE], up[IF_NAMESIZE], br[IF_NAMESIZE], devargs[128], err[256];

	dp_slow_names(cfg, vm, up, br, IF_NAMESIZE);
	/* one queue each, the main lcore's: dp_slowq.h */
	snprintf(devargs, sizeof(devargs), "net_tap_ngxv,iface=%s", vm);
	if (dp_port_open_main(devargs, ctx->pool, &ctx->port[DP_PORT_SLOW_VM],
	    &ctx->slow_rx_fd[0]) != 0)
		return -1;
	snprintf(devargs, sizeof(devargs), "net_tap_ngxu,iface=%s", up);
	if (dp_port_open_main(devargs, ctx->pool, &ctx->port[DP_PORT_SLOW_UP],
	    &ctx->slow_rx_fd[1]) != 0)
		return -1;
	dp_slow_quiet(vm);
	dp_slow_quiet(up);
	if (ctl_bridge_create(br, vm, up, err, sizeof(err)) != 0) {
		fprintf(stderr, "namegate: exception path: %s\n", err);
		return -1;
	}
	dp_slow_quiet(br);
	snprintf(ctx->slow_bridge, sizeof(ctx->slow_bridge), "%s", br);
	snprintf(ctx->slow_ports[0], sizeof(ctx->slow_ports[0]), "%s", vm);
	snprintf(ctx->slow_ports[1], sizeof(ctx->slow_ports[1]), "%s", up);
	ctx->slow_path = true;
	return 0;
}

int
dp_ctx_setup(struct dp_ctx *ctx, const struct pol_config *cfg)
{
	unsigned int lcore, n = 0, nmbufs = dp_eal_mbufs(cfg);
	struct dp_gen *g;
	size_t qsz;
	int rc;

	ctx->wake_fd = -1;	/* dp_wake_open() gives the daemon one */
	ctx->slow_rx_fd[0] = ctx->slow_rx_fd[1] = -1;
	ctx->nworkers = cfg->workers;
	if (ctx->nworkers == 0 || ctx->nworkers > DP_WORKERS_MAX ||
	    rte_lcore_count() < ctx->nworkers + 1) {
		fprintf(stderr, "namegate: workers: %u needs %u lcores (one for control), EAL "
		    "gave %u\n", ctx->nworkers, ctx->nworkers + 1, rte_lcore_count());
		return -1;
	}
	if ((rc = dp_hash_init()) != 0) {	/* before any table a VM's keys land in */
		fprintf(stderr, "namegate: no random hash key: %s\n", strerror(-rc));
		return -1;
	}
	if ((rc = dp_commit_eal_memory()) != 0 && rc != -EINVAL) {
		fprintf(stderr, "namegate: cannot back EAL's memory (-m) at start: %s\n",
		    strerror(-rc));
		return -ENOMEM;
	}
	ctx->tsc_hz = rte_get_tsc_hz();
	ctx->tsc_start = rte_get_tsc_cycles();
	ctx->max_flows = cfg->max_flows;
	ctx->max_vms = (uint16_t)cfg->max_vms;
	if (cfg->flow_log != NULL) {	/* the workers' rings for it, made with them */
		ctx->flow_log_ring = cfg->flow_log_ring;
		ctx->flow_log_interval_tsc = (uint64_t)cfg->flow_log_interval * ctx->tsc_hz;
	}
	ctx->pool = rte_pktmbuf_pool_create("ng_mbufs", nmbufs, 256, 0,
	    RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (ctx->pool == NULL) {
		fprintf(stderr, "namegate: %u mbufs: %s\n", nmbufs, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	if (dp_port_open(cfg->vm_port, (uint16_t)ctx->nworkers, ctx->pool,
	    &ctx->port[DP_PORT_VM]) != 0 ||
	    dp_port_open(cfg->uplink_port, (uint16_t)ctx->nworkers, ctx->pool,
	    &ctx->port[DP_PORT_UPLINK]) != 0)
		return -1;
	if (cfg->slow_path_enabled && dp_slow_open(ctx, cfg) != 0)
		return -1;
	for (unsigned int p = 0; p < DP_PORTS; p++)
		ctx->mtu[p] = rte_eth_dev_is_valid_port(ctx->port[p]) ? dp_port_mtu(ctx->port[p]) :
		    1500;
	qsz = rte_rcu_qsbr_get_memsize(ctx->nworkers);
	if ((ctx->qsbr = rte_zmalloc("ng_qsbr", qsz, RTE_CACHE_LINE_SIZE)) == NULL ||
	    rte_rcu_qsbr_init(ctx->qsbr, ctx->nworkers) != 0) {
		fputs("namegate: cannot allocate the RCU state\n", stderr);
		return -ENOMEM;
	}
	if ((ctx->vmslots = calloc(1, sizeof(*ctx->vmslots))) == NULL ||
	    dp_vmslots_init(ctx->vmslots, ctx->max_vms) != 0) {
		fputs("namegate: cannot allocate the VM slots\n", stderr);
		return -ENOMEM;
	}
	if ((g = dp_gen_create(cfg, 1, ctx->nworkers, NULL, ctx->vmslots)) == NULL) {
		fprintf(stderr, "namegate: VM table: %s\n", rte_strerror(rte_errno));
		return rte_errno == E2BIG ? -1 : -ENOMEM;
	}
	dp_vmslots_commit(ctx->vmslots, NULL, g);
	atomic_store_explicit(&ctx->gen, g, memory_order_release);
	ctx->binds = dp_binds_create("ng_binds", cfg->max_bindings, ctx->max_vms, ctx->qsbr,
	    (int)rte_socket_id());
	if (ctx->binds == NULL) {
		fprintf(stderr, "namegate: max_bindings %u: cannot allocate the table\n",
		    cfg->max_bindings);
		return -ENOMEM;
	}
	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (n == ctx->nworkers)
			break;
		if ((ctx->workers[n] = dp_worker_create(ctx, n, lcore, cfg->idle_sleep_us,
		    ctx->max_vms)) == NULL) {
			fprintf(stderr, "namegate: worker %u: max_flows %u: cannot allocate its "
			    "tables\n", n, cfg->max_flows);
			return -ENOMEM;
		}
		n++;
	}
	return 0;
}

void
dp_ctx_teardown(struct dp_ctx *ctx)
{
	const struct dp_gen *g = atomic_load(&ctx->gen);

	for (unsigned int i = 0; i < ctx->nworkers; i++)
		dp_worker_free(ctx->workers[i]);
	for (unsigned int p = 0; p < DP_PORTS; p++)
		if (rte_eth_dev_is_valid_port(ctx->port[p]))
			dp_port_close(ctx->port[p]);
	if (ctx->slow_path)
		ctl_bridge_delete(ctx->slow_bridge);
	dp_binds_free(ctx->binds);
	dp_gen_free((struct dp_gen *)(uintptr_t)g);
	if (ctx->vmslots != NULL)
		dp_vmslots_fini(ctx->vmslots);
	free(ctx->vmslots);
	ctx->vmslots = NULL;
	rte_free(ctx->qsbr);
	rte_mempool_free(ctx->pool);
}
