/*
 * The daemon's side of the HA pair (dp_ha.h).
 *
 * The heartbeat is the workers' RCU grace period: each reports a quiescent state every
 * few hundred polls and before each nap, so a token they have all passed says every
 * worker went round its loop since it was taken. One that spins in a bug or waits on
 * something never passes it, and the health check says no once the last one passed is
 * older than ha.heartbeat_timeout_ms. Nothing is added to the workers' loop for it.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "ctl_base.h"
#include "ctl_ha.h"
#include "dp.h"
#include "dp_ha.h"
#include "dp_ha_guard.h"
#include "dp_wake.h"
#include "policy/load.h"

#define DP_HA_STATIONS_MS	1000	/* a master's announcements of the uplink's stations */
#define DP_HA_LEAVE_MS		2000	/* a stopping master's wait for keepalived to hand over */

/* The FIFO reader's thread: the gate, then the main lcore woken to log and announce. */
static void
dp_ha_on_role(enum ctl_ha_role role, void *arg)
{
	struct dp_ha *d = arg;

	if (role == CTL_HA_MASTER)
		atomic_fetch_and(&d->ctx->ha_shut, ~(uint32_t)DP_HA_SHUT_ROLE);
	else
		atomic_fetch_or(&d->ctx->ha_shut, DP_HA_SHUT_ROLE);
	dp_wake_from_signal();
}

/* The event loop's: ask the workers for a grace period, and note when they passed one. */
static int64_t
dp_ha_beat(void *arg)
{
	struct dp_ha *d = arg;

	if (!d->running)
		return -1;
	if (d->asked && rte_rcu_qsbr_check(d->ctx->qsbr, d->token, false) == 1) {
		d->beat_ms = ctl_now_ms();
		d->asked = false;
	}
	if (!d->asked) {
		d->token = rte_rcu_qsbr_start(d->ctx->qsbr);
		d->asked = true;
	}
	return d->beat_ms < 0 ? -1 : ctl_now_ms() - d->beat_ms;
}

/* The health check's last word: the guard's hold. */
static const char *
dp_ha_veto(void *arg)
{
	struct dp_ha *d = arg;

	return dp_ha_guard_veto(&d->guard);
}

int
dp_ha_start(struct dp_ha *d, struct dp_ctx *ctx, struct pol_config **cfgp,
    struct ctl_events *events, struct ctl_sock *sock, FILE *err)
{
	const struct pol_config *cfg = *cfgp;
	struct ctl_ha_conf conf = {
		.fifo = cfg->ha_fifo, .instance = cfg->ha_instance,
		.heartbeat_ms = cfg->ha_heartbeat_ms, .on_role = dp_ha_on_role, .beat = dp_ha_beat,
		.veto = dp_ha_veto, .arg = d,
	};
	char why[256];

	*d = (struct dp_ha){ .ctx = ctx, .cfgp = cfgp, .beat_ms = -1 };
	if (cfg->ha_fifo == NULL && ctl_ha_serve_absent(sock) != 0) {
		fputs("namegate: control socket: ha is served twice\n", err);
		return -1;
	}
	if (cfg->ha_fifo == NULL)
		return 0;
	ctx->ha = true;
	d->announce = cfg->ha_announce;
	if (dp_ha_guard_start(&d->guard, ctx, cfg, events, err) != 0)
		return -1;
	if (cfg->ha_track_file != NULL &&
	    ctl_ha_track_write(cfg->ha_track_file, 1, why, sizeof(why)) != 0) {
		fprintf(err, "namegate: ha.track_file: %s\n", why);
		return -1;
	}
	if ((d->ha = ctl_ha_start(&conf, events, why, sizeof(why))) == NULL) {
		fprintf(err, "namegate: ha.notify_fifo: %s\n", why);
		return -1;
	}
	if (ctl_ha_serve(d->ha, sock) != 0) {
		fputs("namegate: control socket: ha is served twice\n", err);
		return -1;
	}
	ctl_ha_extra(d->ha, "guard", dp_ha_guard_json, &d->guard);
	return 0;
}

void
dp_ha_sync(struct dp_ha *d, struct dp_hasync *sync)
{
	if (d->ha != NULL)
		dp_ha_guard_sync(&d->guard, sync);
}

void
dp_ha_running(struct dp_ha *d)
{
	const char *track = (*d->cfgp)->ha_track_file;
	char why[256];

	d->running = true;
	if (d->ha != NULL && track != NULL && ctl_ha_track_write(track, 0, why, sizeof(why)) != 0)
		fprintf(stderr, "namegate: ha.track_file: %s\n", why);
}

void
dp_ha_leave(struct dp_ha *d)
{
	const char *track = (*d->cfgp)->ha_track_file;
	int64_t end = ctl_now_ms() + DP_HA_LEAVE_MS;
	char why[256];

	if (d->ha == NULL || track == NULL)
		return;
	if (ctl_ha_track_write(track, 1, why, sizeof(why)) != 0) {
		fprintf(stderr, "namegate: ha.track_file: %s\n", why);
		return;
	}
	/* the guard's turns go on: the beacon saying this box no longer forwards goes out
	 * at once, and the peer, master now, does not yield to the last one for 3 intervals */
	while (ctl_ha_role(d->ha) == CTL_HA_MASTER && ctl_now_ms() < end) {
		dp_ha_guard_tick(&d->guard);
		rte_delay_us_sleep(5000);
	}
	dp_ha_guard_tick(&d->guard);
	rte_delay_us_sleep(5000);	/* worker 0 sends that beacon before it stops */
	(void)ctl_ha_tick(d->ha);	/* the change logged before the stop event */
}

