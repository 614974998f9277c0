/* The SNI judged by the policy, a name with capitals lowered, a hello judged (dp_tls_judge.h). */
#include <string.h>

#include "dp_budget.h"
#include "dp_tls.h"
#include "dp_tls_judge.h"
#include "sni/copy8.h"

__attribute__((noinline)) enum dp_reason
dp_tls_judge_policy(struct dp_worker *w, struct dp_flow *f, uint16_t vm, const char *name,
    size_t len, uint64_t hash)
{
	const struct dp_gen *g = w->gen;
	struct pol_addr dst = { .family = f->key.family };

	if (pol_match_name(g->set, g->vms[vm].policy, name, len, f->key.proto, f->key.peer_port,
	    NULL) != POL_ALLOW)
		return DP_REASON_SNI_DENIED;
	memcpy(dst.a, f->key.peer, sizeof(f->key.peer));
	if (g->sni_strict && !dp_bind_has_name(w->ctx->binds, vm, &dst, hash, w->now))
		return DP_REASON_SNI_DENIED;	/* the name never resolved to this address */
	/* from now on the flow stands on its SNI: a reload judges that name */
	f->name_hash = hash;
	f->name_bound = g->sni_strict;		/* loose: allowed, not known to be bound */
	dp_flow_acct(w->flows, f)->name_kind = DP_FLOW_NAME_SNI;
	/* the name's budget joins those of the address: no name takes the flow out of one */
	f->budgets |= dp_budget_bit(dp_budget_of_name(g, vm, name, len));
	return DP_REASON_ALLOWED;
}

__attribute__((noinline)) enum dp_reason
dp_tls_judge_folded(struct dp_worker *w, struct dp_flow *f, uint16_t vm, const uint8_t *name,
    size_t len)
{
	char lower[SNI_HOST_MAX + 1];
	struct sni_name n = { .p = (const uint8_t *)lower, .len = len };

	copy8((uint8_t *)lower, name, len, true);
	return dp_tls_judge_lower(w, f, vm, &n);
}

enum dp_reason
dp_tls_judge(struct dp_worker *w, struct dp_flow *f, uint16_t vm, enum sni_status st,
    const struct tls_hello *hello)
{
	return dp_tls_judge_hello(w, f, vm, st, hello);
}
