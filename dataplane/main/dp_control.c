/*
 * Main-lcore glue between the workers and control/.
 */
#include <sys/socket.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_version.h>

#include "ctl_events.h"
#include "ctl_notify.h"
#include "nft.h"
#include "dp_budgets.h"
#include "ctl_approval.h"
#include "dp_control.h"
#include "dp_evt.h"
#include "ctl_grants_live.h"
#include "dp_worker.h"
#include "dp_mirror.h"
#include "dp_names.h"
#include "dp_reload.h"
#include "policy/load.h"
#include "dp_stats.h"

static double dp_nft_latency(const struct dp_control *c, double q);

/* namegate_nft_bind_seconds' buckets, microseconds: fine around the 1 ms goal, then coarse */
static const uint32_t dp_nft_lat_le_us[DP_NFT_LAT_BUCKETS] = {
	100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1250, 1500, 2000, 2500, 3000,
	4000, 5000, 7500, 10000, 25000, 100000, 250000, 1000000, 5000000,
};

/* Every sample since start, as a histogram: a p99 over all of them, not the latest 1024. */
static void
dp_nft_latency_histogram(const struct dp_control *c, FILE *out)
{
	uint64_t cum = 0;

	fputs("# HELP namegate_nft_bind_seconds From a binding's DNS answer to its nft element, "
	    "every binding since start\n"
	    "# TYPE namegate_nft_bind_seconds histogram\n", out);
	for (unsigned int i = 0; i < DP_NFT_LAT_BUCKETS; i++) {
		cum += c->nft_lat_hist[i];
		fprintf(out, "namegate_nft_bind_seconds_bucket{le=\"%.4f\"} %" PRIu64 "\n",
		    dp_nft_lat_le_us[i] / 1e6, cum);
	}
	cum += c->nft_lat_hist[DP_NFT_LAT_BUCKETS];
	fprintf(out, "namegate_nft_bind_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n"
	    "namegate_nft_bind_seconds_sum %.6f\n"
	    "namegate_nft_bind_seconds_count %" PRIu64 "\n", cum, c->nft_lat_sum_us / 1e6, cum);
}

static void
dp_nft_latency_add(struct dp_control *c, uint32_t us)
{
	unsigned int i = 0;

	while (i < DP_NFT_LAT_BUCKETS && us > dp_nft_lat_le_us[i])
		i++;
	c->nft_lat_hist[i]++;
	c->nft_lat_sum_us += us;
	c->nft_lat_us[c->nft_lat_n++ % RTE_DIM(c->nft_lat_us)] = us;
}

