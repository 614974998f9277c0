/*
 * Approval on the fast path: queries for ask names held in the worker's table
 * (dp_ask.h), announced to the main lcore, and at housekeeping handed back to the DNS
 * module (dp_dns.c) to be answered (denied, timed out) or, once a generation allows the
 * name (an approval's grant), judged again as the query they are, so the answer is learned
 * and bound like any other. This module decides and returns; dp_dns.c acts, and so the two
 * do not call each other.
 */
#include "dp_ask.h"
#include "dp_dns_ask.h"
#include "dp_evt.h"
#include "dp_out.h"

#define DP_ASK_TEXT_DENIED	"namegate: denied by operator"
#define DP_ASK_TEXT_TIMEOUT	"namegate: approval timed out"
#define DP_ASK_TEXT_LIMIT	"namegate: too many queries of this VM wait for approval"

bool
dp_dns_asks(const struct dp_gen *g, uint16_t vm, const char *name, size_t len)
{
	const struct dp_vm *v = &g->vms[vm];

	/* ask only where allow and deny are silent: deny still wins, allow needs no one */
	return g->ask != NULL && !v->audit &&
	    pol_match_name(g->set, v->policy, name, len, POL_PROTO_ANY, 0, NULL) == POL_NO_MATCH &&
	    pol_match_name(g->ask, v->conf_policy, name, len, POL_PROTO_ANY, 0, NULL) == POL_ALLOW;
}

struct dp_fate
dp_dns_ask(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    const struct dns_msg *q, const char *name, size_t len, const char **text)
{
	const struct dp_gen *g = w->gen;
	struct dp_ask_entry *e;
	void *old;

	*text = DP_ASK_TEXT_LIMIT;
	if (m->nb_segs != 1 || !dp_dns_asks(g, vm, name, len))
		return dp_fate(DP_FATE_CONTINUE);
	switch (dp_ask_hold(w->ask, vm, q, m, w->now, g->ask_timeout, g->max_asks_per_vm, g->id,
	    &e, &old)) {
	case DP_ASK_NEW:
		dp_evt_ask(w, DP_EVT_ASK, e, 0, name, len);
		return dp_fate(DP_FATE_HELD);
	case DP_ASK_AGAIN:
		dp_out_free(old);	/* the stub's latest query waits in its place */
		w->ask_absorbed++;
		return dp_fate(DP_FATE_HELD);
	case DP_ASK_VM_LIMIT:
		/* SPEC s8: its own share is full; its neighbours' requests still wait */
		dp_evt_block(w, vm, p, DP_REASON_VM_LIMIT, false, name, len);
		return (struct dp_fate){ .act = DP_FATE_BLOCK, .why = DP_REASON_VM_LIMIT,
			.reply = DP_FATE_REPLY_DNS };
	case DP_ASK_FULL:
		return (struct dp_fate){ .act = DP_FATE_DROP, .why = DP_DROP_TABLE_FULL,
			.reply = DP_FATE_REPLY_DNS };
	}
	return dp_fate(DP_FATE_CONTINUE);
}

/*
 * Does e's wait end now, and how (*how, *text): the operator denied it, a grant came, or
 * its time ran out?
 */
static bool
dp_dns_ask_due(struct dp_worker *w, struct dp_ask_entry *e, enum dp_ask_end *how,
    const char **text)
{
	const struct dp_gen *g = w->gen;
	char name[DNS_NAME_TEXT_MAX];
	int n;

	*text = NULL;
	if (dp_ask_denied(w->ask, e)) {
		*how = DP_ASK_END_DENIED;
		*text = DP_ASK_TEXT_DENIED;
		return true;
	}
	if (e->gen != g->id) {
		/* a grant (or a reload) came: is it still the operator's to decide? */
		e->gen = g->id;
		n = dns_name_to_text(e->qname, e->qname_len, name, sizeof(name));
		if (n <= 0 || !dp_dns_asks(g, e->vm, name, (size_t)n)) {
			*how = DP_ASK_END_RELEASED;
			return true;
		}
	}
	*how = DP_ASK_END_TIMEOUT;
	*text = DP_ASK_TEXT_TIMEOUT;
	return dp_ask_expired(e, w->now);
}

bool
dp_dns_ask_next(struct dp_worker *w, unsigned int *slot, struct rte_mbuf **m, uint16_t *vm,
    const char **text)
{
	for (; *slot < DP_ASK_SLOTS; (*slot)++) {
		struct dp_ask_entry *e = &w->ask->e[*slot];
		char name[DNS_NAME_TEXT_MAX];
		enum dp_ask_end how;
		int n;

		if (e->seq == 0 || !dp_dns_ask_due(w, e, &how, text))
			continue;
		n = dns_name_to_text(e->qname, e->qname_len, name, sizeof(name));
		dp_evt_ask(w, DP_EVT_ASK_END, e, (uint8_t)how, name, n > 0 ? (size_t)n : 0);
		*m = e->frame;
		*vm = e->vm;
		dp_ask_forget(w->ask, e);
		(*slot)++;
		return true;
	}
	return false;
}

void
dp_dns_ask_flush(struct dp_worker *w)
{
	for (unsigned int i = 0; w->ask != NULL && i < DP_ASK_SLOTS; i++) {
		struct dp_ask_entry *e = &w->ask->e[i];

		if (e->seq == 0)
			continue;
		dp_out_free(e->frame);
		dp_ask_forget(w->ask, e);
	}
}