void
dp_ha_out(struct dp_ctx *ctx, const uint8_t *frame, size_t len, uint16_t port)
{
	struct dp_worker *w = ctx->workers[0];	/* the main lcore alone enqueues there */
	struct rte_mbuf *m = rte_pktmbuf_alloc(ctx->pool);
	char *p;

	if (m == NULL || (p = rte_pktmbuf_append(m, (uint16_t)len)) == NULL) {
		rte_pktmbuf_free(m);
		ctx->main_drops[DP_DROP_NO_MBUF]++;
		return;
	}
	memcpy(p, frame, len);
	m->port = port;
	if (rte_ring_sp_enqueue(w->slow_back, m) != 0) {
		ctx->main_drops[DP_DROP_SLOW_QUEUE_FULL]++;
		rte_pktmbuf_free(m);
	}
}

/* Whether a station the standby saw is a VM's own MAC (the peer forwarded its frames). */
static bool
dp_ha_is_vm(const struct pol_config *cfg, uint64_t key)
{
	for (size_t i = 0; i < cfg->nvms; i++)
		if ((dp_ha_seen_key(cfg->vms[i].id.mac, 0) & 0xffffffffffffULL) ==
		    (key & 0xffffffffffffULL))
			return true;
	return false;
}

/*
 * Toward the uplink, each VM's addresses from its own MAC, as many as the queue takes now:
 * with a thousand VMs the announcements outnumber its slots, so the rest go on the next
 * turns (dp_ha_busy() keeps them short) instead of being dropped.
 */
static void
dp_ha_announce_vms(struct dp_ha *d)
{
	const struct pol_config *cfg = *d->cfgp;
	struct rte_ring *q = d->ctx->workers[0]->slow_back;
	uint8_t f[CTL_HA_FRAME_MAX];

	for (; d->vm_next < cfg->nvms && rte_ring_free_count(q) >= 2; d->vm_next++) {
		const struct pol_vm_id *id = &cfg->vms[d->vm_next].id;

		if (id->has4)
			dp_ha_out(d->ctx, f, ctl_ha_garp(f, id->mac, id->vlan, id->ip4), DP_PORT_SLOW_UP);
		if (id->has6)
			dp_ha_out(d->ctx, f, ctl_ha_una(f, id->mac, id->vlan, id->ip6), DP_PORT_SLOW_UP);
	}
	d->vms_pending = d->vm_next < cfg->nvms;
}

bool
dp_ha_busy(const struct dp_ha *d)
{
	return d->vms_pending;
}

int
dp_ha_next_ms(const struct dp_ha *d, int ms)
{
	int g;

	if (d->ha == NULL)
		return ms;
	g = dp_ha_guard_next_ms(&d->guard);
	return g < ms ? g : ms;
}

/*
 * Toward the VMs, a RARP from each uplink station the workers noted (not the VMs', which
 * the peer forwarded there): the VM segment's switches send to this box for them, and the
 * peer, standby, learns them from these.
 */
static void
dp_ha_announce_stations(struct dp_ha *d)
{
	const struct pol_config *cfg = *d->cfgp;
	uint64_t seen[DP_WORKERS_MAX * DP_HA_SEEN_MAX];
	uint8_t f[CTL_HA_FRAME_MAX], mac[6];
	size_t nseen = 0;

	for (unsigned int w = 0; w < d->ctx->nworkers; w++)
		for (unsigned int i = 0; i < DP_HA_SEEN_MAX; i++) {
			uint64_t k = atomic_load_explicit(&d->ctx->workers[w]->ha_seen.mac[i],
			    memory_order_relaxed);
			size_t j = 0;

			while (j < nseen && seen[j] != k)
				j++;
			if (k != 0 && j == nseen && !dp_ha_is_vm(cfg, k))
				seen[nseen++] = k;
		}
	for (size_t j = 0; j < nseen; j++) {
		for (int b = 0; b < 6; b++)
			mac[b] = (uint8_t)(seen[j] >> (40 - 8 * b));
		dp_ha_out(d->ctx, f, ctl_ha_rarp(f, mac, (uint16_t)(seen[j] >> 48 & 0xfff)),
		    DP_PORT_SLOW_VM);
	}
	d->stations_ms = ctl_now_ms();
}

void
dp_ha_tick(struct dp_ha *d)
{
	bool took_over;

	if (d->ha == NULL)
		return;
	(void)dp_ha_beat(d);
	dp_ha_guard_tick(&d->guard);
	took_over = ctl_ha_tick(d->ha);
	if (!d->announce)
		return;
	if (took_over)
		d->vm_next = 0;
	if (took_over || (d->vms_pending && ctl_ha_role(d->ha) == CTL_HA_MASTER))
		dp_ha_announce_vms(d);
	else
		d->vms_pending = false;		/* no longer master: nothing to announce */
	if (took_over || (ctl_ha_role(d->ha) == CTL_HA_MASTER &&
	    ctl_now_ms() - d->stations_ms >= DP_HA_STATIONS_MS))
		dp_ha_announce_stations(d);
}

void
dp_ha_stop(struct dp_ha *d)
{
	ctl_ha_stop(d->ha);
	d->ha = NULL;
}