double
dp_control_seconds(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

/* What runs and since when: which build, the last load of the file, the process's start. */
static void
dp_control_render_process(const struct dp_control *c, FILE *out)
{
	fprintf(out, "# HELP namegate_build_info The running namegate's version and the DPDK it "
	    "was built with\n"
	    "# TYPE namegate_build_info gauge\n"
	    "namegate_build_info{version=\"%s\",dpdk=\"%s\"} 1\n", NAMEGATE_VERSION,
	    rte_version());
	fprintf(out, "# HELP namegate_config_last_reload_successful Whether the last load of the "
	    "configuration file (at start, SIGHUP or namegatectl reload) took effect\n"
	    "# TYPE namegate_config_last_reload_successful gauge\n"
	    "namegate_config_last_reload_successful %d\n"
	    "# HELP namegate_config_last_reload_success_timestamp_seconds When the configuration "
	    "in force was loaded\n"
	    "# TYPE namegate_config_last_reload_success_timestamp_seconds gauge\n"
	    "namegate_config_last_reload_success_timestamp_seconds %.3f\n", c->reload_ok ? 1 : 0,
	    c->reload_ok_at);
	fprintf(out, "# HELP process_start_time_seconds Start time of the process since the Unix "
	    "epoch in seconds\n"
	    "# TYPE process_start_time_seconds gauge\n"
	    "process_start_time_seconds %.3f\n", c->started_at);
}

int
dp_control_render(FILE *out, void *arg)
{
	struct dp_control *c = arg;

	struct nft_stats ns = { 0 };

	pthread_mutex_lock(&c->gen_lock);
	dp_stats_print(c->ctx, out);
	if (c->grants != NULL)
		ctl_grants_live_render(c->grants, out);
	dp_budget_render(c, out);
	if (c->approvals != NULL)
		ctl_approval_render(c->approvals, out);
	if (c->nft != NULL)
		nft_stats_get(c->nft, &ns);	/* plain counters: a torn read is off by one batch */
	fputs("# HELP namegate_nft_bind_latency_seconds From a binding's DNS answer to its nft "
	    "element, over the latest bindings\n"
	    "# TYPE namegate_nft_bind_latency_seconds summary\n", out);
	fprintf(out, "namegate_nft_bind_latency_seconds{quantile=\"0.5\"} %.6f\n"
	    "namegate_nft_bind_latency_seconds{quantile=\"0.99\"} %.6f\n",
	    dp_nft_latency(c, 0.5), dp_nft_latency(c, 0.99));
	dp_nft_latency_histogram(c, out);
	dp_control_render_process(c, out);	/* the reload state changes under the lock */
	pthread_mutex_unlock(&c->gen_lock);
	fprintf(out, "# HELP namegate_nft_elements Bound addresses in the slow path's nft sets\n"
	    "# TYPE namegate_nft_elements gauge\n"
	    "namegate_nft_elements %lu\n"
	    "# HELP namegate_nft_errors_total nft batches the kernel refused\n"
	    "# TYPE namegate_nft_errors_total counter\n"
	    "namegate_nft_errors_total %lu\n", ns.elements, ns.errors);
	return ferror(out) ? -1 : 0;
}

#define DP_NFT_BATCH	512	/* elements per incremental batch at most */

/* Where elements go: the incremental batch (flushed when full), or a rebuild's list. */
struct dp_nft_buf {
	struct nft_elem *v;
	size_t n, cap;
	struct dp_control *flush_to;	/* NULL: grow instead of flushing */
	uint64_t tsc;			/* when the binding was learned */
};

static void dp_nft_flush(struct dp_control *c);

static void
dp_nft_put(struct dp_nft_buf *b, const struct nft_elem *e)
{
	if (b->n == b->cap) {
		if (b->flush_to != NULL) {
			b->flush_to->nft_npending = b->n;
			dp_nft_flush(b->flush_to);
			b->n = 0;
		} else {
			size_t cap = b->cap ? 2 * b->cap : 1024;
			struct nft_elem *v = realloc(b->v, cap * sizeof(v[0]));

			if (v == NULL)
				return;		/* the next rebuild tries again */
			b->v = v;
			b->cap = cap;
		}
	}
	if (b->flush_to != NULL)
		b->flush_to->nft_pending_tsc[b->n] = b->tsc;
	b->v[b->n++] = *e;
}

/*
 * The nftables elements of one binding: the address (ICMP, later fragments), and the
 * address with each protocol and port the name's rules allow (port 0: every port).
 */
static void
dp_nft_binding(struct dp_control *c, struct dp_nft_buf *b, uint16_t slot, uint8_t family,
    const uint8_t *addr, const char *name, uint64_t expires, uint64_t now)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	static const uint8_t protos[] = { 6, 17 };
	struct nft_elem e = { .family = family };
	struct pol_ports ports;

	if (expires <= now || slot >= g->nvms || !g->vms[slot].present || c->nft_index[slot] < 0)
		return;
	pol_match_name_ports(g->set, g->vms[slot].policy, name, strlen(name), &ports);
	if (ports.deny_any || ports.deny_more || (!ports.any && ports.nallow == 0))
		return;			/* nothing on any port: nothing for the kernel either */
	e.vm = (uint16_t)c->nft_index[slot];
	memcpy(e.addr, addr, 16);
	e.timeout_ms = (uint32_t)((expires - now) * 1000);
	dp_nft_put(b, &e);
	for (size_t i = 0; i < sizeof(protos); i++) {
		e.proto = protos[i];
		if (ports.any) {
			e.port = 0;
			dp_nft_put(b, &e);
			continue;
		}
		for (unsigned int k = 0; k < ports.nallow; k++) {
			if (!pol_ports_allow(&ports, ports.allow[k]))
				continue;
			e.port = ports.allow[k];
			dp_nft_put(b, &e);
		}
	}
}

static void
dp_nft_flush(struct dp_control *c)
{
	uint64_t now;
	int rc;

	if (c->nft == NULL || c->nft_npending == 0) {
		c->nft_npending = 0;
		return;
	}
	rc = nft_bind(c->nft, c->nft_pending, c->nft_npending);
	/* -ESTALE: the table is not as built (deleted, edited): the next tick rebuilds it */
	if (rc == -ESTALE)
		c->nft_stale = true;
	if (rc == 0) {
		/* SPEC s5: from the DNS answer to the kernel's set, per element */
		now = rte_get_tsc_cycles();
		for (size_t i = 0; i < c->nft_npending; i++)
			dp_nft_latency_add(c, (uint32_t)((now - c->nft_pending_tsc[i]) * 1000000 /
			    c->ctx->tsc_hz));
	}
	c->nft_npending = 0;
}

