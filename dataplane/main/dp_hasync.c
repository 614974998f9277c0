/*
 * The HA pair's sync stream in the daemon (dp_hasync.h). The peer's bindings are installed
 * on the main lcore, the one thread that deletes bindings (the sweeper): dp_bind_learn()
 * takes the same locks a worker learning from a DNS answer takes, so the workers' lookups
 * stay lock-free and see the binding whole, and no entry this thread finds can be retired
 * under it. Each is judged by this box's own policy, as its workers judge an answer; the
 * mirror, the names and nftables learn it as they learn a worker's.
 */
#include <sys/eventfd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl_budget_win.h"
#include "ctl_budgets.h"
#include "ctl_grants.h"
#include "ctl_grants_live.h"
#include "ctl_ha.h"
#include "ctl_ha_sync.h"
#include "ctl_mirror.h"
#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_control.h"
#include "dp_evt.h"
#include "dp_ha_flows.h"
#include "dp_hasync.h"
#include "policy/load.h"

#define DP_HASYNC_TAKE	256	/* records installed per turn of the event loop */
#define DP_HASYNC_RESERVE	4096	/* of the queue to the peer, kept during a resync */

static void
dp_hasync_wake(void *arg)
{
	struct dp_ctx *ctx = arg;

	if (ctx->wake_fd >= 0)
		(void)eventfd_write(ctx->wake_fd, 1);
}

static struct json_object *
dp_hasync_json(void *arg)
{
	struct dp_hasync *d = arg;
	struct json_object *o = ctl_ha_sync_json(d->sync);

	if (o != NULL) {
		json_object_object_add(o, "installed", json_object_new_uint64(d->installed));
		json_object_object_add(o, "unknown_vm", json_object_new_uint64(d->unknown_vm));
		json_object_object_add(o, "not_installed", json_object_new_uint64(d->refused));
		json_object_object_add(o, "flows_installed",
		    json_object_new_uint64(d->flows_installed));
		json_object_object_add(o, "flows_sent", json_object_new_uint64(d->flows_sent));
		json_object_object_add(o, "flows_unnamed",
		    json_object_new_uint64(d->flows_unnamed));
		json_object_object_add(o, "budget_in", json_object_new_uint64(d->budget_in));
		json_object_object_add(o, "budget_unknown",
		    json_object_new_uint64(d->budget_unknown));
		json_object_object_add(o, "grants_in", json_object_new_uint64(d->grants_in));
		json_object_object_add(o, "grants_refused",
		    json_object_new_uint64(d->grants_refused));
		json_object_object_add(o, "names_in", json_object_new_uint64(d->names_in));
		json_object_object_add(o, "names_dropped",
		    json_object_new_uint64(d->names_dropped));
		json_object_object_add(o, "names_lost", json_object_new_uint64(d->names_lost));
	}
	return o;
}

static bool
dp_hasync_behind(void *arg, char *why, size_t len)
{
	struct dp_hasync *d = arg;

	return ctl_ha_sync_behind(d->sync, why, len);
}

/* Queues a budget record (ctl_budgets.h's words for it): whether it was. */
static bool
dp_hasync_budget_send(struct dp_hasync *d, const char *vm, const char *rule, uint32_t per,
    uint32_t age, uint64_t bytes, bool add)
{
	size_t vl = strlen(vm), rl = strlen(rule);
	struct ctl_ha_rec r = { .type = CTL_HA_REC_BUDGET, .vm = vm, .vm_len = (uint8_t)vl,
		.name = rule, .name_len = (uint8_t)rl, .per = per, .age = age, .bytes = bytes,
		.merge = add ? CTL_HA_MERGE_ADD : CTL_HA_MERGE_MAX };

	return vl <= CTL_HA_VM_MAX && rl <= CTL_HA_NAME_MAX && ctl_ha_sync_send(d->sync, &r);
}

/* What a second's step took from this box's workers: to the peer. */
static void
dp_hasync_budget_out(void *arg, const char *vm, const char *rule, uint32_t per, uint32_t age,
    uint64_t bytes, bool add)
{
	(void)dp_hasync_budget_send(arg, vm, rule, per, age, bytes, add);
}

static void
dp_hasync_budget_resync(void *arg, const char *vm, const char *rule, uint32_t per,
    uint32_t age, uint64_t bytes, bool add)
{
	struct dp_hasync *d = arg;

	d->resync_sent += dp_hasync_budget_send(d, vm, rule, per, age, bytes, add);
}

