/*
 * DNS queries on the fast path: a query judged (over UDP and TCP alike), the UDP datagram
 * itself, and the queries approval hands back. Answers are dp_dns_answer.c's; the table of
 * queries in flight is dp_dns_pending.c's.
 */
#include <string.h>

#include "dp_bind.h"
#include "dp_budget.h"
#include "dp_dns.h"
#include "dp_dns_ask.h"
#include "dp_dns_budget.h"
#include "dp_dns_int.h"
#include "dp_dns_pending_add.h"
#include "dp_dns_qread.h"
#include "dp_evt.h"
#include "dp_hash.h"
#include "dp_out.h"
#include "sni/dns.h"
#include "sni/frame.h"

const uint8_t dp_dns_lower[DNS_CASE_BYTES];	/* every letter lower case */

/* A refusal of a UDP query: what it is built from, and what it says. */
struct dp_dns_refusal {
	const struct rte_mbuf *m;
	const struct pkt *p;
	const struct dns_msg *q;
	uint8_t rcode;
	const char *text;
};

static int
dp_dns_refusal_build(const void *arg, uint8_t *out, size_t cap)
{
	const struct dp_dns_refusal *r = arg;

	return frame_dns_refusal_text(rte_pktmbuf_mtod(r->m, const uint8_t *),
	    rte_pktmbuf_data_len(r->m), r->p, r->q, r->rcode, r->q->edns, r->text, out, cap);
}

/*
 * Answer the UDP query q in m (decoded as p) ourselves with rcode, and with EDNS an EDE 15
 * whose EXTRA-TEXT is text. The answer is a frame this module builds from the query (the
 * exit reads no DNS); m's own fate is the caller's.
 */
static void
dp_dns_refuse_why(struct dp_worker *w, const struct rte_mbuf *m, const struct pkt *p,
    const struct dns_msg *q, uint8_t rcode, const char *text)
{
	const struct dp_dns_refusal r = { .m = m, .p = p, .q = q, .rcode = rcode, .text = text };

	(void)dp_out_build(w, DP_PORT_VM, dp_dns_refusal_build, &r);
}

/* Answer the query in m ourselves (REFUSED or NXDOMAIN, EDE "Blocked" with EDNS). */
static void
dp_dns_refuse(struct dp_worker *w, const struct rte_mbuf *m, const struct pkt *p,
    const struct dns_msg *q, uint8_t rcode)
{
	dp_dns_refuse_why(w, m, p, q, rcode, FRAME_DNS_EDE_TEXT);
}

/*
 * Only a plain query (opcode 0) with exactly one question of class IN and nothing after
 * the message (len bytes) may leave: every other shape could carry data (the class is 16
 * bits the VM chooses, and only IN names hosts).
 */
static inline bool
dp_dns_query_shaped(const struct dns_msg *q, size_t len)
{
	return !q->qr && q->opcode == 0 && q->has_question && q->msg_len == len &&
	    q->qclass == DNS_CLASS_IN && dp_dns_question_plain(q);
}

/*
 * Is the question of q allowed for vm? Only a query of the shape above, and a question a
 * wildcard allows must also fit the suffix's budget of new questions.
 */
static inline __attribute__((always_inline)) enum dp_reason
dp_dns_query_judge_in(struct dp_worker *w, uint16_t vm, const struct dns_msg *q, size_t len,
    char *name, size_t namelen, struct dp_dns_judged *j)
{
	const struct dp_gen *g = w->gen;
	const struct pol_rule *rule;
	enum pol_verdict v;
	int n;

	name[0] = '\0';	/* the caller's event names it whatever we return */
	if (j != NULL)
		j->valid = j->again = false;
	/* a name that is not a host's is denied unnamed, as it is written in no text */
	if (!dp_dns_query_shaped(q, len) ||
	    (n = dp_dns_host_text(q->qname, q->qname_len, name, namelen)) <= 0)
		return DP_REASON_DNS_DENIED;
	if (j == NULL) {
		v = pol_match_name(g->set, g->vms[vm].policy, name, (size_t)n, POL_PROTO_ANY, 0,
		    &rule);
	} else {
		/*
		 * the answer's ports from the same walk: no second match of the name, whose
		 * text is lower case (the parsers lowered q->qname)
		 */
		v = pol_match_lower_and_ports(g->set, g->vms[vm].policy, name, (size_t)n,
		    POL_PROTO_ANY, 0, &rule, &j->ports);
		/* field by field: ports stay where the walk wrote them, not copied twice */
		j->valid = true;
		j->text_len = (uint16_t)n;
		j->gen = g->id;
		j->hash = 0;
	}
	if (v != POL_ALLOW)
		return DP_REASON_DNS_DENIED;
	/*
	 * dp_dns_budget_judge()'s own first test, here to spare most queries the call: an
	 * exact pattern allows one name, nothing to count
	 */
	if (g->names_per_suffix == 0 || rule == NULL || rule->kind != POL_NAME_WILD) {
		if (j != NULL)
			j->again = true;	/* nothing counted: the name's next query alike */
		return DP_REASON_ALLOWED;
	}
	return dp_dns_budget_judge(w, vm, rule, name, (size_t)n, q->qtype);
}

