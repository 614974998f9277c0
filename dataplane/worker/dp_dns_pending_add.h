/*
 * A query remembered in the table of queries in flight (dp_dns_pending.c), inline: the
 * datagram's path (dp_dns.c) remembers every query it forwards, and pays no call for it;
 * the answer's match (dp_pending_match()) searches the same way.
 */
#ifndef DP_DNS_PENDING_ADD_H
#define DP_DNS_PENDING_ADD_H

#include <string.h>


#include "dp_dns_int.h"
#include "dp_dns_pending.h"
#include "dp_flow_tab.h"
#include "dp_hash.h"
#include "sni/copy8.h"

#define DP_ID_TRIES	4	/* fresh keys tried when one is taken */
#define DP_PENDING_PORT_MIN	1024	/* a query's port of namegate's: unprivileged */

/*
 * A fresh query ID (low 16 bits) and source port (high 16, at least DP_PENDING_PORT_MIN):
 * unpredictable, so that nobody but the resolver can answer (RFC 5452 s9.2), not even an
 * accomplice who knows the VM's own port. Drawn from a keyed PRF (SipHash under the
 * start-time key, dp_hash_bytes()) of the table's seed and a count of draws, not from
 * rte_rand(): its generator is linear, so enough of its outputs, wherever they left
 * namegate, would give away its state and every key drawn after. One PRF output gives two
 * keys. A port below the minimum is drawn again (one draw in 64): every port of the range
 * as likely as the next, which a remainder would not leave them.
 */
static inline uint32_t
dp_pending_fresh(struct dp_pending *t)
{
	uint32_t r;

	do {
		if (t->rand_left == 0) {
			const uint64_t in[2] = { t->ft.seed, t->draws++ };

			t->rand = dp_hash_bytes(in, sizeof(in));
			t->rand_left = 2;
		}
		t->rand_left--;
		r = (uint32_t)(t->rand >> (32 * t->rand_left));
	} while ((r >> 16) < DP_PENDING_PORT_MIN);
	return r;
}

/* Keyed: over TCP the VM chooses the key's port and ID, and must not aim them at a bucket. */
static inline uint32_t
dp_pending_hash(const struct dp_pending *t, const struct dp_pending_key *k)
{
	return dp_hash_crc_inline(k, sizeof(*k), t->ft.seed);
}

/*
 * k's entry (h its hash), or NULL: in the first bucket, or the other one the tag names.
 * Inlined into the query's insert and the answer's match, each once a query.
 */
static inline __attribute__((always_inline)) struct dp_pending_entry *
dp_pending_find(const struct dp_pending *t, uint32_t h, const struct dp_pending_key *k)
{
	uint16_t tag = dp_ft_tag(h);
	uint32_t b = dp_ft_first(&t->ft, h);

	for (int i = 0; i < 2; i++, b = dp_ft_alt(&t->ft, b, tag))
		for (uint32_t m = dp_ft_match(&t->ft.b[b], tag); m != 0; m &= m - 1) {
			struct dp_pending_entry *e = &t->e[t->ft.b[b].idx[__builtin_ctz(m) / 2]];

			if (memcmp(&e->key, k, sizeof(*k)) == 0)
				return e;
		}
	return NULL;
}

/* The resolver's address into a key: a copy of a known length each, not a sized loop. */
static inline void
dp_pending_resolver(struct dp_pending_key *k, uint8_t family, const uint8_t *addr)
{
	if (family == 4)
		memcpy(k->resolver, addr, 4);
	else
		memcpy(k->resolver, addr, 16);
}

/*
 * dp_pending_add() (dp_dns_int.h), inline for the datagram's path (dp_dns.c): every query
 * it forwards is remembered here, and the call and its spills were a tenth of it. same:
 * the question's slots (dp_pending_same_slot()), counted while the query is in flight, or
 * -1 (dp_pending_add(): over TCP a forger must guess the stream too); with
 * DP_PENDING_SAME_MAX of vm's in it, NULL and *why DP_REASON_VM_LIMIT.
 */
static inline __attribute__((always_inline)) struct dp_pending_entry *
dp_pending_add_in(struct dp_pending *t, const struct pkt *p, uint16_t vm,
    const struct dns_msg *q, const uint8_t *msg, uint64_t now, bool as_written, int32_t same,
    uint32_t max_per_vm, enum dp_reason *why)
{
	struct dp_ft_bucket *first;
	struct dp_pending_entry *e;
	struct dp_pending_key k;
	uint32_t h, i, r;
	int s;

	*why = DP_REASON_ALLOWED;
	if (vm > t->nvms || t->per_vm[vm].n >= max_per_vm ||
	    (same >= 0 && dp_pending_same_count(&t->per_vm[vm], same) >= DP_PENDING_SAME_MAX)) {
		*why = DP_REASON_VM_LIMIT;
		return NULL;
	}
	memset(&k, 0, sizeof(k));
	k.vm = vm;
	k.family = p->family;
	k.proto = p->proto;
	k.port = p->sport;
	k.id = q->id;
	dp_pending_resolver(&k, p->family, p->dst);
	for (int try = 0; try < DP_ID_TRIES; try++) {
		if (!as_written) {
			r = dp_pending_fresh(t);
			k.id = (uint16_t)r;
			k.port = (uint16_t)(r >> 16);
		}
		/* hashed once: found, placed, and removed under it */
		h = dp_pending_hash(t, &k);
		if (dp_pending_find(t, h, &k) != NULL) {
			/* the key is taken: that query's entry stays as it is */
			if (as_written)
				return NULL;
			continue;
		}
		if (t->nfree == 0)
			return NULL;	/* full */
		i = t->free[t->nfree - 1];
		e = &t->e[i];
		e->key = k;
		e->hash = h;
		e->expires = now + DP_PENDING_SECONDS;
		e->vm_id = q->id;
		e->vm_port = p->sport;
		e->same = same;
		e->qtype = q->qtype;
		e->qclass = q->qclass;
		e->qname_len = q->qname_len;
		copy16(e->qname, q->qname, q->qname_len);	/* no call */
		if (msg != NULL)
			dns_name_caps(msg + DNS_HDR_LEN, q->qname_len, e->caps);
		else
			memset(e->caps, 0, sizeof(e->caps));	/* no capital to find */
		e->capped = msg != NULL;
		e->would_block = false;
		e->judged.valid = false;
		/*
		 * in the first bucket, which the search read, when it has room; else the
		 * index's own search for room, whose failure is a full table, near its cap
		 */
		if ((s = dp_ft_free_slot(first = &t->ft.b[dp_ft_first(&t->ft, h)])) >= 0)
			dp_ft_place(first, s, dp_ft_tag(h), i);
		else if (dp_ft_insert(&t->ft, h, i) != 0)
			return NULL;
		t->nfree--;
		t->per_vm[vm].n++;
		t->per_vm[vm].last = i;
		if (same >= 0)
			dp_pending_same_step(&t->per_vm[vm], same, 1);
		e->in_use = true;
		return e;
	}
	return NULL;
}

#endif