/* Queues a grant (left > 0) or a revoke: whether it was. */
static bool
dp_hasync_grant_send(struct dp_hasync *d, const char *vm, const char *host, uint32_t left)
{
	size_t vl = strlen(vm), hl = strlen(host);
	struct ctl_ha_rec r = { .type = left > 0 ? CTL_HA_REC_GRANT : CTL_HA_REC_REVOKE,
		.vm = vm, .vm_len = (uint8_t)vl, .name = host, .name_len = (uint8_t)hl,
		.ttl = left };

	return vl <= CTL_HA_VM_MAX && hl <= CTL_HA_NAME_MAX && ctl_ha_sync_send(d->sync, &r);
}

static void
dp_hasync_grant_out(void *arg, const char *vm, const char *host, uint32_t left)
{
	(void)dp_hasync_grant_send(arg, vm, host, left);
}

static void
dp_hasync_grant_resync(void *arg, const char *vm, const char *host, uint32_t left)
{
	struct dp_hasync *d = arg;

	d->resync_sent += dp_hasync_grant_send(d, vm, host, left);
}

int
dp_hasync_start(struct dp_hasync *d, struct dp_control *ctl, FILE *err)
{
	const struct pol_config *cfg = *ctl->cfgp;
	struct ctl_ha_sync_conf conf = { .peer = cfg->ha_sync_peer, .listen = cfg->ha_sync_listen,
		.key_file = cfg->ha_sync_key, .wake = dp_hasync_wake, .arg = ctl->ctx };
	char why[256];

	memset(d, 0, sizeof(*d));
	d->ctl = ctl;
	if (cfg->ha_sync_peer == NULL && cfg->ha_sync_listen == NULL)
		return 0;
	if (cfg->ha_sync_key == NULL) {
		fputs("namegate: ha: sync_peer and sync_listen need sync_key_file\n", err);
		return -1;
	}
	if (dp_hasync_flows_start(d, err) != 0)
		return -1;
	if (dp_hasync_names_start(d) != 0) {
		fputs("namegate: ha sync: out of memory for the DNS name budgets' questions\n", err);
		return -1;
	}
	if ((d->sync = ctl_ha_sync_start(&conf, why, sizeof(why))) == NULL) {
		fprintf(err, "namegate: ha sync: %s\n", why);
		return -1;
	}
	if (ctl->ha != NULL) {
		ctl_ha_extra(ctl->ha, "sync", dp_hasync_json, d);
		ctl_ha_behind(ctl->ha, dp_hasync_behind, d);
	}
	if (ctl->budgets != NULL)
		ctl_budgets_set_sync(ctl->budgets, dp_hasync_budget_out, d);
	if (ctl->grants != NULL)	/* a fleet's gateway hears none: the store has them */
		ctl_grants_live_set_pair(ctl->grants, dp_hasync_grant_out, d);
	ctl->hasync = d;
	return 0;
}

int
dp_hasync_slot(const struct dp_gen *g, const char *vm, size_t len)
{
	for (uint16_t s = 0; s < g->nvms; s++)
		if (g->vms[s].present && strlen(g->vms[s].name) == len &&
		    memcmp(g->vms[s].name, vm, len) == 0)
			return s;
	return -1;
}

/* Queues a binding for the peer: whether it was. */
static bool
dp_hasync_send_bind(struct dp_hasync *d, uint16_t slot, uint8_t family, const uint8_t *addr,
    uint64_t expires, const char *name, size_t name_len)
{
	const struct dp_gen *g = atomic_load_explicit(&d->ctl->ctx->gen, memory_order_acquire);
	uint64_t now = dp_now(d->ctl->ctx);
	struct ctl_ha_rec r = { .type = CTL_HA_REC_BIND, .family = family,
		.ttl = expires > now ? (uint32_t)(expires - now) : 0,
		.name = name, .name_len = (uint8_t)name_len };

	if (slot >= g->nvms || !g->vms[slot].present || r.ttl == 0 ||
	    name_len > CTL_HA_NAME_MAX)
		return false;
	r.vm = g->vms[slot].name;
	r.vm_len = (uint8_t)strnlen(r.vm, CTL_HA_VM_MAX + 1);
	memcpy(r.addr, addr, family == 4 ? 4 : 16);
	return ctl_ha_sync_send(d->sync, &r);
}

