/*
 * The table of queries in flight (dp_dns_pending.h): each forwarded query remembered under
 * the ID it left with, until its answer comes back or it ages out.
 */
#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "dp_dns_int.h"
#include "dp_dns_pending.h"
#include "dp_flow_tab.h"
#include "dp_hash.h"
#include "dp_mem.h"

#define DP_ID_TRIES	4	/* fresh IDs tried when one is taken */

/*
 * A fresh query ID: unpredictable, so that nobody but the resolver can answer (RFC 5452
 * s9.2). Each of rte_rand()'s 64 bits is as unpredictable as the next, so one call gives
 * four IDs, where the call costs twice what the rest of choosing one does.
 */
static inline uint16_t
dp_pending_fresh_id(struct dp_pending *t)
{
	if (t->rand_left == 0) {
		t->rand = rte_rand();
		t->rand_left = 4;
	}
	t->rand_left--;
	return (uint16_t)(t->rand >> (16 * t->rand_left));
}

/* Keyed: the VM chooses its ports (and over TCP its IDs), and must not aim them at a bucket. */
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

struct dp_pending *
dp_pending_create(const char *name, uint32_t cap, uint16_t nvms, int socket)
{
	struct dp_pending *t;

	if ((t = rte_zmalloc_socket("dp_pending", sizeof(*t), 0, socket)) == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	t->cap = cap;
	t->nvms = nvms;
	t->e = rte_zmalloc_socket(name, (size_t)cap * sizeof(t->e[0]), 0, socket);
	t->free = rte_malloc_socket("dp_pending_free", (size_t)cap * sizeof(t->free[0]), 0,
	    socket);
	t->per_vm = rte_zmalloc_socket("dp_pending_vm", (size_t)(nvms + 1) *
	    sizeof(t->per_vm[0]), 0, socket);
	if (t->e == NULL || t->free == NULL || t->per_vm == NULL ||
	    dp_ft_init(&t->ft, cap, dp_hash_seed(), socket) != 0) {
		dp_pending_free(t);
		rte_errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < cap; i++)	/* entry 0 on top */
		t->free[i] = cap - 1 - i;
	t->nfree = cap;
	return t;
}

void
dp_pending_free(struct dp_pending *t)
{
	if (t == NULL)
		return;
	dp_ft_fini(&t->ft);
	rte_free(t->per_vm);
	rte_free(t->free);
	rte_free(t->e);
	rte_free(t);
}

unsigned int
dp_pending_age(struct dp_pending *t, uint64_t now, unsigned int budget)
{
	unsigned int n, aged = 0;

	for (n = 0; n < budget && n < t->cap; n++) {
		struct dp_pending_entry *e = &t->e[t->cursor];

		t->cursor = t->cursor + 1 == t->cap ? 0 : t->cursor + 1;
		if (e->in_use && e->expires <= now) {
			dp_pending_del(t, e);
			aged++;
		}
	}
	return aged;
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
 * Remember q under a fresh random ID, or (keep_id: DNS over TCP, where the query leaves as
 * the VM wrote it but for the name's case) under its own. NULL when the table is full or
 * the ID is taken.
 */
struct dp_pending_entry *
dp_pending_add(struct dp_pending *t, const struct pkt *p, uint16_t vm, const struct dns_msg *q,
    const uint8_t *msg, uint64_t now, bool keep_id, uint32_t max_per_vm, enum dp_reason *why)
{
	struct dp_ft_bucket *first;
	struct dp_pending_entry *e;
	struct dp_pending_key k;
	uint32_t h, i;
	int s;

	*why = DP_REASON_ALLOWED;
	if (vm > t->nvms || t->per_vm[vm].n >= max_per_vm) {
		*why = DP_REASON_VM_LIMIT;
		return NULL;
	}
	memset(&k, 0, sizeof(k));
	k.vm = vm;
	k.family = p->family;
	k.proto = p->proto;
	k.vm_port = p->sport;
	dp_pending_resolver(&k, p->family, p->dst);
	for (int try = 0; try < DP_ID_TRIES; try++) {
		k.id = keep_id ? q->id : dp_pending_fresh_id(t);
		/* hashed once: found, placed, and removed under it */
		h = dp_pending_hash(t, &k);
		if (dp_pending_find(t, h, &k) != NULL) {
			/* the ID is taken: that query's entry stays as it is */
			if (keep_id)
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
		e->qtype = q->qtype;
		e->qclass = q->qclass;
		e->qname_len = q->qname_len;
		memcpy(e->qname, q->qname, q->qname_len);
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
		e->in_use = true;
		return e;
	}
	return NULL;
}

/*
 * The n bytes at x and y the same? A word at a time, the tail as the last eight (bytes
 * compared twice compare the same), with no call for a length memcmp() cannot know.
 */
static inline bool
dp_dns_same_name(const uint8_t *x, const uint8_t *y, size_t n)
{
	uint64_t a, b, diff = 0;

	if (n < 8) {
		for (size_t i = 0; i < n; i++)
			diff |= (uint64_t)(x[i] ^ y[i]);
		return diff == 0;
	}
	for (size_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&a, x + i, 8);
		memcpy(&b, y + i, 8);
		diff |= a ^ b;
	}
	memcpy(&a, x + n - 8, 8);
	memcpy(&b, y + n - 8, 8);
	return (diff | (a ^ b)) == 0;
}

/* Does the answer's question equal the one we forwarded? (RFC 5452 s9.1) */
static bool
dp_dns_same_question(const struct dp_pending_entry *e, const struct dns_msg *a)
{
	return a->qr && a->has_question && a->qtype == e->qtype && a->qclass == e->qclass &&
	    a->qname_len == e->qname_len && dp_dns_same_name(a->qname, e->qname, e->qname_len);
}

const struct dp_dns_judged *
dp_pending_again(const struct dp_pending *t, uint16_t vm, const struct dns_msg *q, uint32_t gen)
{
	const struct dp_pending_entry *e;

	if (vm > t->nvms)
		return NULL;
	/* the entry may have been answered since, and hold another VM's query now */
	e = &t->e[t->per_vm[vm].last];
	return e->in_use && e->key.vm == vm && e->judged.valid && e->judged.again &&
	    e->judged.gen == gen && e->qname_len == q->qname_len &&
	    dp_dns_same_name(e->qname, q->qname, q->qname_len) ? &e->judged : NULL;
}

struct dp_pending_entry *
dp_pending_match(struct dp_pending *t, const struct pkt *p, uint16_t vm, const struct dns_msg *a)
{
	struct dp_pending_key k;
	struct dp_pending_entry *e;

	memset(&k, 0, sizeof(k));
	k.vm = vm;
	k.family = p->family;
	k.proto = p->proto;
	k.vm_port = p->dport;
	k.id = a->id;
	dp_pending_resolver(&k, p->family, p->src);
	e = dp_pending_find(t, dp_pending_hash(t, &k), &k);
	return e != NULL && dp_dns_same_question(e, a) ? e : NULL;
}

uint64_t
dp_pending_mem(uint32_t cap, uint16_t nvms)
{
	struct dp_pending *t = NULL;

	return dp_mem_alloc(sizeof(*t)) + dp_mem_alloc((uint64_t)cap * sizeof(t->e[0])) +
	    dp_mem_alloc((uint64_t)cap * sizeof(t->free[0])) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * sizeof(t->per_vm[0])) +
	    dp_mem_alloc((uint64_t)dp_ft_buckets(cap) * sizeof(struct dp_ft_bucket));
}

uint32_t
dp_pending_count(const struct dp_pending *t, uint16_t vm)
{
	return vm <= t->nvms ? t->per_vm[vm].n : 0;
}
