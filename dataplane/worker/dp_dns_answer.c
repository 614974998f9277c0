/*
 * DNS answers on the fast path (over UDP and TCP alike): the addresses an answer gives
 * bound to its question's name, the ones that cannot be removed, and the UDP datagram sent
 * back to the VM as it asked. The queries are dp_dns.c's.
 */
#include <errno.h>
#include <string.h>

#include "dp_bind.h"
#include "dp_bind_learn.h"
#include "dp_budget.h"
#include "dp_dns.h"
#include "dp_dns_int.h"
#include "dp_evt.h"
#include "dp_gen.h"
#include "sni/dns.h"
#include "sni/frame.h"
#include "sni/frame_rebind.h"

/*
 * The name an answer's addresses are bound to, and what binding them has come to; what
 * every address needs of the worker and its generation is found once an answer.
 */
struct dp_dns_learner {
	struct dp_worker *w;
	const struct dp_gen *g;
	const struct dp_vm *v;
	struct dp_binds *binds;
	uint16_t vm;
	bool named;			/* a NOERROR answer to a question with a name */
	bool limited;			/* the VM's share ran out (one event per answer) */
	bool refused;			/* no room for the bindings' events: the answer goes not */
	unsigned int reserved;		/* bindings whose room the answer's check found */
	unsigned int bound;		/* events put: the main lcore is woken once after */
	uint64_t hash;
	struct pol_ports ports;
	struct dp_evt_binder evt;
	int n;
	char name[DNS_NAME_TEXT_MAX];
};

/* dp_dns_room() found no room: the answer refused, and counted, once. */
static __attribute__((noinline)) bool
dp_dns_no_room(struct dp_dns_learner *l, enum dp_evt_room room)
{
	struct dp_worker *w = l->w;

	switch (room) {
	case DP_EVT_ROOM_OK:
		return true;
	case DP_EVT_ROOM_VM_SHARE:
		/* SPEC s8: a VM past its share of a table is charged with vm_limit, not others */
		dp_evt_block(w, l->vm, NULL, DP_REASON_VM_LIMIT, false, l->name,
		    l->n > 0 ? (size_t)l->n : 0);
		w->vm_stats[l->vm].blocked[DP_REASON_VM_LIMIT]++;
		break;
	case DP_EVT_ROOM_FULL:
		w->drops[DP_DROP_BIND_QUEUE_FULL]++;
		break;
	}
	l->refused = true;
	return false;
}

/*
 * Is there room on the bind ring for n more of the answer's bindings? If not, the whole
 * answer is refused (l->refused) and counted once: dropped, the VM's resolver asks again,
 * rather than a binding the fast path honours without nftables ever hearing of it. Inline:
 * every answer asks once, and the room is almost always there.
 */
static inline __attribute__((always_inline)) bool
dp_dns_room(struct dp_dns_learner *l, unsigned int n)
{
	enum dp_evt_room room;

	if (l->refused)
		return false;
	if ((room = dp_evt_bind_room(l->w, l->vm, n)) == DP_EVT_ROOM_OK)
		return true;
	return dp_dns_no_room(l, room);
}

/*
 * May d be bound at all? Not a resolver's address, which opens DNS only and only to port
 * 53; nor one DNS may never bind (frame_addr_rebind()) or a VM's own, unless an address
 * pattern allows it (SPEC s4.3). Either, itself or through one of the IPv4 addresses it
 * embeds (NAT64, 6to4, Teredo, ...: frame_addr_embedded_v4()), found once for both: the
 * compares frame_addr_rebind() makes, asked here of the addresses found.
 * Inline: asked of every address, where a call cost its spills.
 */
static inline __attribute__((always_inline)) bool
dp_dns_bindable(const struct dp_gen *g, const struct dp_vm *v, const struct dns_addr *d)
{
	uint8_t v4[FRAME_EMBEDDED_V4_MAX][4];
	uint8_t kind = dp_gen_addr_kind(g, d->family, d->addr);
	bool rebind;

	if (d->family == 4) {
		rebind = frame_rebind4(d->addr);
	} else if (d->family == 6) {
		size_t n = frame_addr_embedded_v4(d->addr, v4, FRAME_EMBEDDED_V4_MAX);

		rebind = frame_rebind6(d->addr);
		for (size_t i = 0; i < n; i++) {
			kind |= dp_gen_addr_kind(g, 4, v4[i]);
			rebind |= frame_rebind4(v4[i]);
		}
	} else {
		rebind = true;		/* what cannot be classified is never bound */
	}
	if (kind & DP_ADDR_RESOLVER)
		return false;
	return !(rebind || (kind & DP_ADDR_VM)) ||
	    pol_match_addr(g->set, v->policy, d->addr, d->family == 4 ? 4 : 16, POL_PROTO_ANY, 0,
	    NULL) == POL_ALLOW;
}

/*
 * Bind one address; false (it is removed from the answer) when it is not. Inline in the
 * loop over a plain answer's addresses (dp_dns_keep_all()), every address of most answers.
 */
