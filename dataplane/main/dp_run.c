/*
 * Start-up, the main lcore's loop, and shutdown. Any failure before the workers run
 * stops the process with one message: nothing is forwarded unless everything is ready.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>

#include "ctl_base.h"
#include "ctl_events.h"
#include "ctl_fleet.h"
#include "ctl_logfile.h"
#include "ctl_metrics.h"
#include "ctl_notify.h"
#include "ctl_webhook.h"
#include "ctl_approval.h"
#include "dp_bind.h"
#include "ctl_budgets.h"
#include "dp_control.h"
#include "dp_eal.h"
#include "dp_flowlog_out.h"
#include "dp_ha.h"
#include "dp_hasync.h"
#include "dp_ctlsock.h"
#include "ctl_mirror.h"
#include "ctl_grants_live.h"
#include "ctl_names.h"
#include "ctl_reload.h"
#include "ctl_sock.h"
#include "dp_run.h"
#include "dp_slowq.h"
#include "dp_stats.h"
#include "dp_telemetry.h"
#include "dp_vmslot.h"
#include "dp_wake.h"
#include "dp_worker.h"
#include "policy/load.h"

#define DP_SWEEP_TICK_MS	1	/* between the slices of a binding sweep in progress */
#define DP_SWEEP_BUDGET		512	/* bindings examined per slice */

static volatile sig_atomic_t dp_stop, dp_dump_stats, dp_reload_wanted, dp_reopen_wanted;
/* who sent the last SIGHUP, as the kernel says (kill(2) fills si_pid and si_uid) */
static volatile sig_atomic_t dp_hup_pid, dp_hup_uid, dp_hup_known;

/* SIGHUP's sender kept for the reload event (systemctl reload: systemd, uid 0). */
static void
dp_on_hup(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	dp_hup_known = si != NULL && si->si_code == SI_USER;
	if (dp_hup_known) {
		dp_hup_pid = si->si_pid;
		dp_hup_uid = (sig_atomic_t)si->si_uid;
	}
	dp_reload_wanted = 1;
	dp_wake_from_signal();
	(void)sig;
}

/* A reload for SIGHUP, by its sender when one is known. */
static void
dp_reload_on_hup(struct ctl_reload *r)
{
	char user[CTL_SOCK_USER_MAX + 1];
	struct ctl_ev_who who = { .uid = (uint32_t)dp_hup_uid, .pid = dp_hup_pid, .user = user };

	if (!dp_hup_known) {
		ctl_reload_run(r, stderr, NULL);
		return;
	}
	ctl_sock_user_name(who.uid, user, sizeof(user));
	ctl_reload_run(r, stderr, &who);
}

static void
dp_on_signal(int sig)
{
	if (sig == SIGUSR1)
		dp_dump_stats = 1;
	else if (sig == SIGUSR2)	/* logrotate's postrotate: the logs, opened again */
		dp_reopen_wanted = 1;
	else
		dp_stop = 1;
	dp_wake_from_signal();	/* the main lcore may be asleep, and another thread got it */
}

static int
dp_eal_init(const struct dp_eal *plan)
{
	char *argv[DP_EAL_ARGS_MAX + 1];

	memcpy(argv, plan->argv, sizeof(argv));	/* rte_eal_init() may permute it */
	if (rte_eal_init(plan->argc, argv) < 0) {
		fprintf(stderr, "namegate: EAL: %s\n", rte_strerror(rte_errno));
		if (rte_errno == ENOMEM)
			dp_eal_explain(plan, stderr);
		return -1;
	}
	return 0;
}

/* Milliseconds until dp_now() next turns a second (at least 1): when the sweep is due. */
static int
dp_ms_to_next_second(const struct dp_ctx *ctx)
{
	uint64_t into = (rte_get_tsc_cycles() - ctx->tsc_start) % ctx->tsc_hz;

	return (int)((ctx->tsc_hz - into) * 1000 / ctx->tsc_hz) + 1;
}

