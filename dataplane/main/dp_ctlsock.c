/*
 * Control-socket callbacks: status, stats, bindings, flows, reload, check, suggest.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dp_bind.h"
#include "dp_control.h"
#include "dp_ctlsock.h"
#include "dp_flow.h"
#include "dp_mirror.h"
#include "dp_names.h"
#include "dp_reload.h"
#include "dp_stats.h"
#include "policy/load.h"

static void
js(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static const struct dp_gen *
dp_cs_gen(const struct dp_control *c)
{
	return atomic_load_explicit(&c->ctx->gen, memory_order_acquire);
}

static int
dp_cs_slot(FILE *out, const struct dp_gen *g, const char *vm)
{
	for (uint16_t i = 0; i < g->nvms; i++)
		if (g->vms[i].present && strcmp(g->vms[i].name, vm) == 0)
			return i;
	fprintf(out, "unknown VM '%s'", vm);
	return -ENOENT;
}

static uint64_t
dp_cs_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

static int
dp_cs_status(FILE *out, void *arg)
{
	struct dp_control *c = arg;
	const struct pol_config *cfg = *c->cfgp;
	char events[PATH_MAX];

	if (realpath(cfg->events, events) == NULL)
		snprintf(events, sizeof(events), "%s", cfg->events);
	fprintf(out, "{\"version\":\"0.1.0\",\"pid\":%d,\"generation\":%u,\"config\":", getpid(),
	    dp_cs_gen(c)->id);
	js(out, cfg->path);
	fprintf(out, ",\"vms\":%zu,\"workers\":%u,\"uptime\":%lu,\"events\":", cfg->nvms,
	    c->ctx->nworkers, dp_cs_monotonic() - c->started);
	js(out, events);
	fputs(",\"metrics\":", out);
	js(out, cfg->metrics);
	fputs(",\"ports\":{\"vm\":", out);
	js(out, cfg->vm_port);
	fputs(",\"uplink\":", out);
	js(out, cfg->uplink_port);
	fputs("}}", out);
	return 0;
}

static void
dp_cs_stats_vm(FILE *out, const struct dp_control *c, uint16_t slot)
{
	const struct dp_vm *v = &dp_cs_gen(c)->vms[slot];
	struct dp_vm_stats s;

	dp_stats_sum(c->ctx, slot, &s);
	fputs("{\"vm\":", out);
	js(out, v->name);
	fprintf(out, ",\"mode\":\"%s\",\"egress\":{", v->audit ? "audit" : "enforce");
	for (int i = 0; i < DP_VERDICT_MAX; i++)
		fprintf(out, "%s\"%s\":{\"packets\":%lu,\"bytes\":%lu}", i ? "," : "",
		    dp_verdict_labels[i], s.egress_pkts[i], s.egress_bytes[i]);
	fprintf(out, "},\"ingress\":{\"packets\":%lu,\"bytes\":%lu},\"blocked\":{",
	    s.ingress_pkts, s.ingress_bytes);
	for (int r = 0; r < DP_REASON_MAX; r++)
		fprintf(out, "%s\"%s\":%lu", r ? "," : "", dp_reason_labels[r], s.blocked[r]);
	fprintf(out, "},\"dns\":{\"allowed\":%lu,\"blocked\":%lu},\"bindings\":%lu,\"flows\":%lu}",
	    s.dns_allowed, s.dns_blocked, dp_binds_count(c->ctx->binds, slot),
	    dp_stats_flows(c->ctx, slot));
}

static int
dp_cs_stats(FILE *out, const char *vm, void *arg)
{
	struct dp_control *c = arg;
	const struct dp_gen *g = dp_cs_gen(c);
	static const char *const ports[] = { "vm", "uplink", "slow" };
	bool first = true;
	int slot = -1;

	if (vm != NULL && (slot = dp_cs_slot(out, g, vm)) < 0)
		return slot;
	fputs("{\"vms\":[", out);
	for (uint16_t i = 0; i < g->nvms; i++) {
		if (!g->vms[i].present || (slot >= 0 && i != slot))
			continue;
		if (!first)
			fputc(',', out);
		first = false;
		dp_cs_stats_vm(out, c, i);
	}
	fputs("],\"ports\":{", out);
	for (int p = 0; p <= DP_PORT_SLOW_VM; p++) {
		uint64_t rx = 0, tx = 0;

		for (unsigned int w = 0; w < c->ctx->nworkers; w++)
			for (int q = p; q <= (p == DP_PORT_SLOW_VM ? DP_PORT_SLOW_UP : p); q++) {
				rx += c->ctx->workers[w]->port_pkts[q][0];
				tx += c->ctx->workers[w]->port_pkts[q][1];
			}
		fprintf(out, "%s\"%s\":{\"rx\":%lu,\"tx\":%lu}", p ? "," : "", ports[p], rx, tx);
	}
	fprintf(out, "},\"generation\":%u}", g->id);
	return 0;
}

struct dp_cs_walk {
	FILE *out;
	uint64_t now;
	bool first;
};

static void
dp_cs_binding(const struct dp_mirror_ent *e, void *arg)
{
	struct dp_cs_walk *wk = arg;
	char addr[INET6_ADDRSTRLEN];

	inet_ntop(e->family == 6 ? AF_INET6 : AF_INET, e->addr, addr, sizeof(addr));
	fputs(wk->first ? "{\"name\":" : ",{\"name\":", wk->out);
	wk->first = false;
	js(wk->out, e->name);
	fprintf(wk->out, ",\"addr\":\"%s\",\"ttl\":%lu}", addr, e->expires - wk->now);
}

static int
dp_cs_bindings(FILE *out, const char *vm, void *arg)
{
	struct dp_control *c = arg;
	struct dp_cs_walk wk = { .out = out, .now = dp_now(c->ctx), .first = true };
	int slot;

	if ((slot = dp_cs_slot(out, dp_cs_gen(c), vm)) < 0)
		return slot;
	fputs("{\"vm\":", out);
	js(out, vm);
	fputs(",\"bindings\":[", out);
	dp_mirror_walk(c->mirror, (uint16_t)slot, wk.now, dp_cs_binding, &wk);
	fputs("]}", out);
	return 0;
}

static void
dp_cs_flow(const struct dp_flow *f, void *arg)
{
	static const char *const states[] = { "syn_sent", "established", "closing" };
	struct dp_cs_walk *wk = arg;
	char addr[INET6_ADDRSTRLEN];

	inet_ntop(f->key.family == 6 ? AF_INET6 : AF_INET, f->key.peer, addr, sizeof(addr));
	fprintf(wk->out, "%s{\"proto\":\"%s\",\"peer\":\"%s%s%s:%u\",\"vm_port\":%u,"
	    "\"state\":\"%s\",\"age\":%lu,\"verdict\":\"%s\"}", wk->first ? "" : ",",
	    f->key.proto == 6 ? "tcp" : "udp", f->key.family == 6 ? "[" : "", addr,
	    f->key.family == 6 ? "]" : "", f->key.peer_port, f->key.vm_port,
	    f->state < 3 ? states[f->state] : "?", wk->now - f->last_seen,
	    f->would_block ? "would_block" : "allowed");
	wk->first = false;
}

/*
 * The workers own their flow tables and go on changing them meanwhile: an entry read here
 * may be a moment old or half-rewritten. Good enough for a listing; never used to decide.
 */
