/*
 * Main-lcore glue between the workers and control/.
 */
#include <sys/socket.h>
#include <time.h>

#include <rte_common.h>

#include "ctl_events.h"
#include "dp_control.h"
#include "dp_evt.h"
#include "dp_mirror.h"
#include "dp_names.h"
#include "dp_reload.h"
#include "policy/load.h"
#include "dp_stats.h"

int
dp_control_render(FILE *out, void *arg)
{
	struct dp_control *c = arg;

	pthread_mutex_lock(&c->gen_lock);
	dp_stats_print(c->ctx, out);
	pthread_mutex_unlock(&c->gen_lock);
	return ferror(out) ? -1 : 0;
}

/* A binding learned: its name for reloads, and the binding for listings and nftables. */
static void
dp_control_bind(struct dp_control *c, const struct dp_evt *e)
{
	const struct dp_ctx *ctx = c->ctx;
	const char *name;

	if (dp_names_add(c->names, e->vm, e->name, e->name_len, &name) != 0)
		return;
	dp_mirror_bind(c->mirror, e->vm, e->family, e->addr, name,
	    (e->tsc - ctx->tsc_start) / ctx->tsc_hz + e->ttl);
}

static void
dp_control_block(struct dp_control *c, const struct dp_evt *e, const struct timespec *now)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	char name[DP_EVT_NAME_MAX + 1];
	struct ctl_ev_block b = {
		.vm = e->vm <= DP_VM_UNKNOWN && g->vms[e->vm].present ? g->vms[e->vm].name : "?",
		.reason = e->reason < DP_REASON_MAX ? dp_reason_labels[e->reason] : "?",
		.proto = e->proto, .port = e->port,
		.family = e->family == 4 ? AF_INET : e->family == 6 ? AF_INET6 : AF_UNSPEC,
	};

	if (e->name_len > 0 && e->vm < DP_VM_UNKNOWN)
		dp_names_add(c->tried, e->vm, e->name, e->name_len, NULL);
	if (c->events == NULL)
		return;
	memcpy(b.addr, e->addr, sizeof(b.addr));
	if (e->name_len > 0) {
		memcpy(name, e->name, e->name_len);
		name[e->name_len] = '\0';
		b.name = name;
	}
	ctl_events_log_block(c->events, now, &b);
}

void
dp_control_drain(struct dp_control *c)
{
	static struct dp_evt evts[256];
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	for (unsigned int i = 0; i < c->ctx->nworkers; i++) {
		unsigned int n;

		while ((n = dp_evt_drain(c->ctx->workers[i], evts, RTE_DIM(evts))) > 0) {
			for (unsigned int k = 0; k < n; k++) {
				const struct dp_evt *e = &evts[k];

				if (e->version != DP_API_VERSION)
					continue;
				if (e->type == DP_EVT_BIND)
					dp_control_bind(c, e);
				else if (e->type == DP_EVT_BLOCK)
					dp_control_block(c, e, &now);
			}
			c->evt_seen += n;
		}
	}
	if ((uint64_t)now.tv_sec != c->last_flush) {
		c->last_flush = (uint64_t)now.tv_sec;
		dp_mirror_expire(c->mirror, dp_now(c->ctx), 4096);
		if (c->events != NULL)
			ctl_events_flush(c->events, &now);	/* suppressed counts, rotation */
	}
}

int
dp_control_reload(struct dp_control *c, FILE *err)
{
	struct timespec now;
	int rc;

	dp_control_drain(c);		/* every name learned so far counts */
	pthread_mutex_lock(&c->gen_lock);
	rc = dp_reload(c->ctx, c->cfgp, c->names, err);
	pthread_mutex_unlock(&c->gen_lock);
	if (rc == 0 && c->events != NULL) {
		clock_gettime(CLOCK_REALTIME, &now);
		ctl_events_log_policy(c->events, &now,
		    atomic_load_explicit(&c->ctx->gen, memory_order_acquire)->id,
		    (uint32_t)(*c->cfgp)->nvms, (*c->cfgp)->path);
	}
	return rc;
}