enum dp_reason
dp_dns_query_judge(struct dp_worker *w, uint16_t vm, const struct dns_msg *q, size_t len,
    char *name, size_t namelen, struct dp_dns_judged *j)
{
	return dp_dns_query_judge_in(w, vm, q, len, name, namelen, j);
}

/* May the query wait for approval? Its fate when it does, or was refused there. */
static struct dp_fate
dp_dns_query_ask(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    const struct dns_msg *q, const char *name)
{
	const char *text;
	struct dp_fate fate = dp_dns_ask(w, m, p, vm, q, name, strnlen(name, DNS_NAME_TEXT_MAX),
	    &text);

	if (fate.reply == DP_FATE_REPLY_DNS) {
		dp_dns_refuse_why(w, m, p, q, DNS_RCODE_REFUSED, text);
		fate.reply = DP_FATE_REPLY_NONE;
	}
	return fate;
}

/*
 * A query that was not allowed (why): answered and blocked, or in audit mode counted and
 * let go on (CONTINUE).
 */
static struct dp_fate
dp_dns_query_refuse(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    const struct dns_msg *q, const char *name, enum dp_reason why)
{
	const struct dp_gen *g = w->gen;
	struct dp_vm_stats *s = &w->vm_stats[vm];
	bool audit = g->vms[vm].audit;

	s->dns_blocked++;
	dp_evt_block(w, vm, p, why, audit && !q->qr && q->has_question,
	    name, q->has_question ? strnlen(name, DNS_NAME_TEXT_MAX) : 0);
	if (!audit || q->qr || !q->has_question) {
		if (!q->qr)
			dp_dns_refuse(w, m, p, q, q->has_question && q->opcode == 0 &&
			    q->msg_len == p->payload_len ? g->blocked_rcode : DNS_RCODE_REFUSED);
		return (struct dp_fate){ .act = DP_FATE_BLOCK, .why = (uint8_t)why };
	}
	s->blocked[why]++;
	return dp_fate(DP_FATE_CONTINUE);
}

/*
 * The query q in m remembered and sent on, rewritten: with an ID and a source port of
 * namegate's own, which an accomplice of the VM's cannot know to forge its answer. j (and
 * the name's text): its judgement, kept for the answer with the name's hash and budget,
 * which name NULL says j holds already. upper: the name may hold an upper-case letter
 * (dp_dns_query_read()).
 */
static struct dp_fate
dp_dns_query_send(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm,
    const struct dns_msg *q, bool allowed, const struct dp_dns_judged *j, const char *name,
    bool upper)
{
	struct dp_pending_entry *e;
	enum dp_reason why;
	uint64_t hash;
	uint8_t *dns;

	/* the name's hash counts its question in flight; unnamed (audited), its wire form's */
	hash = !j->valid ? dp_hash_bytes(q->qname, q->qname_len) :
	    name != NULL ? dp_name_hash(name, j->text_len) : j->hash;
	if ((e = dp_pending_add_in(w->pending, p, vm, q, upper ? p->payload : NULL, w->now, false,
	    dp_pending_same_slot(hash, q->qtype), w->gen->max_pending_per_vm, &why)) == NULL) {
		/* the VM asks again; at its quota the cost is its own, never a neighbour's */
		dp_dns_refuse(w, m, p, q, DNS_RCODE_SERVFAIL);
		return why == DP_REASON_VM_LIMIT ? dp_fate_block(why, DP_FATE_REPLY_NONE) :
		    dp_fate_drop(DP_DROP_TABLE_FULL);
	}
	e->would_block = !allowed;
	if (j->valid) {
		e->judged = *j;
		if (name != NULL) {
			e->judged.hash = hash;
			/* connections through the binding count in the name's budget */
			e->judged.ports.budget = dp_budget_of_name(w->gen, vm, name,
			    j->text_len);
		}
	}
	/* p->payload points into m: the rewrites are in place */
	dns = (uint8_t *)(uintptr_t)p->payload;
	frame_dns_udp_set_id_port(dns, e->key.id, dns - 8, e->key.port);
	/*
	 * lower case: the resolver sees one question however the VM spelled it. A question
	 * with no capital (its caps all zero) and no answer records is lower case already.
	 */
	if (q->ancount != 0 || (upper && memcmp(e->caps, dp_dns_lower, DNS_CASE_BYTES) != 0))
		frame_dns_spell(dns - 8, dns, p->payload_len, q->qname_len, dp_dns_lower);
	return dp_fate_pass(!allowed);
}