static int
dp_cs_flows(FILE *out, const char *vm, void *arg)
{
	struct dp_control *c = arg;
	struct dp_cs_walk wk = { .out = out, .now = dp_now(c->ctx), .first = true };
	int slot;

	if ((slot = dp_cs_slot(out, dp_cs_gen(c), vm)) < 0)
		return slot;
	fputs("{\"vm\":", out);
	js(out, vm);
	fputs(",\"flows\":[", out);
	for (unsigned int i = 0; i < c->ctx->nworkers; i++)
		dp_flows_walk(c->ctx->workers[i]->flows, (uint16_t)slot, dp_cs_flow, &wk);
	fputs("]}", out);
	return 0;
}

static int
dp_cs_reload(FILE *out, void *arg)
{
	struct dp_control *c = arg;
	int rc;

	if ((rc = dp_control_reload(c, out)) != 0)
		return rc;
	/* dp_reload wrote its progress to out: the reply is the new generation only */
	rewind(out);
	fprintf(out, "{\"ok\":true,\"generation\":%u}", dp_cs_gen(c)->id);
	return 0;
}

static int
dp_cs_check(FILE *out, const char *vm, const char *host, void *arg)
{
	struct dp_control *c = arg;
	char *line = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if ((mem = open_memstream(&line, &len)) == NULL)
		return -ENOMEM;
	rc = pol_explain(*c->cfgp, vm, host, mem, out);
	fclose(mem);
	if (rc == 2) {
		free(line);
		return -EINVAL;
	}
	if (len > 0 && line[len - 1] == '\n')
		line[len - 1] = '\0';
	fprintf(out, "{\"verdict\":\"%s\",\"line\":", rc == 0 ? "allow" : "block");
	js(out, line != NULL ? line : "");
	fputc('}', out);
	free(line);
	return 0;
}

struct dp_cs_names {
	const char **v;
	size_t n, cap;
};

static void
dp_cs_collect(const char *name, void *arg)
{
	struct dp_cs_names *l = arg;

	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], name) == 0)
			return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		const char **v = realloc(l->v, cap * sizeof(v[0]));

		if (v == NULL)
			return;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = name;
}

static int
dp_cs_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* What the VM resolved or was refused: a starting allowlist for an audited VM. */
static int
dp_cs_suggest(FILE *out, const char *vm, void *arg)
{
	struct dp_control *c = arg;
	const struct dp_gen *g = dp_cs_gen(c);
	struct dp_cs_names l = { 0 };
	int slot;

	if ((slot = dp_cs_slot(out, g, vm)) < 0)
		return slot;
	dp_names_of(c->names, (uint16_t)slot, dp_cs_collect, &l);
	dp_names_of(c->tried, (uint16_t)slot, dp_cs_collect, &l);
	qsort(l.v, l.n, sizeof(l.v[0]), dp_cs_cmp);
	fputs("{\"vm\":", out);
	js(out, vm);
	fputs(",\"policy\":", out);
	js(out, pol_set_policy_name(g->set, g->vms[slot].policy));
	fputs(",\"allow\":[", out);
	for (size_t i = 0; i < l.n; i++) {
		if (i > 0)
			fputc(',', out);
		js(out, l.v[i]);
	}
	fputs("]}", out);
	free(l.v);
	return 0;
}

const struct ctl_sock_ops dp_ctlsock_ops = {
	.status = dp_cs_status,
	.stats = dp_cs_stats,
	.bindings = dp_cs_bindings,
	.flows = dp_cs_flows,
	.reload = dp_cs_reload,
	.check = dp_cs_check,
	.suggest = dp_cs_suggest,
};