void
dp_hasync_learned(struct dp_hasync *d, const struct dp_evt *e)
{
	(void)dp_hasync_send_bind(d, e->vm, e->family, e->addr, e->expires, e->name,
	    e->name_len);
}

void
dp_hasync_name_new(struct dp_hasync *d, const struct dp_evt *e)
{
	const struct dp_gen *g = atomic_load_explicit(&d->ctl->ctx->gen, memory_order_acquire);
	struct ctl_ha_rec r = { .type = CTL_HA_REC_NAMES, .qtype = e->port,
		.suffix_len = (uint8_t)e->ttl, .name = e->name, .name_len = e->name_len };

	if (e->vm >= g->nvms || !g->vms[e->vm].present || e->ttl >= e->name_len)
		return;
	r.vm = g->vms[e->vm].name;
	r.vm_len = (uint8_t)strnlen(r.vm, CTL_HA_VM_MAX + 1);
	(void)ctl_ha_sync_send(d->sync, &r);
	dp_hasync_names_keep(d, e->vm, &r);
}

/*
 * The peer's new question to the worker its name hashes to, which charges it in its own
 * name budget (dp_dns_budget_peer()): each worker admits its share of a VM's names, as
 * RSS spreads the VM's queries.
 */
static void
dp_hasync_names_in(struct dp_hasync *d, const struct ctl_ha_rec *r, bool resync)
{
	struct dp_ctx *ctx = d->ctl->ctx;
	const struct dp_gen *g = atomic_load_explicit(&ctx->gen, memory_order_acquire);
	struct dp_evt e = { .version = DP_API_VERSION, .type = DP_EVT_NAME, .port = r->qtype,
		.ttl = r->suffix_len, .name_len = r->name_len };
	int slot = dp_hasync_slot(g, r->vm, r->vm_len);

	if (slot < 0) {
		d->unknown_vm++;
		return;
	}
	e.vm = (uint16_t)slot;
	memcpy(e.name, r->name, r->name_len);
	/* kept for the peer's resync, should it restart; not from its resync: never aging */
	if (!resync)
		dp_hasync_names_keep(d, (uint16_t)slot, r);
	if (dp_evt_peer_name(ctx->workers[dp_name_hash(r->name, r->name_len) % ctx->nworkers],
	    &e))
		d->names_in++;
	else
		d->names_dropped++;
}

static void
dp_hasync_resync_one(const struct ctl_mirror_ent *e, void *arg)
{
	struct dp_hasync *d = arg;

	d->resync_sent += dp_hasync_send_bind(d, e->slot, e->family, e->addr, e->expires,
	    e->name, strlen(e->name));
}

/* One of the peer's bindings into this box's table, judged by this box's policy. */
static void
dp_hasync_install(struct dp_hasync *d, const struct ctl_ha_rec *r)
{
	struct dp_ctx *ctx = d->ctl->ctx;
	const struct dp_gen *g = atomic_load_explicit(&ctx->gen, memory_order_acquire);
	struct pol_addr addr = { .family = r->family };
	struct dp_evt e = { .version = DP_API_VERSION, .type = DP_EVT_BIND, .family = r->family };
	struct pol_ports ports;
	uint32_t ttl = r->ttl > g->max_ttl ? g->max_ttl : r->ttl;
	int slot = dp_hasync_slot(g, r->vm, r->vm_len);

	if (slot < 0) {
		d->unknown_vm++;
		return;
	}
	memcpy(addr.a, r->addr, r->family == 4 ? 4 : 16);
	memset(&ports, 0, sizeof(ports));
	pol_match_name_ports(g->set, g->vms[slot].policy, r->name, r->name_len, &ports);
	ports.budget = dp_budget_of_name(g, (uint16_t)slot, r->name, r->name_len);
	e.vm = (uint16_t)slot;
	e.ttl = ttl;
	e.expires = dp_now(ctx) + ttl;
	e.gen = g->id;
	if (dp_bind_learn(ctx->binds, (uint16_t)slot, &addr, dp_name_hash(r->name, r->name_len),
	    &ports, g->id, e.expires, g->max_bindings_per_vm) != 0) {
		d->refused++;
		return;
	}
	memcpy(e.addr, r->addr, r->family == 4 ? 4 : 16);
	dp_evt_ports_of(&ports, &e.ports);
	e.name_len = r->name_len;
	memcpy(e.name, r->name, r->name_len);
	dp_control_bind(d->ctl, &e);
	d->installed++;
}

