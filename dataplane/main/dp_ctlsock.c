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

#include <json-c/json.h>

#include "dp_control.h"
#include "ctl_events.h"
#include "dp_ctlsock.h"
#include "dp_flowlog_out.h"
#include "dp_flow.h"
#include "ctl_grants_live.h"
#include "ctl_mirror.h"
#include "ctl_names.h"
#include "dp_stats.h"
#include "policy/load.h"

/*
 * Replies are built as json-c objects: json-c escapes the strings. Names from the wire are
 * ASCII by the time they get here (SNI: LDH only, DNS: presentation form, \DDD escapes);
 * the rest comes from the UTF-8 configuration or the request itself.
 */

/* o[key] = v; false (v freed) when o or v is NULL, out of memory, or the add fails. */
static bool
dp_cs_set(struct json_object *o, const char *key, struct json_object *v)
{
	if (o == NULL || v == NULL || json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return false;
	}
	return true;
}

/* a[] += v, as dp_cs_set(). */
static bool
dp_cs_append(struct json_object *a, struct json_object *v)
{
	if (a == NULL || v == NULL || json_object_array_add(a, v) < 0) {
		json_object_put(v);
		return false;
	}
	return true;
}

/* The object o[key], added empty when absent; NULL when o is or out of memory. */
static struct json_object *
dp_cs_sub(struct json_object *o, const char *key)
{
	struct json_object *sub;

	if (o == NULL)
		return NULL;
	if (json_object_object_get_ex(o, key, &sub))
		return sub;
	sub = json_object_new_object();
	return dp_cs_set(o, key, sub) ? sub : NULL;
}

/* Writes o to out on one line and frees it; -ENOMEM when !ok (something was not added). */
static int
dp_cs_reply(FILE *out, struct json_object *o, bool ok)
{
	const char *text = NULL;

	if (ok && o != NULL)
		text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text != NULL)
		fputs(text, out);
	json_object_put(o);
	return text != NULL ? 0 : -ENOMEM;
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

/* A log's target as namegatectl may open it: a file's real path; "-" or "unix:" as given. */
static const char *
dp_cs_log_path(const char *path, char *buf, size_t len)
{
	if (len < PATH_MAX || realpath(path, buf) == NULL)
		snprintf(buf, len, "%s", path);
	return buf;
}

/* logrotate's postrotate, as SIGUSR2: the event log and the flow log opened again. */
static int
dp_cs_reopen(FILE *out, const struct ctl_req *req __attribute__((unused)), void *arg)
{
	struct dp_control *c = arg;
	int rc;

	if (c->events != NULL && (rc = ctl_events_reopen(c->events)) != 0) {
		fprintf(out, "events: cannot reopen: %s", strerror(-rc));
		return rc;
	}
	if (c->flowlog != NULL && (rc = dp_flowlog_out_reopen(c->flowlog)) != 0) {
		fprintf(out, "flow_log: cannot reopen: %s", strerror(-rc));
		return rc;
	}
	return dp_cs_reply(out, json_object_new_object(), true);
}

/*
 * Where this box's fleet keeps its records, so that namegatectl on it writes a grant to
 * the store with the operator's own credentials (never this gateway's).
 */
static bool
dp_cs_fleet(struct json_object *o, const struct pol_config *cfg)
{
	struct json_object *f, *eps = NULL;
	bool ok;

	if (cfg->fleet_name == NULL)
		return true;
	ok = (f = dp_cs_sub(o, "fleet")) != NULL &&
	    dp_cs_set(f, "name", json_object_new_string(cfg->fleet_name)) &&
	    dp_cs_set(f, "shard", json_object_new_string(cfg->fleet_shard)) &&
	    dp_cs_set(f, "gateway", json_object_new_string(cfg->fleet_gateway)) &&
	    dp_cs_set(f, "prefix", json_object_new_string(cfg->fleet_prefix)) &&
	    (eps = json_object_new_array()) != NULL && dp_cs_set(f, "endpoints", eps);
	for (size_t i = 0; ok && i < cfg->nfleet_endpoints; i++)
		ok = json_object_array_add(eps, json_object_new_string(cfg->fleet_endpoints[i])) ==
		    0;
	return ok;
}

