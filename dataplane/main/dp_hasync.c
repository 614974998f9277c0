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
	}
	return o;
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
	if ((d->sync = ctl_ha_sync_start(&conf, why, sizeof(why))) == NULL) {
		fprintf(err, "namegate: ha sync: %s\n", why);
		return -1;
	}
	if (ctl->ha != NULL)
		ctl_ha_extra(ctl->ha, "sync", dp_hasync_json, d);
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

/*
 * The resync's next step: as many of the mirror's places as the queue to the peer has
 * room for, less a reserve for what the workers learn meanwhile (sent as it comes: the
 * peer installs a binding twice as once). The sender wakes the loop for the next step.
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
		if (!d->resync_flows) {	/* the bindings, then the flows from their first */
			d->resync_at = ctl_mirror_walk_some(d->ctl->mirror, dp_now(d->ctl->ctx),
			    d->resync_at, (uint32_t)(room - DP_HASYNC_RESERVE),
			    dp_hasync_resync_one, d);
			d->resync_flows = d->resync_at == 0;
			continue;
		}
		d->resync_at = dp_hasync_flows_resync(d, d->resync_at,
		    (uint32_t)(room - DP_HASYNC_RESERVE));
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
		d->resync_flows = false;
	}
	if (d->resyncing)
		dp_hasync_resync_step(d);
	dp_hasync_flows_tick(d);
	ctl_ha_sync_flush(d->sync);
	while ((n = ctl_ha_sync_take(d->sync, in, DP_HASYNC_TAKE, &conn)) > 0) {
		for (size_t i = 0; i < n; i++)
			if (in[i].r.type == CTL_HA_REC_BIND)
				dp_hasync_install(d, &in[i].r);
			else if (in[i].r.type == CTL_HA_REC_FLOW ||
			    in[i].r.type == CTL_HA_REC_FLOW_END)
				dp_hasync_flow_install(d, &in[i].r);
			else if (in[i].r.type == CTL_HA_REC_RESYNC_END)
				d->resynced_conn = conn;	/* all before it installed */
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
	if (d->ctl != NULL && d->ctl->ha != NULL && d->sync != NULL)
		ctl_ha_extra(d->ctl->ha, "sync", NULL, NULL);
	if (d->ctl != NULL)
		d->ctl->hasync = NULL;
	ctl_ha_sync_stop(d->sync);
	d->sync = NULL;
	if (d->ctl != NULL) {	/* the workers stopped: nothing reads it */
		dp_ha_flows_free(d->ctl->ctx->ha_flows);
		d->ctl->ctx->ha_flows = NULL;
	}
}