static int
dp_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The q-quantile (0..1) of the latest learn-to-kernel latencies, seconds; 0 without any. */
static double
dp_nft_latency(const struct dp_control *c, double q)
{
	uint32_t v[RTE_DIM(c->nft_lat_us)];
	uint32_t n = c->nft_lat_n < RTE_DIM(v) ? c->nft_lat_n : (uint32_t)RTE_DIM(v);

	if (n == 0)
		return 0;
	memcpy(v, c->nft_lat_us, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), dp_u32_cmp);
	return v[(uint32_t)(q * (n - 1))] / 1e6;
}

/* A binding learned: its name for reloads, and the binding for listings and nftables. */
static void
dp_control_bind(struct dp_control *c, const struct dp_evt *e)
{
	const struct dp_ctx *ctx = c->ctx;
	uint64_t expires = e->expires;
	const char *name;

	if (dp_names_add(c->names, e->vm, e->name, e->name_len, &name) != 0)
		return;
	dp_mirror_bind(c->mirror, e->vm, e->family, e->addr, name, expires);
	if (c->nft != NULL) {
		struct dp_nft_buf b = { .v = c->nft_pending, .n = c->nft_npending,
			.cap = DP_NFT_BATCH, .flush_to = c, .tsc = e->tsc };

		dp_nft_binding(c, &b, e->vm, e->family, e->addr, name, expires, dp_now(ctx));
		c->nft_npending = b.n;
	}
}

struct dp_nft_walk {
	struct dp_control *c;
	struct dp_nft_buf *b;
	uint64_t now;
};

static void
dp_nft_walk_one(const struct dp_mirror_ent *e, void *arg)
{
	struct dp_nft_walk *wk = arg;

	dp_nft_binding(wk->c, wk->b, e->slot, e->family, e->addr, e->name, e->expires, wk->now);
}

/* (Re)build the table with every live binding: at start, after a reload or tampering. */
static int
dp_nft_rebuild(struct dp_control *c)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	struct dp_nft_buf b = { 0 };
	struct dp_nft_walk wk = { .c = c, .b = &b, .now = dp_now(c->ctx) };
	int rc;

	dp_nft_flush(c);
	for (uint16_t s = 0; s < g->nvms; s++)
		if (g->vms[s].present)
			dp_mirror_walk(c->mirror, s, wk.now, dp_nft_walk_one, &wk);
	rc = nft_build(c->nft, b.v, b.n);	/* one batch: the kernel takes all or nothing */
	free(b.v);
	return rc;
}

/* The running generation's name for VM slot, NULL for none. */
static const char *
dp_control_vm_name(const struct dp_control *c, uint16_t slot)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);

	return slot < g->nvms && g->vms[slot].present ? g->vms[slot].name : NULL;
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
				else if (e->type == DP_EVT_ASK || e->type == DP_EVT_ASK_END)
					ctl_approval_record(c->approvals, i,
					    dp_control_vm_name(c, e->vm), e, &now);
			}
			c->evt_seen += n;
		}
	}
	dp_nft_flush(c);
	if ((uint64_t)now.tv_sec != c->last_flush) {
		c->last_flush = (uint64_t)now.tv_sec;
		dp_mirror_expire(c->mirror, dp_now(c->ctx), 4096);
		/* SPEC s5: someone deleted or edited the table: put it back, bindings and all */
		if (c->nft != NULL && (c->nft_stale || nft_check(c->nft) != NFT_INTACT))
			c->nft_stale = dp_nft_rebuild(c) != 0;
		if (c->events != NULL)
			ctl_events_flush(c->events, &now);	/* suppressed counts, rotation */
	}
}