/* The peer's budget record into the window it names. */
static void
dp_hasync_budget_in(struct dp_hasync *d, const struct ctl_ha_rec *r)
{
	if (d->ctl->budgets != NULL && ctl_budgets_peer(d->ctl->budgets, dp_now(d->ctl->ctx),
	    r->vm, r->vm_len, r->name, r->name_len, r->per, r->age, r->bytes,
	    r->merge == CTL_HA_MERGE_ADD) == 0)
		d->budget_in++;
	else
		d->budget_unknown++;
}

/*
 * The peer's grant or revoke, made here as one made on the socket; resync: between the
 * peer's RESYNC_BEGIN and RESYNC_END, what it had, not what it just made.
 */
static void
dp_hasync_grant_in(struct dp_hasync *d, const struct ctl_ha_rec *r, bool resync)
{
	char vm[CTL_HA_VM_MAX + 1], host[CTL_HA_NAME_MAX + 1], why[512];

	memcpy(vm, r->vm, r->vm_len);
	vm[r->vm_len] = '\0';
	memcpy(host, r->name, r->name_len);
	host[r->name_len] = '\0';
	if (d->ctl->grants != NULL && ctl_grants_live_peer(d->ctl->grants, vm, host,
	    r->type == CTL_HA_REC_GRANT ? r->ttl : 0, resync, why, sizeof(why)) == 0) {
		d->grants_in++;
		return;
	}
	d->grants_refused++;
	fprintf(stderr, "namegate: ha sync: the peer's %s of %s for %s not taken: %s\n",
	    r->type == CTL_HA_REC_GRANT ? "grant" : "revoke", vm, host,
	    d->ctl->grants != NULL ? why : "no grants here");
}

/*
 * The resync's next step: as many of the mirror's places, then the grants, the flows, the
 * DNS name budgets' questions, the
 * budget windows, as the queue to the peer has room for, less a reserve for what the
 * workers learn meanwhile (sent as it comes: the peer installs a binding twice as once,
 * and takes a window's count at an age as the larger of the two). The sender wakes the
 * loop for the next step.
 */
static void
dp_hasync_resync_step(struct dp_hasync *d)
{
	struct ctl_ha_rec mark = { .type = CTL_HA_REC_RESYNC_END };

	while (d->resyncing) {
		size_t room = ctl_ha_sync_room(d->sync);

		if (room == 0) {	/* the connection went: the next one resyncs */
			d->resyncing = false;
			return;
		}
		if (room <= DP_HASYNC_RESERVE)
			return;		/* the sender wakes the loop once it took the queue */
		room -= DP_HASYNC_RESERVE;
		switch (d->resync_phase) {
		case DP_RESYNC_BINDS:
			d->resync_at = ctl_mirror_walk_some(d->ctl->mirror, dp_now(d->ctl->ctx),
			    d->resync_at, (uint32_t)room, dp_hasync_resync_one, d);
			if (d->resync_at == 0)
				d->resync_phase = DP_RESYNC_GRANTS;
			continue;
		case DP_RESYNC_GRANTS:
			if (room < CTL_GRANTS_MAX)
				return;	/* the grants go at once: after the sender's turn */
			if (d->ctl->grants != NULL)
				ctl_grants_live_each(d->ctl->grants, dp_hasync_grant_resync, d);
			d->resync_phase = DP_RESYNC_FLOWS;
			continue;
		case DP_RESYNC_FLOWS:
			d->resync_at = dp_hasync_flows_resync(d, d->resync_at, (uint32_t)room);
			if (d->resync_at == 0)
				d->resync_phase = DP_RESYNC_NAMES;
			continue;
		case DP_RESYNC_NAMES:
			d->resync_at = dp_hasync_names_resync(d, d->resync_at, (uint32_t)room);
			if (d->resync_at == 0)
				d->resync_phase = DP_RESYNC_BUDGETS;
			continue;
		case DP_RESYNC_BUDGETS:
			if (room < CTL_BUDGET_BUCKETS)
				return;	/* a window's buckets go together */
			if (d->ctl->budgets != NULL)
				d->resync_at = ctl_budgets_resync(d->ctl->budgets,
				    dp_now(d->ctl->ctx), d->resync_at, room,
				    dp_hasync_budget_resync, d);
			break;
		}
		if (d->resync_at == 0) {
			mark.seq = d->resync_sent;
			(void)ctl_ha_sync_send(d->sync, &mark);
			d->resyncing = false;
		}
	}
}

