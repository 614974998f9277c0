/*
 * Approval on the fast path: queries for ask names held in the worker's table
 * (dp_ask.h), announced to the main lcore, and at housekeeping either answered (denied,
 * timed out) or, once a generation allows the name (an approval's grant), sent on as
 * the query they are, so the answer is learned and bound like any other.
 */
#include <string.h>

#include <rte_mbuf.h>

#include "dp_ask.h"
#include "dp_dns.h"
#include "dp_dns_int.h"
#include "dp_evt.h"
#include "dp_pipeline.h"
#include "dp_worker.h"
#include "sni/frame.h"

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

bool
dp_dns_ask(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    const struct dns_msg *q, const char *name, size_t len)
{
	const struct dp_gen *g = w->gen;
	struct dp_ask_entry *e;
	void *old;

	if (m->nb_segs != 1 || !dp_dns_asks(g, vm, name, len))
		return false;
	switch (dp_ask_hold(w->ask, vm, q, m, w->now, g->ask_timeout, g->max_asks_per_vm, g->id,
	    &e, &old)) {
	case DP_ASK_NEW:
		dp_evt_ask(w, DP_EVT_ASK, e, 0, name, len);
		return true;
	case DP_ASK_AGAIN:
		rte_pktmbuf_free(old);
		w->ask_absorbed++;
		return true;
	case DP_ASK_VM_LIMIT:
		/* SPEC s8: its own share is full; its neighbours' requests still wait */
		dp_dns_refuse_why(w, m, p, q, DNS_RCODE_REFUSED, DP_ASK_TEXT_LIMIT);
		dp_evt_block(w, vm, p, DP_REASON_VM_LIMIT, false, name, len);
		dp_block(w, m, vm, DP_REASON_VM_LIMIT);
		return true;
	case DP_ASK_FULL:
		dp_dns_refuse_why(w, m, p, q, DNS_RCODE_REFUSED, DP_ASK_TEXT_LIMIT);
		dp_drop(w, m, DP_DROP_TABLE_FULL);
		return true;
	}
	return false;
}

/* End e: answer its frame with text, or (text NULL) send it on as a new query. */
static void
dp_dns_ask_end(struct dp_worker *w, struct dp_ask_entry *e, enum dp_ask_end how,
    const char *text)
{
	struct rte_mbuf *m = e->frame;
	char name[DNS_NAME_TEXT_MAX];
	struct dns_msg q;
	struct pkt p;
	int n;

	n = dns_name_to_text(e->qname, e->qname_len, name, sizeof(name));
	dp_evt_ask(w, DP_EVT_ASK_END, e, (uint8_t)how, name, n > 0 ? (size_t)n : 0);
	dp_ask_forget(w->ask, e);
	/* the frame was decoded and parsed when it came: both hold again */
	if (pkt_decode(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), &p) !=
	    PKT_OK || dns_msg_parse(p.payload, p.payload_len, &q) != DNS_OK) {
		dp_drop(w, m, DP_DROP_DNS_BAD);
		return;
	}
	if (text == NULL) {
		dp_dns_query_udp(w, m, &p, e->vm);	/* judged again, under this generation */
		return;
	}
	dp_dns_refuse_why(w, m, &p, &q, DNS_RCODE_REFUSED, text);
	w->vm_stats[e->vm].dns_blocked++;
	dp_block(w, m, e->vm, DP_REASON_DNS_DENIED);
}

void
dp_dns_ask_sweep(struct dp_worker *w)
{
	const struct dp_gen *g = w->gen;

	for (unsigned int i = 0; i < DP_ASK_SLOTS; i++) {
		struct dp_ask_entry *e = &w->ask->e[i];
		char name[DNS_NAME_TEXT_MAX];
		int n;

		if (e->seq == 0)
			continue;
		if (dp_ask_denied(w->ask, e)) {
			dp_dns_ask_end(w, e, DP_ASK_END_DENIED, DP_ASK_TEXT_DENIED);
			continue;
		}
		if (e->gen != g->id) {
			/* a grant (or a reload) came: is it still the operator's to decide? */
			e->gen = g->id;
			n = dns_name_to_text(e->qname, e->qname_len, name, sizeof(name));
			if (n <= 0 || !dp_dns_asks(g, e->vm, name, (size_t)n)) {
				dp_dns_ask_end(w, e, DP_ASK_END_RELEASED, NULL);
				continue;
			}
		}
		if (dp_ask_expired(e, w->now))
			dp_dns_ask_end(w, e, DP_ASK_END_TIMEOUT, DP_ASK_TEXT_TIMEOUT);
	}
}

void
dp_worker_ask_deny(struct dp_worker *w, uint32_t slot, uint64_t seq)
{
	dp_ask_deny(w->ask, slot, seq);
}

void
dp_dns_ask_flush(struct dp_worker *w)
{
	for (unsigned int i = 0; w->ask != NULL && i < DP_ASK_SLOTS; i++) {
		struct dp_ask_entry *e = &w->ask->e[i];

		if (e->seq == 0)
			continue;
		rte_pktmbuf_free(e->frame);
		dp_ask_forget(w->ask, e);
	}
}