int
dp_control_reload(struct dp_control *c, FILE *err)
{
	struct timespec now;
	int rc;

	struct pol_errs errs = { 0 };
	uint32_t generation;

	ctl_notify_reloading();
	dp_control_drain(c);		/* every name learned so far counts */
	pthread_mutex_lock(&c->gen_lock);
	rc = dp_reload(c->ctx, c->cfgp, c->names, c->grants, &errs, err);
	/* under the lock: a scrape reads the table's counters */
	if (rc == 0 && c->nft != NULL && dp_control_nft_open(c, err) != 0)
		fputs("namegate: reload: the slow path's table could not be rebuilt\n", err);
	clock_gettime(CLOCK_REALTIME, &now);
	c->reload_ok = rc == 0;
	if (rc == 0)
		c->reload_ok_at = dp_control_seconds(&now);
	generation = atomic_load_explicit(&c->ctx->gen, memory_order_acquire)->id;
	pthread_mutex_unlock(&c->gen_lock);
	if (c->events != NULL && rc == 0)
		ctl_events_log_policy(c->events, &now, generation, (uint32_t)(*c->cfgp)->nvms,
		    (*c->cfgp)->path);
	else if (c->events != NULL && errs.n > 0)
		ctl_events_log_policy_rejected(c->events, &now, generation, errs.v[0].file,
		    errs.v[0].line, errs.v[0].col, errs.v[0].msg, errs.n + errs.dropped);
	else if (c->events != NULL)	/* the file was right; the new generation was not built */
		ctl_events_log_policy_rejected(c->events, &now, generation, (*c->cfgp)->path, 0, 0,
		    strerror(-rc), 1);
	pol_errs_free(&errs);
	ctl_notify_reloaded(rc == 0, generation, (uint32_t)(*c->cfgp)->nvms);
	return rc;
}

int
dp_control_nft_open(struct dp_control *c, FILE *err)
{
	const struct dp_gen *g = atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
	static struct nft_vm vms[DP_VM_SLOTS];
	uint16_t n = 0;

	if (c->nft_pending == NULL &&
	    ((c->nft_pending = calloc(DP_NFT_BATCH, sizeof(c->nft_pending[0]))) == NULL ||
	    (c->nft_pending_tsc = calloc(DP_NFT_BATCH, sizeof(uint64_t))) == NULL))
		return -1;
	for (uint16_t s = 0; s < DP_VM_SLOTS; s++) {
		const struct dp_vm *v = &g->vms[s];

		c->nft_index[s] = -1;
		if (s >= g->nvms || !v->present)
			continue;
		vms[n] = (struct nft_vm){ .name = v->name, .id = v->id };
		c->nft_index[s] = n++;
	}
	if (c->nft != NULL)
		nft_close(c->nft);	/* the table stays: the build below replaces it whole */
	if ((c->nft = nft_open((*c->cfgp)->nft_table, vms, n)) == NULL ||
	    nft_set_ports(c->nft, c->ctx->slow_ports[0], c->ctx->slow_ports[1]) != 0 ||
	    dp_nft_rebuild(c) != 0) {
		fprintf(err, "namegate: nftables table bridge %s: %s\n", (*c->cfgp)->nft_table,
		    strerror(errno));
		return -1;
	}
	return 0;
}

void
dp_control_nft_close(struct dp_control *c)
{
	if (c->nft != NULL) {
		nft_destroy(c->nft);
		nft_close(c->nft);
		c->nft = NULL;
	}
	free(c->nft_pending);
	free(c->nft_pending_tsc);
	c->nft_pending = NULL;
	c->nft_pending_tsc = NULL;
}

static void
dp_plane_drain(void *dp)
{
	dp_control_drain(dp);
}

/* Under gen_lock: a scrape reads the generation, and the table's counters. */
static int
dp_plane_generation(void *dp, const struct pol_config *cfg, bool closing, FILE *err)
{
	struct dp_control *c = dp;
	int rc;

	pthread_mutex_lock(&c->gen_lock);
	rc = dp_publish(c->ctx, cfg, c->names, closing, err);
	if (rc == 0 && c->nft != NULL && dp_control_nft_open(c, err) != 0)
		fputs("namegate: the slow path's table could not be rebuilt\n", err);
	pthread_mutex_unlock(&c->gen_lock);
	return rc;
}

static void
dp_plane_deny_ask(void *dp, unsigned int worker, uint32_t slot, uint64_t seq)
{
	struct dp_control *c = dp;

	if (worker < c->ctx->nworkers)
		dp_worker_ask_deny(c->ctx->workers[worker], slot, seq);
}

void
dp_control_plane_init(struct dp_control *c)
{
	c->plane = (struct dp_plane){ .dp = c, .drain = dp_plane_drain,
		.generation = dp_plane_generation, .deny_ask = dp_plane_deny_ask };
}
