/*
 * The HA pair's flows from a worker's side (dp_ha_adopt.h): reports to the main lcore,
 * which keeps them and sends them to the peer, and adoption from the table the peer's
 * reports filled (dp_ha_flows.h).
 */
#include "dp_budget.h"
#include "dp_budget_dst.h"
#include "dp_conn.h"
#include "dp_evt.h"
#include "dp_flowlog.h"
#include "dp_ha_adopt.h"
#include "dp_ha_flows.h"

void
dp_ha_report(struct dp_worker *w, struct dp_flow *f)
{
	if (f->ha == DP_FLOW_HA_SYNCED && f->state == DP_FLOW_CLOSING) {
		dp_evt_flow(w, DP_EVT_FLOW_END, f);
		f->ha = DP_FLOW_HA_ENDED;
		return;
	}
	dp_evt_flow(w, DP_EVT_FLOW, f);	/* final, adopted, or again as it is now */
	f->ha = DP_FLOW_HA_SYNCED;
	f->ha_at = (uint32_t)w->now;
}

void
dp_ha_end(struct dp_worker *w, const struct dp_flow *f)
{
	if (dp_ha_told(f))
		dp_evt_flow(w, DP_EVT_FLOW_END, f);
}

static struct dp_flow *
dp_ha_refused(struct dp_worker *w, enum dp_ha_refusal why)
{
	w->ha_refused[why]++;
	return NULL;
}

/*
 * May the connection of record r go on under the current generation, and in which budgets
 * (*budgets)? On its grounds, as a reload judges a flow: its address allowed, or its name
 * allowed on its port (as the main lcore judged it, or by the generation's names).
 */
static bool
dp_ha_allowed(struct dp_worker *w, const struct dp_ha_flow *r, uint8_t *budgets)
{
	const struct dp_gen *g = w->gen;
	struct dp_flow probe = { .key = r->key, .how = r->how, .name_hash = r->name_hash };

	if (r->how == DP_ADMIT_BINDING && r->gen == g->id && g->vms[r->key.vm].present) {
		*budgets = dp_budget_dst(w, r->key.vm, r->key.family, r->key.peer) |
		    dp_budget_bit(r->name_budget);
		return true;
	}
	if (!dp_flow_still_allowed(w, &probe))
		return false;
	*budgets = dp_flow_budgets_again(w, &probe);
	return true;
}

struct dp_flow *
dp_ha_adopt(struct dp_worker *w, const struct pkt *p, const struct dp_flow_key *k,
    bool from_vm)
{
	const struct dp_gen *g = w->gen;
	struct dp_ha_flow r;
	struct dp_flow *f;
	uint8_t budgets = 0;

	/* a SYN opens as it always does; an RST or a bare segment without an ACK opens nothing */
	if (p->proto != PKT_PROTO_TCP || (p->tcp_flags & (PKT_TCP_SYN | PKT_TCP_RST)) ||
	    !(p->tcp_flags & PKT_TCP_ACK))
		return NULL;
	if (w->ctx->ha_flows == NULL || !dp_ha_flows_get(w->ctx->ha_flows, k, &r))
		return dp_ha_refused(w, DP_HA_REFUSE_NO_RECORD);
	if (!dp_ha_allowed(w, &r, &budgets))
		return dp_ha_refused(w, DP_HA_REFUSE_POLICY);
	if (budgets != 0 && dp_budget_set_spent(w, k->vm, budgets))
		return dp_ha_refused(w, DP_HA_REFUSE_BUDGET);
	if ((f = dp_flow_open(w->flows, k, g->max_flows_per_vm, w->now)) == NULL)
		return dp_ha_refused(w, DP_HA_REFUSE_FLOW_LIMIT);
	dp_flowlog_adopted(w, f, from_vm ? p->src : p->dst, r.how == DP_ADMIT_BINDING ?
	    DP_FLOW_NAME_BINDING : DP_FLOW_NAME_NONE);
	f->state = DP_FLOW_ESTABLISHED;
	f->tls = DP_TLS_NONE;
	f->gen = g->id;
	f->how = r.how;
	f->name_hash = r.name_hash;
	f->name_bound = r.name_bound;
	f->budgets = budgets;
	f->isn = r.isn;
	f->vm_nxt = r.vm_nxt;
	f->peer_ack = r.peer_ack;
	f->peer_wnd = r.peer_wnd;
	f->peer_isn = r.peer_isn;
	f->vm_wscale = r.vm_wscale;
	f->peer_wscale = r.peer_wscale;
	f->peer_synced = true;
	w->ha_adopted++;
	dp_ha_report(w, f);	/* now this box's: kept for a resync, and the peer told */
	return f;
}
