/*
 * The daemon's control side on the main lcore: the control concerns it composes (each its
 * own struct, in control/), the records drained once a turn and handed to them, the plane
 * they reach the workers by, and the metrics endpoint's render callback. The only place
 * the dataplane's state meets control/'s plain-C modules.
 */
#ifndef DP_CONTROL_H
#define DP_CONTROL_H

#include <pthread.h>
#include <stdio.h>

#include "api/dp_plane.h"

struct ctl_events;
struct ctl_approvals;
struct ctl_grants_live;
struct ctl_budgets;
struct ctl_ha;
struct ctl_reload;
struct ctl_fleet;
struct ctl_nft_feed;
struct ctl_mirror;
struct ctl_names;
struct dp_evt;
struct dp_hasync;
struct pol_config;

struct dp_control {
	struct dp_ctx *ctx;
	struct pol_config **cfgp;	/* the configuration in force */
	struct ctl_events *events;	/* NULL: no event log */
	struct dp_flowlog_out *flowlog;	/* NULL: no flow log */
	struct ctl_names *names;		/* names the VMs resolved */
	struct ctl_names *tried;		/* names the VMs were refused (namegatectl suggest) */
	struct ctl_mirror *mirror;	/* live bindings with their names */
	struct ctl_grants_live *grants;	/* NULL until started */
	struct ctl_approvals *approvals;	/* NULL until started */
	struct ctl_budgets *budgets;	/* NULL until started */
	struct ctl_reload *reload;	/* NULL until started */
	struct ctl_fleet *fleet;	/* NULL: no fleet store (or not yet started) */
	struct ctl_ha *ha;		/* NULL: no ha: (or not started) */
	struct dp_hasync *hasync;	/* NULL: no sync stream (or not started) */
	struct dp_plane plane;		/* what the control concerns reach the workers by */
	uint64_t started;		/* CLOCK_MONOTONIC seconds */
	double started_at;		/* the process's start, UTC seconds */
	struct ctl_nft_feed *feed;	/* the slow path's table; NULL without one */
	/* held by a scrape while it reads the generation, and by a reload while it frees one */
	pthread_mutex_t gen_lock;
	uint64_t evt_seen, last_flush;
};

/* c->plane: drain, generation and deny_ask on c's workers. */
void dp_control_plane_init(struct dp_control *c);

/* ctl_metrics_render_fn: SPEC s6 metrics for a scrape (runs on the HTTP thread). */
int dp_control_render(FILE *out, void *arg);

/*
 * A binding learned, by a worker or from the HA peer: its name for reloads, and the
 * binding for listings and nftables.
 */
void dp_control_bind(struct dp_control *c, const struct dp_evt *e);

/* Drain the workers' events: names for reloads, blocks to the event log. */
void dp_control_drain(struct dp_control *c);

/* Build the slow path's nftables table for the current VMs (start and reload). 0 or -1. */
int dp_control_nft_open(struct dp_control *c, FILE *err);

/* Remove the table (at exit). */
void dp_control_nft_close(struct dp_control *c);

#endif
