/*
 * The slow path's feeder: bindings to nft elements, batched, and the table rebuilt when it
 * must be. What each binding opens is the workers' judgement (dp_evt_ports), never the
 * policy asked again here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api/dp_api.h"
#include "api/dp_plane.h"
#include "ctl_mirror.h"
#include "ctl_nft_feed_int.h"
#include "nft.h"


/* namegate_nft_bind_seconds' buckets, microseconds: fine around the 1 ms goal, then coarse */
static const uint32_t ctl_nft_lat_le_us[CTL_NFT_LAT_BUCKETS] = {
	100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1250, 1500, 2000, 2500, 3000,
	4000, 5000, 7500, 10000, 25000, 100000, 250000, 1000000, 5000000,
};

struct ctl_nft_feed *
ctl_nft_feed_new(const struct dp_plane *plane, const struct ctl_mirror *mirror,
    uint64_t (*tsc)(void), uint64_t tsc_hz)
{
	struct ctl_nft_feed *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	f->plane = plane;
	f->mirror = mirror;
	f->tsc = tsc;
	f->tsc_hz = tsc_hz != 0 ? tsc_hz : 1;
	if (getrandom(f->digest_key, sizeof(f->digest_key), 0) != sizeof(f->digest_key)) {
		free(f);
		return NULL;
	}
	return f;
}

static void
ctl_nft_vms_free(struct ctl_nft_feed *f)
{
	for (uint16_t i = 0; i < f->nvms; i++)
		free((char *)(uintptr_t)f->vms[i].name);
	free(f->vms);
	f->vms = NULL;
	f->nvms = 0;
}

void
ctl_nft_feed_free(struct ctl_nft_feed *f)
{
	if (f == NULL)
		return;
	if (f->nft != NULL) {
		nft_destroy(f->nft);
		nft_close(f->nft);
	}
	free(f->index);
	free(f->marked);
	ctl_nft_vms_free(f);
	free(f);
}

static void
ctl_nft_latency_add(struct ctl_nft_feed *f, uint32_t us)
{
	unsigned int i = 0;

	while (i < CTL_NFT_LAT_BUCKETS && us > ctl_nft_lat_le_us[i])
		i++;
	f->lat_hist[i]++;
	f->lat_sum_us += us;
	f->lat_us[f->lat_n++ % CTL_NFT_LAT_SAMPLES] = us;
}

void
ctl_nft_feed_flush(struct ctl_nft_feed *f)
{
	uint64_t now_tsc;
	int rc;

	if (f->nft == NULL || f->npending == 0) {
		f->npending = 0;
		return;
	}
	rc = nft_bind(f->nft, f->pending, f->npending);
	/* -ESTALE: the table is not as built (deleted, edited): the next check rebuilds it */
	if (rc == -ESTALE)
		f->stale = true;
	/* SPEC s5: from the DNS answer to the kernel's set, per element */
	now_tsc = f->tsc();
	for (size_t i = 0; rc == 0 && i < f->npending; i++)
		ctl_nft_latency_add(f, (uint32_t)((now_tsc - f->pending_tsc[i]) * 1000000 /
		    f->tsc_hz));
	f->npending = 0;
}

