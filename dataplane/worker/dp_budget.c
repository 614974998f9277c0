/*
 * Which egress budget a name or an address counts in: the budgets' own compiled set, so
 * the answer is the matcher's (the most specific pattern), and a VM whose policy has no
 * budget pays one comparison.
 */
#include "dp_budget.h"
#include "policy/match.h"

static uint8_t
dp_budget_rule(enum pol_verdict v, const struct pol_rule *r)
{
	return v == POL_ALLOW && r != NULL && r->index < DP_BUDGETS_MAX ?
	    (uint8_t)(r->index + 1) : 0;
}

uint8_t
dp_budget_of_name(const struct dp_gen *g, uint16_t vm, const char *name, size_t len)
{
	const struct pol_rule *r = NULL;
	enum pol_verdict v;

	if (g->vms[vm].budgets == 0)
		return 0;
	v = pol_match_name(g->budget_set, g->vms[vm].conf_policy, name, len, POL_PROTO_ANY, 0, &r);
	return dp_budget_rule(v, r);
}

uint8_t
dp_budget_of_addr_match(const struct dp_gen *g, uint16_t vm, uint8_t family,
    const uint8_t *addr)
{
	const struct pol_rule *r = NULL;
	enum pol_verdict v;

	v = pol_match_addr(g->budget_set, g->vms[vm].conf_policy, addr, family == 4 ? 4 : 16,
	    POL_PROTO_ANY, 0, &r);
	return dp_budget_rule(v, r);
}