/* mkdir -p for the event log's directory. */
static int
dp_mkdirs(const char *file)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", file);
	for (char *p = dir + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(dir, 0750) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* The flow log, a file (its directory made), stdout ("-") or a collector ("unix:PATH"). */
static int
dp_flowlog_start(struct dp_control *c, const struct pol_config *cfg)
{
	bool file = strcmp(cfg->flow_log, "-") != 0 && strncmp(cfg->flow_log, "unix:", 5) != 0;
	char err[256];

	if (file && dp_mkdirs(cfg->flow_log) != 0) {
		fprintf(stderr, "namegate: flow_log %s: %s\n", cfg->flow_log, strerror(errno));
		return -1;
	}
	if ((c->flowlog = dp_flowlog_out_open(cfg->flow_log, c->ctx->max_vms, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "namegate: flow_log %s: %s\n", cfg->flow_log, err);
		return -1;
	}
	return 0;
}

/*
 * The metrics endpoint, the event log and the flow log: each must work, or the daemon
 * does not start.
 */
static int
dp_control_start(struct dp_control *c, const struct pol_config *cfg, struct ctl_metrics **m)
{
	char err[256], addr[INET6_ADDRSTRLEN];
	struct timespec now;

	if ((ctl_logfile_is_file(cfg->events) && dp_mkdirs(cfg->events) != 0) ||
	    (c->events = ctl_events_open(cfg->events, CTL_EVENTS_RATE, CTL_EVENTS_BURST, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "namegate: events %s: %s\n", cfg->events,
		    c->events == NULL ? err : strerror(errno));
		return -1;
	}
	c->ctx->events = c->events;	/* its lost lines in namegate_events_dropped_total */
	clock_gettime(CLOCK_REALTIME, &now);
	ctl_events_log_start(c->events, &now, NAMEGATE_VERSION);
	if (cfg->flow_log != NULL && dp_flowlog_start(c, cfg) != 0)
		return -1;
	inet_ntop(cfg->metrics_addr.family == 6 ? AF_INET6 : AF_INET, cfg->metrics_addr.a, addr,
	    sizeof(addr));
	if ((*m = ctl_metrics_start(addr, cfg->metrics_port, dp_control_render, c, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "namegate: metrics %s: %s\n", cfg->metrics, err);
		return -1;
	}
	return 0;
}

int
dp_run(struct pol_config **cfgp, char **eal, int neal)
{
	struct dp_ctx ctx = { .port = { RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS, RTE_MAX_ETHPORTS,
		RTE_MAX_ETHPORTS }, .wake_fd = -1 };
	struct dp_control ctl = { .ctx = &ctx, .cfgp = cfgp,
		.gen_lock = PTHREAD_MUTEX_INITIALIZER };
	const struct pol_config *cfg = *cfgp;
	struct ctl_metrics *metrics = NULL;
	struct ctl_sock *sock = NULL;
	struct dp_eal plan;
	char err[256];
	uint32_t sweep_cursor = 0;
	bool slow_poll = false;
	uint64_t swept_at = UINT64_MAX;	/* the second the last full pass ended */
	uint64_t slots_at = UINT64_MAX;	/* the second removed VMs' slots were last looked at */
	struct dp_vmslot_ctl slot_ctl = { 0 };
	struct dp_ha ha = { .beat_ms = -1 };
	struct dp_hasync hasync = { 0 };
	struct timespec now;
	int rc = 1;

	signal(SIGINT, dp_on_signal);
	signal(SIGTERM, dp_on_signal);
	signal(SIGUSR1, dp_on_signal);
	sigaction(SIGHUP, &(struct sigaction){ .sa_sigaction = dp_on_hup,
	    .sa_flags = SA_SIGINFO | SA_RESTART }, NULL);
	signal(SIGUSR2, dp_on_signal);
	if (dp_eal_plan(cfg, eal, neal, &plan, stderr) != 0)
		return 1;
	if (plan.passed_over)	/* an operator who reserved them expects them: say why not */
		fprintf(stderr, "namegate: plain pages (--no-huge), not hugepages: %s\n",
		    plan.plain_why);
	if (plan.need > plan.have) {	/* a start that would fail at some table: say why now */
		dp_eal_explain(&plan, stderr);
		return 1;
	}
	if (dp_eal_init(&plan) != 0)
		return 1;
	if ((rc = dp_ctx_setup(&ctx, cfg)) != 0) {
		if (rc == -ENOMEM)
			dp_eal_explain(&plan, stderr);
		rc = 1;
		goto out;
	}
	if ((rc = dp_wake_open(&ctx)) != 0) {
		fprintf(stderr, "namegate: eventfd: %s\n", strerror(-rc));
		rc = 1;
		goto out;
	}
	/* per-VM shares: a VM's bindings are its share of max_bindings, its names are too */
	ctl.names = ctl_names_create(cfg->max_bindings, cfg->max_bindings_per_vm);
	ctl.tried = ctl_names_create(CTL_TRIED_NAMES, CTL_TRIED_NAMES_PER_VM);
	/*
	 * The mirror keeps each name of an address apart (the fast path keeps DP_BIND_NAMES
	 * an address), so a VM's share there is its share of addresses times that.
	 */
	ctl.mirror = ctl_mirror_create(cfg->max_bindings,
	    (uint32_t)((uint64_t)cfg->max_bindings_per_vm * DP_BIND_NAMES > UINT32_MAX ?
	    UINT32_MAX : cfg->max_bindings_per_vm * DP_BIND_NAMES));
	if (ctl.names == NULL || ctl.tried == NULL || ctl.mirror == NULL) {
		fputs("namegate: cannot allocate the name tables\n", stderr);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	ctl.started = (uint64_t)now.tv_sec;
	clock_gettime(CLOCK_REALTIME, &now);
	ctl.started_at = ctl_seconds(&now);
	dp_control_plane_init(&ctl);
	if (dp_control_start(&ctl, cfg, &metrics) != 0)
		goto out;
	slot_ctl = (struct dp_vmslot_ctl){ .names = ctl.names, .tried = ctl.tried,
		.mirror = ctl.mirror, .flowlog = ctl.flowlog };
	if (ctx.slow_path && dp_control_nft_open(&ctl, stderr) != 0)
		goto out;
	if ((ctl.grants = ctl_grants_live_start(ctl.cfgp, ctl.events, &ctl.plane,
	    stderr)) == NULL) {
		fputs("namegate: cannot allocate the grant table\n", stderr);
		goto out;
	}
	if ((ctl.reload = ctl_reload_new(ctl.cfgp, ctl.events, &ctl.plane, ctl.grants,
	    ctl.names, &now)) == NULL) {
		fputs("namegate: cannot allocate the reload state\n", stderr);
		goto out;
	}
	if ((ctl.budgets = ctl_budgets_new(ctl.cfgp, ctl.events, &ctl.plane)) == NULL) {
		fputs("namegate: cannot allocate the budget windows\n", stderr);
		goto out;
	}
	if ((ctl.approvals = ctl_approval_start(ctl.cfgp, ctl.events, &ctl.plane,
	    ctl.grants)) == NULL) {
		fputs("namegate: cannot allocate the approval table\n", stderr);
		goto out;
	}
	/* after reload: a verified cache goes in force through it, before any worker runs */
	if (cfg->nfleet_endpoints > 0 && (ctl.fleet = ctl_fleet_start(ctl.cfgp, ctl.events,
	    ctl.grants, ctl.reload, ctl.approvals, dp_wake_from_signal, err, sizeof(err))) ==
	    NULL) {
		fprintf(stderr, "namegate: %s\n", err);
		goto out;
	}
	cfg = *cfgp;	/* the cache's policy may be in force: the file's box keys are the same */
	if ((sock = dp_ctlsock_open(cfg, err, sizeof(err))) == NULL) {
		fprintf(stderr, "namegate: control socket: %s\n", err);
		goto out;
	}
	if (dp_ctlsock_serve(sock, &ctl) != 0 || ctl_grants_live_serve(ctl.grants, sock) != 0 ||
	    ctl_reload_serve(ctl.reload, sock) != 0 ||
	    ctl_approval_serve(ctl.approvals, sock) != 0 ||
	    (ctl.fleet != NULL && ctl_fleet_serve(ctl.fleet, sock) != 0)) {
		fputs("namegate: control socket: a command is served twice\n", stderr);
		goto out;
	}
	if (dp_ha_start(&ha, &ctx, ctl.cfgp, ctl.events, sock, stderr) != 0)
		goto out;
	ctl.ha = ha.ha;
	if (dp_hasync_start(&hasync, &ctl, stderr) != 0)
		goto out;
	dp_ha_sync(&ha, &hasync);
	if (dp_telemetry_register(&ctl) != 0)
		fputs("namegate: telemetry commands not registered\n", stderr);
	for (unsigned int i = 0; i < ctx.nworkers; i++)
		rte_eal_remote_launch(dp_worker_loop, ctx.workers[i], ctx.workers[i]->lcore);
	dp_ha_running(&ha);
	printf("namegate: ready: %u VMs, vm port %s, uplink port %s, %u worker%s\n",
	    (unsigned int)cfg->nvms, cfg->vm_port, cfg->uplink_port, ctx.nworkers,
	    ctx.nworkers == 1 ? "" : "s");
	fflush(stdout);
	ctl_notify_ready(atomic_load(&ctx.gen)->id, (uint32_t)cfg->nvms);
	while (!dp_stop) {
		/* until a worker hands over work, a client or a signal comes, or the clock's turn */
		dp_wake_wait(&ctx, sock, dp_ha_next_ms(&ha, sweep_cursor != 0 || slow_poll ||
		    dp_ha_busy(&ha) ? DP_SWEEP_TICK_MS : ctl_approval_busy(ctl.approvals) ?
		    CTL_WEBHOOK_TICK_MS : dp_ms_to_next_second(&ctx)));
		/* TAPs without rx interrupts: look again soon after writing to them */
		slow_poll = dp_slowq_run(&ctx) > 0 && (ctx.slow_rx_fd[0] < 0 ||
		    ctx.slow_rx_fd[1] < 0);
		dp_control_drain(&ctl);		/* the workers' records, once a turn */
		dp_ha_tick(&ha);		/* role changes logged, a takeover announced */
		dp_hasync_tick(&hasync);	/* the peer's bindings in, a resync out */
		(void)ctl_sock_serve_ready(sock);	/* then the clients: they see them */
		ctl_fleet_tick(ctl.fleet);	/* before the grants' tick: its changes first */
		cfg = *cfgp;
		ctl_grants_live_tick(ctl.grants);
		ctl_approval_tick(ctl.approvals);
		/*
		 * Bindings expire in whole seconds, and a pass over a sparse table costs a scan
		 * of all its slots: one pass per second, spread over slices while it lasts.
		 */
		if (sweep_cursor != 0 || dp_now(&ctx) != swept_at) {
			dp_binds_sweep(ctx.binds, dp_now(&ctx),
			    atomic_load_explicit(&ctx.gen, memory_order_acquire), DP_SWEEP_BUDGET,
			    &sweep_cursor);
			if (sweep_cursor == 0)
				swept_at = dp_now(&ctx);
		}
		ctl_budgets_tick(ctl.budgets, dp_now(&ctx));	/* each second, each generation */
		if (dp_now(&ctx) != slots_at) {	/* after the turn's drain: dp_vmslot.h */
			slots_at = dp_now(&ctx);
			dp_vmslots_tick(&ctx, &slot_ctl);
		}
		if (dp_dump_stats) {
			dp_dump_stats = 0;
			dp_stats_print(&ctx, stdout);
		}
		if (dp_reopen_wanted) {
			dp_reopen_wanted = 0;
			if (ctl.events != NULL && (rc = ctl_events_reopen(ctl.events)) != 0)
				fprintf(stderr, "namegate: events %s: cannot reopen: %s\n",
				    cfg->events, strerror(-rc));
			if (ctl.flowlog != NULL && (rc = dp_flowlog_out_reopen(ctl.flowlog)) != 0)
				fprintf(stderr, "namegate: flow_log %s: cannot reopen: %s\n",
				    cfg->flow_log, strerror(-rc));
		}
		if (dp_reload_wanted) {
			dp_reload_wanted = 0;
			dp_reload_on_hup(ctl.reload);
			fflush(stderr);
		}
	}
	ctl_notify_stopping();
	dp_ha_leave(&ha);		/* the peer takes over before the workers stop */
	for (unsigned int i = 0; i < ctx.nworkers; i++)
		atomic_store_explicit(&ctx.workers[i]->stop, true, memory_order_relaxed);
	rte_eal_mp_wait_lcore();
	if (ctl.flowlog != NULL)
		dp_flowlog_out_stop(ctl.flowlog, &ctx, ctl.names, *cfgp);
	dp_stats_print(&ctx, stdout);
	rc = 0;
out:
	dp_control_nft_close(&ctl);
	ctl_sock_close(sock);
	ctl_metrics_stop(metrics);
	ctl_fleet_stop(ctl.fleet);	/* before the grants, reload and approvals it uses */
	dp_hasync_stop(&hasync);	/* after the scrapes: they read its lag */
	ctl.ha = NULL;			/* after the scrapes: they read its role */
	dp_ha_stop(&ha);
	ctl_grants_live_stop(ctl.grants);	/* after the scrapes: they read its gauge */
	ctl_approval_stop(ctl.approvals);
	if (ctl.events != NULL) {
		clock_gettime(CLOCK_REALTIME, &now);
		ctl_events_log_stop(ctl.events, &now);
		ctx.events = NULL;
		ctl_events_close(ctl.events);
	}
	if (ctl.flowlog != NULL) {
		dp_flowlog_out_drain(ctl.flowlog, &ctx, ctl.names, *cfgp);	/* the last ones */
		dp_flowlog_out_close(ctl.flowlog);
	}
	ctl_names_free(ctl.names);
	ctl_names_free(ctl.tried);
	ctl_mirror_free(ctl.mirror);
	ctl_budgets_free(ctl.budgets);
	ctl_reload_free(ctl.reload);
	dp_ctx_teardown(&ctx);
	dp_wake_close(&ctx);
	rte_eal_cleanup();
	return rc;
}