static int
dp_cs_status(FILE *out, const struct ctl_req *req __attribute__((unused)), void *arg)
{
	struct dp_control *c = arg;
	const struct pol_config *cfg = *c->cfgp;
	struct json_object *o = json_object_new_object(), *ports;
	char events[PATH_MAX], flow_log[PATH_MAX];
	bool ok;

	dp_cs_log_path(cfg->events, events, sizeof(events));
	ok = dp_cs_set(o, "version", json_object_new_string("0.1.0")) &&
	    dp_cs_set(o, "pid", json_object_new_int(getpid())) &&
	    dp_cs_set(o, "generation", json_object_new_uint64(dp_cs_gen(c)->id)) &&
	    dp_cs_set(o, "config", json_object_new_string(cfg->path)) &&
	    dp_cs_set(o, "vms", json_object_new_uint64(cfg->nvms)) &&
	    dp_cs_set(o, "workers", json_object_new_uint64(c->ctx->nworkers)) &&
	    dp_cs_set(o, "uptime", json_object_new_uint64(dp_cs_monotonic() - c->started)) &&
	    dp_cs_set(o, "events", json_object_new_string(events)) &&
	    (c->flowlog == NULL ||
	    dp_cs_set(o, "flow_log", json_object_new_string(dp_cs_log_path(cfg->flow_log,
	    flow_log, sizeof(flow_log))))) &&
	    dp_cs_set(o, "metrics", json_object_new_string(cfg->metrics)) &&
	    (ports = dp_cs_sub(o, "ports")) != NULL &&
	    dp_cs_set(ports, "vm", json_object_new_string(cfg->vm_port)) &&
	    dp_cs_set(ports, "uplink", json_object_new_string(cfg->uplink_port)) &&
	    dp_cs_fleet(o, cfg);
	return dp_cs_reply(out, o, ok);
}

/*
 * The values of the families of scope (one VM's, or the global ones) into o, each where
 * api/dp_counters.h puts it: json / dim1 value / dim2 value / key.
 */
static bool
dp_cs_counters(struct json_object *o, const struct dp_ctx *ctx, enum dp_cnt_scope scope,
    uint16_t vm)
{
	bool ok = true;

	for (enum dp_cnt f = 0; f < DP_CNT_MAX; f++) {
		const struct dp_cnt_def *d = dp_cnt_def(f);
		unsigned int n1, n2;
		const char *const *v1 = dp_stats_dim(d->dim[0], &n1);
		const char *const *v2 = dp_stats_dim(d->dim[1], &n2);

		if (d->scope != scope || (d->json == NULL && d->key == NULL))
			continue;
		for (unsigned int i = 0; i < n1; i++)
			for (unsigned int j = 0; j < n2; j++) {
				const char *path[4];
				struct json_object *at = o;
				size_t n = 0;

				if (d->json != NULL)
					path[n++] = d->json;
				if (v1[i] != NULL)
					path[n++] = v1[i];
				if (v2[j] != NULL)
					path[n++] = v2[j];
				if (d->key != NULL)
					path[n++] = d->key;
				for (size_t k = 0; k + 1 < n; k++)
					at = dp_cs_sub(at, path[k]);
				ok = dp_cs_set(at, path[n - 1], json_object_new_uint64(
				    dp_stats_value(ctx, f, vm, i, j))) && ok;
			}
	}
	return ok;
}

static int
dp_cs_stats(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	struct dp_control *c = arg;
	const struct dp_gen *g = dp_cs_gen(c);
	struct json_object *o, *vms;
	int slot = -1;
	bool ok;

	if (vm != NULL && (slot = dp_cs_slot(out, g, vm)) < 0)
		return slot;
	o = json_object_new_object();
	vms = json_object_new_array();
	if (!(ok = dp_cs_set(o, "vms", vms)))
		vms = NULL;		/* freed */
	for (uint16_t i = 0; i < g->nvms; i++) {
		struct json_object *v;

		if (!g->vms[i].present || (slot >= 0 && i != slot))
			continue;
		v = json_object_new_object();
		ok = dp_cs_set(v, "vm", json_object_new_string(g->vms[i].name)) &&
		    dp_cs_set(v, "mode", json_object_new_string(g->vms[i].audit ? "audit" :
		    "enforce")) && dp_cs_counters(v, c->ctx, DP_CNT_VM, i) && ok;
		ok = dp_cs_append(vms, v) && ok;
	}
	ok = dp_cs_counters(o, c->ctx, DP_CNT_GLOBAL, 0) && ok;
	return dp_cs_reply(out, o, ok);
}

struct dp_cs_walk {
	struct json_object *list;
	uint64_t now;
	bool ok;
};

