/*
 * DNS name budgets on a worker: the verdict for an allowed query, and the HA peer's
 * admitted questions counted here (dp_dns_budget.h). Apart from the table's arithmetic
 * (dp_dns_budget.c), which its unit test drives without a worker.
 */
#include "dp_dns_budget.h"
#include "dp_evt.h"

enum dp_reason
dp_dns_budget_judge(struct dp_worker *w, uint16_t vm, const struct pol_rule *rule,
    const char *name, size_t len, uint16_t qtype)
{
	const struct dp_gen *g = w->gen;
	uint64_t admitted;

	/* an exact pattern allows one name: nothing to count */
	if (g->names_per_suffix == 0 || rule == NULL || rule->kind != POL_NAME_WILD)
		return DP_REASON_ALLOWED;
	admitted = dp_name_budget_admitted(w->name_budget);	/* before this charge */
	switch (dp_name_budget_charge(w->name_budget, vm, name, len, qtype, rule->name_len,
	    g->names_per_suffix, g->names_window, w->now)) {
	case DP_NB_OK:
		/* a new question: the HA peer counts it too */
		if (g->names_to_peer && dp_name_budget_admitted(w->name_budget) != admitted)
			dp_evt_name_new(w, vm, name, len, qtype, rule->name_len);
		return DP_REASON_ALLOWED;
	case DP_NB_SPENT:
		return DP_REASON_DNS_BUDGET;
	default:
		return DP_REASON_VM_LIMIT;
	}
}

void
dp_dns_budget_peer(struct dp_worker *w)
{
	const struct dp_gen *g = w->gen;
	struct dp_evt e[8];
	unsigned int n = dp_evt_peer_take(w, e, sizeof(e) / sizeof(e[0]));

	for (unsigned int i = 0; i < n && g->names_per_suffix != 0; i++)
		if (e[i].vm < g->nvms && e[i].ttl < e[i].name_len)
			(void)dp_name_budget_charge(w->name_budget, e[i].vm, e[i].name,
			    e[i].name_len, e[i].port, e[i].ttl, g->names_per_suffix,
			    g->names_window, w->now);
}