void
dp_hasync_tick(struct dp_hasync *d)
{
	static struct ctl_ha_sync_item in[DP_HASYNC_TAKE];
	uint64_t conn;
	size_t n;

	if (d->sync == NULL)
		return;
	if (ctl_ha_sync_resync_wanted(d->sync)) {
		struct ctl_ha_rec mark = { .type = CTL_HA_REC_RESYNC_BEGIN };

		d->resyncing = ctl_ha_sync_send(d->sync, &mark);
		d->resync_sent = 0;
		d->resync_at = 0;
		d->resync_phase = DP_RESYNC_BINDS;
	}
	if (d->resyncing)
		dp_hasync_resync_step(d);
	dp_hasync_flows_tick(d);
	ctl_ha_sync_flush(d->sync);
	while ((n = ctl_ha_sync_take(d->sync, in, DP_HASYNC_TAKE, &conn)) > 0) {
		for (size_t i = 0; i < n; i++) {
			switch (in[i].r.type) {
			case CTL_HA_REC_BIND:
				dp_hasync_install(d, &in[i].r);
				break;
			case CTL_HA_REC_BUDGET:
				dp_hasync_budget_in(d, &in[i].r);
				break;
			case CTL_HA_REC_GRANT:
			case CTL_HA_REC_REVOKE:
				dp_hasync_grant_in(d, &in[i].r, d->resync_in && d->resync_in_conn == conn);
				break;
			case CTL_HA_REC_NAMES:
				dp_hasync_names_in(d, &in[i].r,
				    d->resync_in && d->resync_in_conn == conn);
				break;
			case CTL_HA_REC_FLOW:
			case CTL_HA_REC_FLOW_END:
				dp_hasync_flow_install(d, &in[i].r);
				break;
			case CTL_HA_REC_RESYNC_BEGIN:
				d->resync_in = true;
				d->resync_in_conn = conn;
				break;
			case CTL_HA_REC_RESYNC_END:
				d->resynced_conn = conn;	/* all before it installed */
				d->resync_in = false;
				break;
			default:	/* the resync's marks: counted by the stream */
				break;
			}
		}
		ctl_ha_sync_applied(d->sync, conn, n);
	}
}

bool
dp_hasync_on(const struct dp_hasync *d)
{
	return d != NULL && d->sync != NULL;
}

uint64_t
dp_hasync_redo(struct dp_hasync *d)
{
	return ctl_ha_sync_redo(d->sync);
}

bool
dp_hasync_resynced(const struct dp_hasync *d, uint64_t conn)
{
	return d->resynced_conn > conn;
}

void
dp_hasync_render(struct dp_hasync *d, FILE *out)
{
	ctl_ha_sync_render(d->sync, out);
	dp_hasync_flows_render(d, out);
}

void
dp_hasync_stop(struct dp_hasync *d)
{
	if (d->ctl != NULL && d->ctl->ha != NULL && d->sync != NULL) {
		ctl_ha_extra(d->ctl->ha, "sync", NULL, NULL);
		ctl_ha_behind(d->ctl->ha, NULL, NULL);
	}
	if (d->ctl != NULL && d->sync != NULL && d->ctl->budgets != NULL)
		ctl_budgets_set_sync(d->ctl->budgets, NULL, NULL);
	if (d->ctl != NULL && d->sync != NULL && d->ctl->grants != NULL)
		ctl_grants_live_set_pair(d->ctl->grants, NULL, NULL);
	if (d->ctl != NULL)
		d->ctl->hasync = NULL;
	ctl_ha_sync_stop(d->sync);
	d->sync = NULL;
	dp_hasync_names_free(d);
	if (d->ctl != NULL) {	/* the workers stopped: nothing reads it */
		dp_ha_flows_free(d->ctl->ctx->ha_flows);
		d->ctl->ctx->ha_flows = NULL;
	}
}