/* What a binding opens: "any", or its ports ([] when its name is denied on every one). */
static struct json_object *
dp_cs_ports(const struct dp_evt_ports *p)
{
	struct json_object *a;

	if (p->all)
		return json_object_new_string("any");
	a = json_object_new_array();
	for (unsigned int i = 0; a != NULL && i < p->n && i < DP_EVT_PORTS_MAX; i++)
		if (json_object_array_add(a, json_object_new_uint64(p->port[i])) != 0)
			break;
	return a;
}

static void
dp_cs_binding(const struct ctl_mirror_ent *e, void *arg)
{
	struct dp_cs_walk *wk = arg;
	struct json_object *b = json_object_new_object();
	char addr[INET6_ADDRSTRLEN];

	inet_ntop(e->family == 6 ? AF_INET6 : AF_INET, e->addr, addr, sizeof(addr));
	wk->ok = dp_cs_append(wk->list, b) &&
	    dp_cs_set(b, "name", json_object_new_string(e->name)) &&
	    dp_cs_set(b, "addr", json_object_new_string(addr)) &&
	    dp_cs_set(b, "ttl", json_object_new_uint64(e->expires - wk->now)) &&
	    dp_cs_set(b, "ports", dp_cs_ports(&e->ports)) && wk->ok;
}