void
ctl_nft_put(struct ctl_nft_buf *b, const struct nft_elem *e)
{
	if (b->n == b->cap) {
		if (b->flush_to != NULL) {
			b->flush_to->npending = b->n;
			ctl_nft_feed_flush(b->flush_to);
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
		b->flush_to->pending_tsc[b->n] = b->tsc;
	b->v[b->n++] = *e;
}

void
ctl_nft_binding(struct ctl_nft_feed *f, struct ctl_nft_buf *b, uint16_t slot, uint8_t family,
    const uint8_t *addr, uint64_t expires, const struct dp_evt_ports *ports)
{
	static const uint8_t protos[] = { 6, 17 };
	struct nft_elem e = { .family = family };

	if (expires <= b->now || slot >= f->nindex || f->index[slot] < 0)
		return;
	if (!ports->all && ports->n == 0)
		return;			/* nothing on any port: nothing for the kernel either */
	e.vm = (uint16_t)f->index[slot];
	memcpy(e.addr, addr, 16);
	e.timeout_ms = (uint32_t)((expires - b->now) * 1000);
	ctl_nft_put(b, &e);
	for (size_t i = 0; i < sizeof(protos); i++) {
		e.proto = protos[i];
		if (ports->all) {
			e.port = 0;
			ctl_nft_put(b, &e);
			continue;
		}
		for (unsigned int k = 0; k < ports->n && k < DP_EVT_PORTS_MAX; k++) {
			e.port = ports->port[k];
			ctl_nft_put(b, &e);
		}
	}
}

void
ctl_nft_ports_now(struct ctl_nft_feed *f, uint32_t gen, uint16_t slot, const char *name,
    struct dp_evt_ports *ports)
{
	if (gen != f->plane->generation_id(f->plane->dp))
		f->plane->name_ports(f->plane->dp, slot, name, ports);
}

void
ctl_nft_feed_bind(struct ctl_nft_feed *f, const struct dp_evt *e, const char *name,
    uint64_t now)
{
	struct ctl_nft_buf b = { .v = f->pending, .n = f->npending, .cap = CTL_NFT_BATCH,
		.flush_to = f, .tsc = e->tsc, .now = now };
	struct dp_evt_ports ports = e->ports;

	if (f->nft == NULL)
		return;
	ctl_nft_ports_now(f, e->gen, e->vm, name, &ports);
	ctl_nft_binding(f, &b, e->vm, e->family, e->addr, e->expires, &ports);
	f->npending = b.n;
}

struct ctl_nft_walk {
	struct ctl_nft_feed *f;
	struct ctl_nft_buf *b;
};

static void
ctl_nft_walk_one(const struct ctl_mirror_ent *e, void *arg)
{
	struct ctl_nft_walk *wk = arg;
	struct dp_evt_ports ports = e->ports;

	ctl_nft_ports_now(wk->f, e->gen, e->slot, e->name, &ports);
	ctl_nft_binding(wk->f, wk->b, e->slot, e->family, e->addr, e->expires, &ports);
}

/* (Re)build the table with every live binding: at start, after a reload or tampering. */
static int
ctl_nft_rebuild(struct ctl_nft_feed *f, uint64_t now)
{
	struct ctl_nft_buf b = { .now = now };
	struct ctl_nft_walk wk = { .f = f, .b = &b };
	int rc;

	ctl_nft_feed_flush(f);
	ctl_mirror_walk_all(f->mirror, now, ctl_nft_walk_one, &wk);	/* VMs of no set: none */
	rc = nft_build(f->nft, b.v, b.n);	/* one batch: the kernel takes all or nothing */
	free(b.v);
	return rc;
}

/* index[slot] for vms[0..n), and a copy of them; -ENOMEM. */
static int
ctl_nft_index(struct ctl_nft_feed *f, const struct ctl_nft_vm *vms, uint16_t n)
{
	struct ctl_nft_vm *copy = calloc(n + 1u, sizeof(copy[0]));
	uint32_t slots = 0;
	int *index;

	if (copy == NULL)
		return -ENOMEM;
	ctl_nft_vms_free(f);
	f->vms = copy;
	for (uint16_t i = 0; i < n; i++, f->nvms++) {
		copy[i] = vms[i];
		if ((copy[i].name = strdup(vms[i].name)) == NULL)
			return -ENOMEM;
	}

	for (uint16_t i = 0; i < n; i++)
		if ((uint32_t)vms[i].slot + 1 > slots)
			slots = (uint32_t)vms[i].slot + 1;
	if ((index = malloc((slots + 1) * sizeof(index[0]))) == NULL)
		return -ENOMEM;
	for (uint32_t s = 0; s <= slots; s++)
		index[s] = -1;
	for (uint16_t i = 0; i < n; i++)
		index[vms[i].slot] = i;
	free(f->index);
	f->index = index;
	f->nindex = slots;
	return 0;
}

int
ctl_nft_feed_open(struct ctl_nft_feed *f, const char *table, const struct ctl_nft_vm *vms,
    uint16_t n, const char *slow_a, const char *slow_b, uint64_t now)
{
	struct nft_vm *v = calloc(n + 1u, sizeof(v[0]));

	if (v == NULL || ctl_nft_index(f, vms, n) != 0) {
		free(v);
		errno = ENOMEM;
		return -1;
	}
	for (uint16_t i = 0; i < n; i++)
		v[i] = (struct nft_vm){ .name = vms[i].name, .id = vms[i].id };
	if (f->nft != NULL)
		nft_close(f->nft);	/* the table stays: the build below replaces it whole */
	f->npending = 0;
	f->nft = nft_open(table, v, n);
	f->has_marks = false;
	free(v);
	if (f->nft == NULL || nft_set_ports(f->nft, slow_a, slow_b) != 0 ||
	    ctl_nft_rebuild(f, now) != 0)
		return -1;
	return 0;
}

/*
 * namegate_nft_elements, counted from the kernel: tracking adds could not see what expires
 * there on its own, an add that only refreshes, or a rebuild; counting is exact. A count
 * lists every set, so the next waits CTL_NFT_COUNT_SPACING times what this one cost (at
 * least the second it is asked in): a table of a million elements costs the main lcore a
 * bounded share, one of a few thousand is counted every second. A failed count (the
 * ruleset changed under it) keeps the last value until the next.
 */
static void
ctl_nft_count(struct ctl_nft_feed *f, uint64_t now)
{
	uint64_t t0, n;

	if (now < f->count_at)
		return;
	t0 = f->tsc();
	if (nft_count(f->nft, &n) == 0)
		atomic_store_explicit(&f->elements, n, memory_order_relaxed);
	f->count_at = now + 1 + (f->tsc() - t0) * CTL_NFT_COUNT_SPACING / f->tsc_hz;
}

void
ctl_nft_feed_check(struct ctl_nft_feed *f, uint64_t now)
{
	if (f->nft == NULL)
		return;
	/* SPEC s5: someone deleted or edited the table: put it back, bindings and all */
	if (f->stale || nft_check(f->nft) != NFT_INTACT)
		f->stale = ctl_nft_rebuild(f, now) != 0;
	ctl_nft_count(f, now);
}

static int
ctl_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The q-quantile (0..1) of the latest learn-to-kernel latencies, seconds; 0 without any. */
static double
ctl_nft_latency(const struct ctl_nft_feed *f, double q)
{
	uint32_t v[CTL_NFT_LAT_SAMPLES];
	uint32_t n = f->lat_n < CTL_NFT_LAT_SAMPLES ? f->lat_n : CTL_NFT_LAT_SAMPLES;

	if (n == 0)
		return 0;
	memcpy(v, f->lat_us, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), ctl_u32_cmp);
	return v[(uint32_t)(q * (n - 1))] / 1e6;
}

/* Every sample since start, as a histogram: a p99 over all of them, not the latest 1024. */
static void
ctl_nft_latency_histogram(const struct ctl_nft_feed *f, FILE *out)
{
	uint64_t cum = 0;

	fputs("# HELP namegate_nft_bind_seconds From a binding's DNS answer to its nft element, "
	    "every binding since start\n"
	    "# TYPE namegate_nft_bind_seconds histogram\n", out);
	for (unsigned int i = 0; i < CTL_NFT_LAT_BUCKETS; i++) {
		cum += f->lat_hist[i];
		fprintf(out, "namegate_nft_bind_seconds_bucket{le=\"%.4f\"} %" PRIu64 "\n",
		    ctl_nft_lat_le_us[i] / 1e6, cum);
	}
	cum += f->lat_hist[CTL_NFT_LAT_BUCKETS];
	fprintf(out, "namegate_nft_bind_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n"
	    "namegate_nft_bind_seconds_sum %.6f\n"
	    "namegate_nft_bind_seconds_count %" PRIu64 "\n", cum, f->lat_sum_us / 1e6, cum);
}

void
ctl_nft_feed_render(struct ctl_nft_feed *f, FILE *out)
{
	struct nft_stats ns = { 0 };

	if (f->nft != NULL)
		nft_stats_get(f->nft, &ns);	/* plain counters: a torn read is off by one batch */
	fputs("# HELP namegate_nft_bind_latency_seconds From a binding's DNS answer to its nft "
	    "element, over the latest bindings\n"
	    "# TYPE namegate_nft_bind_latency_seconds summary\n", out);
	fprintf(out, "namegate_nft_bind_latency_seconds{quantile=\"0.5\"} %.6f\n"
	    "namegate_nft_bind_latency_seconds{quantile=\"0.99\"} %.6f\n",
	    ctl_nft_latency(f, 0.5), ctl_nft_latency(f, 0.99));
	ctl_nft_latency_histogram(f, out);
	fprintf(out, "# HELP namegate_nft_elements Elements the slow path's nft sets hold, as the "
	    "kernel counts them\n"
	    "# TYPE namegate_nft_elements gauge\n"
	    "namegate_nft_elements %" PRIu64 "\n"
	    "# HELP namegate_nft_errors_total nft batches the kernel refused\n"
	    "# TYPE namegate_nft_errors_total counter\n"
	    "namegate_nft_errors_total %" PRIu64 "\n",
	    atomic_load_explicit(&f->elements, memory_order_relaxed), ns.errors);
}