static inline __attribute__((always_inline)) bool
dp_dns_keep_one(struct dp_dns_learner *l, const struct dns_addr *d)
{
	struct dp_worker *w = l->w;
	const struct dp_gen *g = l->g;
	struct pol_addr addr;
	uint32_t ttl = d->ttl;
	uint64_t expires;
	int rc;

	if (!l->named)
		return false;
	/* an IPv4 address comes with its last twelve bytes zero (the parser, the editor) */
	addr.family = d->family;
	memcpy(addr.a, d->addr, sizeof(addr.a));
	if (!dp_dns_bindable(g, l->v, d)) {
		w->vm_stats[l->vm].blocked[DP_REASON_REBIND]++;
		return false;
	}
	ttl = ttl < g->min_ttl ? g->min_ttl : ttl > g->max_ttl ? g->max_ttl : ttl;
	expires = w->now + ttl;
	/*
	 * The answer's check found room for its chain's addresses all at once, and only this
	 * worker fills its ring: each of them has its room. Any more (hints, addresses past
	 * the parser's) are asked for one by one.
	 */
	if (l->reserved > 0)
		l->reserved--;
	else if (!dp_dns_room(l, 1))
		return false;
	rc = dp_bind_learn_in(l->binds, l->vm, &addr, l->hash, &l->ports, g->id, expires,
	    g->max_bindings_per_vm);
	if (rc == -EDQUOT) {
		/* the VM's own share is full: its further addresses open nothing */
		if (!l->limited)
			dp_evt_block(w, l->vm, NULL, DP_REASON_VM_LIMIT, false, l->name,
			    (size_t)l->n);
		l->limited = true;
		w->vm_stats[l->vm].blocked[DP_REASON_VM_LIMIT]++;
		return false;
	}
	if (rc != 0) {
		/* not bound here, so not in nftables either: the two never disagree */
		w->drops[DP_DROP_TABLE_FULL]++;
		return false;
	}
	dp_evt_bind_quiet(w, &l->evt, &addr, ttl, expires);
	l->bound++;
	return true;
}

/* dns_keep_fn: dp_dns_keep_one(), for the editor to ask. */
static bool
dp_dns_keep(void *arg, const struct dns_addr *d)
{
	return dp_dns_keep_one(arg, d);
}

/* dp_dns_keep_one() of each of a plain answer's addresses (a->addrs): bit i, the i-th kept. */
static uint64_t
dp_dns_keep_all(struct dp_dns_learner *l, const struct dns_msg *a)
{
	uint64_t kept = 0;

	for (unsigned int i = 0; i < a->nb_addrs; i++)
		if (dp_dns_keep_one(l, &a->addrs[i]))
			kept |= 1ull << i;
	return kept;
}

/*
 * The text of the question name of a (out: DNS_NAME_TEXT_MAX bytes), or -1. When its query
 * e found it to print byte for byte (one character fewer than the wire form's bytes less
 * the root: no byte escaped), it is joined (dp_dns_join()), not written out again.
 */
static int
dp_dns_answer_text(const struct dns_msg *a, const struct dp_pending_entry *e, char *out)
{
	if (e == NULL || !e->judged.valid || a->qname_len < 2 ||
	    e->judged.text_len != a->qname_len - 2)
		return dns_name_to_text(a->qname, a->qname_len, out, DNS_NAME_TEXT_MAX);
	return dp_dns_join(a->qname, a->qname_len, out);
}

enum dns_edit_status
dp_dns_learn(struct dp_worker *w, uint16_t vm, const struct dns_msg *a,
    const struct dp_pending_entry *e, uint8_t *msg, size_t len, size_t cap, bool same_len,
    size_t *out_len, bool *refused, bool *rewritten)
{
	const struct dp_gen *g = w->gen;
	struct dp_dns_learner l;
	struct dns_edit_stats st;
	enum dns_edit_status rc;
	unsigned int flags;

	/* field by field: the name's 1 KiB is written by dns_name_to_text(), not zeroed */
	l.w = w;
	l.g = g;
	l.v = &g->vms[vm];
	l.binds = w->ctx->binds;
	l.vm = vm;
	l.limited = l.refused = false;
	l.bound = 0;
	l.hash = 0;
	memset(&l.ports, 0, sizeof(l.ports));

	l.n = dp_dns_answer_text(a, e, l.name);
	l.named = a->rcode == DNS_RCODE_NOERROR && l.n > 0;
	if (l.named && e != NULL && e->judged.valid && e->judged.gen == g->id) {
		/* the query's judgement of the same name, under the same generation */
		l.hash = e->judged.hash;
		l.ports = e->judged.ports;
	} else if (l.named) {
		l.hash = dp_name_hash(l.name, (size_t)l.n);
		pol_match_name_ports(g->set, g->vms[vm].policy, l.name, (size_t)l.n, &l.ports);
		/* connections through the binding count in the name's budget */
		l.ports.budget = dp_budget_of_name(g, vm, l.name, (size_t)l.n);
	}
	/* all the chain's addresses at once, so that an answer is refused before any */
	l.reserved = 0;
	if (l.named && dp_dns_room(&l, a->nb_addrs))
		l.reserved = a->nb_addrs;
	if (l.named)
		dp_evt_binder_init(&l.evt, vm, g->id, l.name, (size_t)l.n, &l.ports);
	/*
	 * a was parsed from msg: the editor does not parse it again. A plain one's addresses
	 * are a's, asked here one after the other, the editor told only when one goes.
	 */
	flags = (g->ech_strip ? DNS_EDIT_STRIP_ECH : 0) | (same_len ? DNS_EDIT_SAME_LEN : 0);
	if (l.refused)
		rc = DNS_EDIT_OK;
	else if (dns_edit_plain(a, len, cap, flags, w->dns_scratch, DP_DNS_SCRATCH))
		rc = dns_edit_asked(msg, len, a, cap, flags, dp_dns_keep_all(&l, a),
		    w->dns_scratch, DP_DNS_SCRATCH, out_len, &st);
	else
		rc = dns_edit_parsed(msg, len, a, cap, flags, dp_dns_keep, &l, w->dns_scratch,
		    DP_DNS_SCRATCH, out_len, &st);
	if (l.bound > 0)
		dp_main_wake(w->ctx);
	*refused = l.refused;
	if (rewritten != NULL)
		*rewritten = !l.refused && st.rewritten != 0;
	return rc;
}