struct dp_fate
dp_dns_query_udp(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm)
{
	const struct dp_dns_judged *again;
	char name[DNS_NAME_TEXT_MAX];
	struct dp_dns_judged j;
	struct dp_fate fate;
	enum dp_reason why;
	struct dns_msg q;
	bool upper;

	if (dp_dns_query_read_in(p->payload, p->payload_len, &q, &upper) != DNS_OK) {
		w->vm_stats[vm].dns_blocked++;
		/* not DNS: maybe a tunnel */
		return dp_fate_block(DP_REASON_DNS_DENIED, DP_FATE_REPLY_NONE);
	}
	/*
	 * the VM's last question again (the AAAA after the A): its judgement stands, name
	 * text, policy, hash and budget alike, under the generation that made it
	 */
	if ((again = dp_pending_again(w->pending, vm, &q, w->gen->id)) != NULL &&
	    dp_dns_query_shaped(&q, p->payload_len)) {
		j = *again;
		why = DP_REASON_ALLOWED;
	} else {
		again = NULL;
		/* judged inline: the datagram is the most queries' way, TCP's calls the same */
		why = dp_dns_query_judge_in(w, vm, &q, p->payload_len, name, sizeof(name), &j);
		if (why == DP_REASON_DNS_DENIED && name[0] != '\0' &&
		    (fate = dp_dns_query_ask(w, m, p, vm, &q, name)).act != DP_FATE_CONTINUE)
			return fate;	/* it waits for approval (dp_dns_ask.c), or was refused */
	}
	if (why == DP_REASON_ALLOWED)
		w->vm_stats[vm].dns_allowed++;
	else if ((fate = dp_dns_query_refuse(w, m, p, vm, &q, name, why)).act != DP_FATE_CONTINUE)
		return fate;
	return dp_dns_query_send(w, m, p, vm, &q, why == DP_REASON_ALLOWED, &j,
	    again == NULL ? name : NULL, upper);
}

/*
 * A held query handed back by approval (dp_dns_ask_next()): answered with text, or (text
 * NULL) judged again under this generation as the query it is.
 */
static void
dp_dns_ask_end(struct dp_worker *w, struct rte_mbuf *m, uint16_t vm, const char *text)
{
	struct dns_msg q;
	struct pkt p;

	/* the frame was decoded and parsed when it came: both hold again */
	if (!dp_hold_decode(m, &p) || dns_msg_parse(p.payload, p.payload_len, &q) != DNS_OK) {
		dp_fate_apply(w, m, &p, vm, true, dp_fate_drop(DP_DROP_DNS_BAD));
		return;
	}
	if (text == NULL) {
		dp_fate_apply(w, m, &p, vm, true, dp_dns_query_udp(w, m, &p, vm));
		return;
	}
	dp_dns_refuse_why(w, m, &p, &q, DNS_RCODE_REFUSED, text);
	w->vm_stats[vm].dns_blocked++;
	dp_fate_apply(w, m, &p, vm, true, (struct dp_fate){ .act = DP_FATE_BLOCK,
	    .why = DP_REASON_DNS_DENIED });
}

void
dp_dns_ask_sweep(struct dp_worker *w)
{
	unsigned int slot = 0;
	struct rte_mbuf *m;
	const char *text;
	uint16_t vm;

	while (dp_dns_ask_next(w, &slot, &m, &vm, &text))
		dp_dns_ask_end(w, m, vm, text);
}