/* {"vm":vm,key:[...]}, its list in *list; NULL when out of memory. */
static struct json_object *
dp_cs_vm_list(const char *vm, const char *key, struct json_object **list)
{
	struct json_object *o = json_object_new_object();
	bool ok = dp_cs_set(o, "vm", json_object_new_string(vm));

	*list = json_object_new_array();
	if (!dp_cs_set(o, key, *list) || !ok) {		/* it takes *list, or frees it */
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* {"vm":VM,KEY:[...]} with what walk puts in the list for vm's slot. */
static int
dp_cs_listing(FILE *out, struct dp_control *c, const char *vm, const char *key,
    void (*walk)(struct dp_control *c, uint16_t slot, struct dp_cs_walk *wk))
{
	struct dp_cs_walk wk = { .now = dp_now(c->ctx), .ok = true };
	struct json_object *o;
	int slot;

	if ((slot = dp_cs_slot(out, dp_cs_gen(c), vm)) < 0)
		return slot;
	if ((o = dp_cs_vm_list(vm, key, &wk.list)) == NULL)
		return -ENOMEM;
	walk(c, (uint16_t)slot, &wk);
	return dp_cs_reply(out, o, wk.ok);
}

static void
dp_cs_bindings_walk(struct dp_control *c, uint16_t slot, struct dp_cs_walk *wk)
{
	ctl_mirror_walk(c->mirror, slot, wk->now, dp_cs_binding, wk);
}

static int
dp_cs_bindings(FILE *out, const struct ctl_req *req, void *arg)
{
	return dp_cs_listing(out, arg, req->vm, "bindings", dp_cs_bindings_walk);
}

static void
dp_cs_flow(const struct dp_flow *f, void *arg)
{
	static const char *const states[] = { "syn_sent", "established", "closing" };
	struct dp_cs_walk *wk = arg;
	struct json_object *o = json_object_new_object();
	char addr[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN + 8];

	inet_ntop(f->key.family == 6 ? AF_INET6 : AF_INET, f->key.peer, addr, sizeof(addr));
	snprintf(peer, sizeof(peer), f->key.family == 6 ? "[%s]:%u" : "%s:%u", addr,
	    f->key.peer_port);
	wk->ok = dp_cs_append(wk->list, o) &&
	    dp_cs_set(o, "proto", json_object_new_string(f->key.proto == 6 ? "tcp" : "udp")) &&
	    dp_cs_set(o, "peer", json_object_new_string(peer)) &&
	    dp_cs_set(o, "vm_port", json_object_new_int(f->key.vm_port)) &&
	    dp_cs_set(o, "state", json_object_new_string(f->state < 3 ? states[f->state] : "?")) &&
	    dp_cs_set(o, "age", json_object_new_uint64(wk->now - f->last_seen)) &&
	    dp_cs_set(o, "verdict", json_object_new_string(f->would_block ? "would_block" :
	    "allowed")) && wk->ok;
}

/*
 * The workers own their flow tables and go on changing them meanwhile: an entry read here
 * may be a moment old or half-rewritten. Good enough for a listing; never used to decide.
 */
static void
dp_cs_flows_walk(struct dp_control *c, uint16_t slot, struct dp_cs_walk *wk)
{
	for (unsigned int i = 0; i < c->ctx->nworkers; i++)
		dp_flows_walk(c->ctx->workers[i]->flows, slot, dp_cs_flow, wk);
}

static int
dp_cs_flows(FILE *out, const struct ctl_req *req, void *arg)
{
	return dp_cs_listing(out, arg, req->vm, "flows", dp_cs_flows_walk);
}

static int
dp_cs_check(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm, *host = req->host;
	struct dp_control *c = arg;
	struct json_object *o;
	char *line = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if ((mem = open_memstream(&line, &len)) == NULL)
		return -ENOMEM;
	/* the grants in force too: a grant that decides is named (policy/load pol_explain) */
	rc = pol_explain(c->grants != NULL ? ctl_grants_live_view(c->grants) : *c->cfgp, vm, host, mem, out);
	fclose(mem);
	if (rc == 2) {
		free(line);
		return -EINVAL;
	}
	if (len > 0 && line[len - 1] == '\n')
		line[len - 1] = '\0';
	o = json_object_new_object();
	rc = dp_cs_reply(out, o, dp_cs_set(o, "verdict", json_object_new_string(rc == 0 ?
	    "allow" : "block")) && dp_cs_set(o, "line", json_object_new_string(line != NULL ?
	    line : "")));
	free(line);
	return rc;
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

/* The VM's policy as configured: the generation's may be its copy with grants. */
static const char *
dp_cs_policy_name(const struct pol_config *cfg, const char *vm)
{
	const struct pol_vm *v = pol_config_vm(cfg, vm);

	return v != NULL ? pol_set_policy_name(cfg->set, v->policy) : "";
}

/* What the VM resolved or was refused: a starting allowlist for an audited VM. */
static int
dp_cs_suggest(FILE *out, const struct ctl_req *req, void *arg)
{
	const char *vm = req->vm;
	struct dp_control *c = arg;
	const struct dp_gen *g = dp_cs_gen(c);
	struct json_object *o, *allow;
	struct dp_cs_names l = { 0 };
	bool ok;
	int slot;

	if ((slot = dp_cs_slot(out, g, vm)) < 0)
		return slot;
	ctl_names_of(c->names, (uint16_t)slot, dp_cs_collect, &l);
	ctl_names_of(c->tried, (uint16_t)slot, dp_cs_collect, &l);
	qsort(l.v, l.n, sizeof(l.v[0]), dp_cs_cmp);
	o = json_object_new_object();
	allow = json_object_new_array();
	ok = dp_cs_set(o, "vm", json_object_new_string(vm)) &&
	    dp_cs_set(o, "policy", json_object_new_string(dp_cs_policy_name(*c->cfgp, vm)));
	ok = dp_cs_set(o, "allow", allow) && ok;	/* it takes allow, or frees it */
	for (size_t i = 0; ok && i < l.n; i++)
		ok = dp_cs_append(allow, json_object_new_string(l.v[i]));
	free(l.v);
	return dp_cs_reply(out, o, ok);
}

/* The daemon's own commands: what the running generation and the workers' tables say. */
static const struct ctl_cmd dp_ctlsock_cmds[] = {
	{ "status", 0, dp_cs_status },
	{ "stats", CTL_ARG_VM, dp_cs_stats },
	{ "bindings", CTL_ARG_VM | CTL_ARG_VM_REQ, dp_cs_bindings },
	{ "flows", CTL_ARG_VM | CTL_ARG_VM_REQ, dp_cs_flows },
	{ "check", CTL_ARG_VM | CTL_ARG_VM_REQ | CTL_ARG_HOST, dp_cs_check },
	{ "suggest", CTL_ARG_VM | CTL_ARG_VM_REQ, dp_cs_suggest },
	{ "reopen", 0, dp_cs_reopen },
};

struct ctl_sock *
dp_ctlsock_open(const struct pol_config *cfg, char *err, size_t errlen)
{
	struct ctl_sock *s;

	if ((s = ctl_sock_open(cfg->control_socket, 0, err, errlen)) == NULL)
		return NULL;
	if ((cfg->control_socket_gid != POL_GROUP_NONE &&
	    ctl_sock_chgrp(s, cfg->control_socket_gid, err, errlen) < 0) ||
	    (cfg->control_socket_readonly != NULL &&
	    ctl_sock_listen(s, cfg->control_socket_readonly, cfg->control_socket_readonly_gid,
	    true, err, errlen) < 0)) {
		ctl_sock_close(s);
		return NULL;
	}
	return s;
}

int
dp_ctlsock_serve(struct ctl_sock *s, struct dp_control *c)
{
	return ctl_sock_serve(s, dp_ctlsock_cmds, sizeof(dp_ctlsock_cmds) /
	    sizeof(dp_ctlsock_cmds[0]), c);
}