/*
 * Is the answer a spelled as e's VM asked already, with nothing for frame_dns_spell() to
 * change? Its own first test, when it would be given only the question (the message as it
 * came, no answer's owner in place): the VM asked in lower case (caps all zero) and the
 * resolver's question holds no capital, as the parser found while it copied the name out
 * (qname_upper) rather than a second walk of it; the caps are all zero when the query had
 * no capital to find (!e->capped, as dp_pending_add() found), not read here. e matched a:
 * their names are one length.
 */
static bool
dp_dns_spelled(const struct dns_msg *a, const struct dp_pending_entry *e, bool rewritten)
{
	return !rewritten && a->an_owners_inline == 0 && !a->qname_upper && !e->capped;
}

struct dp_fate
dp_dns_answer_udp(struct dp_worker *w, struct rte_mbuf *m, const struct pkt *p, uint16_t vm)
{
	struct dp_pending_entry *e;
	size_t len, room, ip_len;
	enum dns_edit_status st;
	struct dns_msg a;
	bool refused, rewritten;
	uint8_t *dns;

	if (dns_msg_parse(p->payload, p->payload_len, &a) != DNS_OK)
		return dp_fate_drop(DP_DROP_DNS_BAD);
	if ((e = dp_pending_match(w->pending, p, vm, &a)) == NULL)
		return (struct dp_fate){ .act = DP_FATE_DISCARD, .why = DP_REASON_UNSOLICITED };
	/* bindings first: the VM may connect the moment it reads the answer */
	dns = (uint8_t *)(uintptr_t)p->payload;	/* points into m: edited in place */
	room = rte_pktmbuf_data_len(m) - (size_t)(p->payload - rte_pktmbuf_mtod(m, const uint8_t *)) +
	    rte_pktmbuf_tailroom(m);
	st = dp_dns_learn(w, vm, &a, e, dns, p->payload_len, room, false, &len, &refused,
	    &rewritten);
	if (refused || st != DNS_EDIT_OK) {
		/*
		 * refused: counted by dp_dns_learn(), and the VM's resolver times out and asks
		 * again; otherwise an answer that cannot be made to give only bound addresses
		 */
		dp_pending_del(w->pending, e);
		return refused ? dp_fate(DP_FATE_FREE) : dp_fate_drop(DP_DROP_DNS_BAD);
	}
	if (len != p->payload_len) {
		ip_len = frame_udp_resize(rte_pktmbuf_mtod(m, uint8_t *) + p->l3_off, p->family,
		    dns - 8, len);
		m->data_len = (uint16_t)(p->l3_off + ip_len);
		m->pkt_len = m->data_len;
	}
	/* to the port and with the ID the VM sent its query with */
	frame_dns_udp_set_id_port(dns, e->vm_id, dns - 6, e->vm_port);
	/*
	 * The VM's spelling, which 0x20 stubs compare byte for byte. In place and at the
	 * same length: owners that are pointers to the question read it too, untouched.
	 * Owners that copy it are spelled too; in a message as it came, with no answer
	 * whose owner starts in place, there is none, and the spelling is given only the
	 * question (its walk ends there) rather than walk every answer to find that out.
	 */
	if (dp_dns_question_plain(&a) && !dp_dns_spelled(&a, e, rewritten))
		frame_dns_spell(dns - 8, dns, !rewritten && a.an_owners_inline == 0 ?
		    a.question_end : len, e->qname_len, e->caps);
	dp_pending_del(w->pending, e);
	return dp_fate(DP_FATE_INGRESS);
}
