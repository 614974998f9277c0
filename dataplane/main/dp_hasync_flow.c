/*
 * The HA pair's flows in the daemon (dp_hasync.h): the flows this box's workers report
 * final go to the peer and into the pair's flow table (dp_ha_flows.h), where a resync
 * finds them; the peer's go into the same table, keyed by this box's VM slots and name
 * hashes, where the workers look them up after a takeover. Main lcore only, but for the
 * metrics (a scrape's thread: counters read as they are).
 */
#include <inttypes.h>
#include <string.h>

#include <rte_lcore.h>

#include "api/dp_api.h"
#include "ctl_ha_sync.h"
#include "ctl_names.h"
#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_control.h"
#include "dp_ha_flows.h"
#include "dp_hasync.h"
#include "policy/load.h"

int
dp_hasync_flows_start(struct dp_hasync *d, FILE *err)
{
	const struct pol_config *cfg = *d->ctl->cfgp;
	struct dp_ctx *ctx = d->ctl->ctx;
	uint32_t cap = ctx->max_flows > 0 ? ctx->max_flows : 1;
	uint32_t share = cfg->max_flows_per_vm < cap / 2 ? cfg->max_flows_per_vm : cap / 2;

	/* as many as the workers' tables hold; no VM more than it may open, nor half */
	if ((ctx->ha_flows = dp_ha_flows_create(cap, share > 0 ? share : 1, ctx->max_vms,
	    (int)rte_socket_id())) == NULL) {
		fprintf(err, "namegate: ha sync: %" PRIu32 " flows: cannot allocate the table\n",
		    cap);
		return -1;
	}
	return 0;
}

/* Queues flow r for the peer (FLOW, or FLOW_END with end): whether it was. */
static bool
dp_hasync_send_flow(struct dp_hasync *d, const struct dp_ha_flow *r, bool end)
{
	const struct dp_gen *g = atomic_load_explicit(&d->ctl->ctx->gen, memory_order_acquire);
	struct ctl_ha_rec rec = { .type = end ? CTL_HA_REC_FLOW_END : CTL_HA_REC_FLOW,
		.family = r->key.family, .flow = { .vm_port = r->key.vm_port,
		.peer_port = r->key.peer_port, .how = r->how == DP_ADMIT_BINDING ?
		CTL_HA_FLOW_BY_NAME : CTL_HA_FLOW_BY_ADDR, .name_bound = r->name_bound != 0,
		.vm_wscale = r->vm_wscale, .peer_wscale = r->peer_wscale, .isn = r->isn,
		.vm_nxt = r->vm_nxt, .peer_ack = r->peer_ack, .peer_wnd = r->peer_wnd,
		.peer_isn = r->peer_isn } };
	uint64_t now = dp_now(d->ctl->ctx);
	size_t len = 0;

	if (r->key.vm >= g->nvms || !g->vms[r->key.vm].present || (!end && r->expires <= now))
		return false;
	rec.ttl = end ? 0 : (uint32_t)(r->expires - now);
	rec.vm = g->vms[r->key.vm].name;
	rec.vm_len = (uint8_t)strnlen(rec.vm, CTL_HA_VM_MAX + 1);
	memcpy(rec.addr, r->key.peer, sizeof(rec.addr));
	if (!end && r->how == DP_ADMIT_BINDING) {
		/* the peer judges the name by its own policy and hashes it with its own key */
		rec.name = ctl_names_by_key(d->ctl->names, r->key.vm, r->name_hash, &len);
		if (rec.name == NULL || len == 0 || len > CTL_HA_NAME_MAX) {
			d->flows_unnamed++;
			return false;
		}
		rec.name_len = (uint8_t)len;
	}
	return ctl_ha_sync_send(d->sync, &rec);
}

void
dp_hasync_flow_event(struct dp_hasync *d, const struct dp_evt *e)
{
	struct dp_ha_flow r = { .key = { .vm = e->vm, .family = e->family, .proto = e->proto,
		.vm_port = e->flow.vm_port, .peer_port = e->port }, .name_hash = e->expires,
		.isn = e->flow.isn, .vm_nxt = e->flow.vm_nxt, .peer_ack = e->flow.peer_ack,
		.peer_wnd = e->flow.peer_wnd, .peer_isn = e->flow.peer_isn, .how = e->flow.how,
		.name_bound = e->flow.name_bound, .vm_wscale = e->flow.vm_wscale,
		.peer_wscale = e->flow.peer_wscale };

	memcpy(r.key.peer, e->addr, sizeof(r.key.peer));
	r.expires = dp_now(d->ctl->ctx) + DP_HA_FLOW_TTL;
	if (e->type == DP_EVT_FLOW_END) {
		dp_ha_flows_del(d->ctl->ctx->ha_flows, &r.key);
		d->flows_sent += dp_hasync_send_flow(d, &r, true);
		return;
	}
	(void)dp_ha_flows_put(d->ctl->ctx->ha_flows, &r);	/* for a resync; counted if lost */
	d->flows_sent += dp_hasync_send_flow(d, &r, false);
}

static void
dp_hasync_resync_flow(const struct dp_ha_flow *r, void *arg)
{
	struct dp_hasync *d = arg;

	d->resync_sent += dp_hasync_send_flow(d, r, false);
}

uint32_t
dp_hasync_flows_resync(struct dp_hasync *d, uint32_t at, uint32_t n)
{
	return dp_ha_flows_walk_some(d->ctl->ctx->ha_flows, at, n, dp_hasync_resync_flow, d);
}

void
dp_hasync_flow_install(struct dp_hasync *d, const struct ctl_ha_rec *in)
{
	struct dp_ctx *ctx = d->ctl->ctx;
	const struct dp_gen *g = atomic_load_explicit(&ctx->gen, memory_order_acquire);
	int slot = dp_hasync_slot(g, in->vm, in->vm_len);
	struct dp_ha_flow r = { .key = { .family = in->family, .proto = PKT_PROTO_TCP,
		.vm_port = in->flow.vm_port, .peer_port = in->flow.peer_port },
		.isn = in->flow.isn, .vm_nxt = in->flow.vm_nxt, .peer_ack = in->flow.peer_ack,
		.peer_wnd = in->flow.peer_wnd, .peer_isn = in->flow.peer_isn,
		.how = DP_ADMIT_ADDR, .name_bound = in->flow.name_bound,
		.vm_wscale = in->flow.vm_wscale, .peer_wscale = in->flow.peer_wscale };

	if (slot < 0) {
		d->unknown_vm++;
		return;
	}
	r.key.vm = (uint16_t)slot;
	r.expires = dp_now(ctx) + (in->ttl < DP_HA_FLOW_TTL ? in->ttl : DP_HA_FLOW_TTL);
	memcpy(r.key.peer, in->addr, in->family == 4 ? 4 : 16);
	if (in->type == CTL_HA_REC_FLOW_END) {
		dp_ha_flows_del(ctx->ha_flows, &r.key);
		return;
	}
	if (in->flow.how == CTL_HA_FLOW_BY_NAME) {
		struct pol_ports ports;

		r.how = DP_ADMIT_BINDING;
		r.name_hash = dp_name_hash(in->name, in->name_len);
		/* judged here, by this box's policy: the workers know names by hash alone */
		memset(&ports, 0, sizeof(ports));
		pol_match_name_ports(g->set, g->vms[slot].policy, in->name, in->name_len, &ports);
		if (pol_ports_allow(&ports, r.key.peer_port)) {
			r.gen = g->id;
			r.name_budget = dp_budget_of_name(g, (uint16_t)slot, in->name,
			    in->name_len);
		}
		/* known by this box's key too, so its own resync can name it back */
		(void)ctl_names_add_keyed(d->ctl->names, (uint16_t)slot, in->name, in->name_len,
		    r.name_hash, NULL);
	}
	if (dp_ha_flows_put(ctx->ha_flows, &r) == 0)
		d->flows_installed++;
}

void
dp_hasync_flows_tick(struct dp_hasync *d)
{
	struct dp_ha_flows *t = d->ctl->ctx->ha_flows;
	uint64_t now = dp_now(d->ctl->ctx);
	uint32_t cap = d->ctl->ctx->max_flows;

	/* once a second, a slice: a pass over the whole table within a minute */
	if (now == d->expired_at)
		return;
	d->expired_at = now;
	(void)dp_ha_flows_expire(t, now, cap / 60 > 4096 ? cap / 60 : 4096, &d->expire_at);
}

void
dp_hasync_flows_render(struct dp_hasync *d, FILE *out)
{
	static const char *const why[DP_HA_REFUSE_MAX] = { "no_record", "policy", "budget",
		"flow_limit" };
	struct dp_ctx *ctx = d->ctl->ctx;
	uint64_t adopted = 0, refused[DP_HA_REFUSE_MAX] = { 0 }, lost[2];

	for (unsigned int i = 0; i < ctx->nworkers; i++) {
		adopted += ctx->workers[i]->ha_adopted;
		for (int k = 0; k < DP_HA_REFUSE_MAX; k++)
			refused[k] += ctx->workers[i]->ha_refused[k];
	}
	dp_ha_flows_refused(ctx->ha_flows, lost);
	fprintf(out, "# HELP namegate_ha_adopted_total Flows adopted after a takeover from the "
	    "peer's records\n# TYPE namegate_ha_adopted_total counter\n"
	    "namegate_ha_adopted_total %" PRIu64 "\n"
	    "# HELP namegate_ha_adopt_refused_total Mid-stream TCP segments without a flow that "
	    "adopted none, by reason\n# TYPE namegate_ha_adopt_refused_total counter\n",
	    adopted);
	for (int k = 0; k < DP_HA_REFUSE_MAX; k++)
		fprintf(out, "namegate_ha_adopt_refused_total{reason=\"%s\"} %" PRIu64 "\n",
		    why[k], refused[k]);
	fprintf(out, "# HELP namegate_ha_flows Flows the pair reported final, kept for "
	    "adoption and resync\n# TYPE namegate_ha_flows gauge\n"
	    "namegate_ha_flows %" PRIu32 "\n"
	    "# HELP namegate_ha_flows_refused_total Flow records lost: the table was full, or "
	    "their VM held its share\n# TYPE namegate_ha_flows_refused_total counter\n"
	    "namegate_ha_flows_refused_total{reason=\"full\"} %" PRIu64 "\n"
	    "namegate_ha_flows_refused_total{reason=\"vm_share\"} %" PRIu64 "\n",
	    dp_ha_flows_count(ctx->ha_flows), lost[0], lost[1]);
}
