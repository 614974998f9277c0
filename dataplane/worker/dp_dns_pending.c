/*
 * The table of queries in flight (dp_dns_pending.h): each forwarded query remembered under
 * the ID it left with, until its answer comes back or it ages out.
 */
#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "dp_dns_int.h"
#include "dp_dns_pending.h"
#include "dp_hash.h"
#include "dp_mem.h"

#define DP_ID_TRIES	4	/* fresh IDs tried when one is taken */

struct dp_pending *
dp_pending_create(const char *name, uint32_t cap, uint16_t nvms, int socket)
{
	struct rte_hash_parameters hp = {
		.name = name,
		.entries = cap,
		.key_len = sizeof(struct dp_pending_key),
		/* keyed: the VM chooses its ports (and over TCP its IDs) */
		.hash_func = dp_hash_crc,
		.hash_func_init_val = dp_hash_seed(),
		.socket_id = socket,
	};
	struct dp_pending *t;

	if ((t = rte_zmalloc_socket("dp_pending", sizeof(*t), 0, socket)) == NULL)
		return NULL;
	t->cap = cap;
	t->nvms = nvms;
	t->e = rte_zmalloc_socket("dp_pending_e", (size_t)cap * sizeof(t->e[0]), 0, socket);
	t->per_vm = rte_zmalloc_socket("dp_pending_vm", (size_t)(nvms + 1) *
	    sizeof(t->per_vm[0]), 0, socket);
	t->h = rte_hash_create(&hp);
	if (t->e == NULL || t->per_vm == NULL || t->h == NULL) {
		dp_pending_free(t);
		rte_errno = ENOMEM;
		return NULL;
	}
	return t;
}

void
dp_pending_free(struct dp_pending *t)
{
	if (t == NULL)
		return;
	rte_hash_free(t->h);
	rte_free(t->per_vm);
	rte_free(t->e);
	rte_free(t);
}

void
dp_pending_del(struct dp_pending *t, struct dp_pending_entry *e)
{
	rte_hash_del_key_with_hash(t->h, &e->key, e->sig);
	e->in_use = false;
	t->per_vm[e->key.vm]--;
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

/*
 * Remember q under a fresh random ID, or (keep_id: DNS over TCP, where the query leaves as
 * the VM wrote it but for the name's case) under its own. NULL when the table is full or
 * the ID is taken.
 *
 * An entry lives at the position rte_hash gives its key, unique while the key is there
 * and below the table's entries (cap): adding a key that is there already gives its
 * position again, where an entry in use says the ID is taken, so no lookup comes first.
 */
struct dp_pending_entry *
dp_pending_add(struct dp_pending *t, const struct pkt *p, uint16_t vm, const struct dns_msg *q,
    const uint8_t *msg, uint64_t now, bool keep_id, uint32_t max_per_vm, enum dp_reason *why)
{
	struct dp_pending_entry *e;
	struct dp_pending_key k;
	hash_sig_t sig;
	int32_t pos;

	*why = DP_REASON_ALLOWED;
	if (vm > t->nvms || t->per_vm[vm] >= max_per_vm) {
		*why = DP_REASON_VM_LIMIT;
		return NULL;
	}
	memset(&k, 0, sizeof(k));
	k.vm = vm;
	k.family = p->family;
	k.proto = p->proto;
	k.vm_port = p->sport;
	memcpy(k.resolver, p->dst, p->family == 4 ? 4 : 16);
	for (int i = 0; i < DP_ID_TRIES; i++) {
		/* unpredictable, so that nobody but the resolver can answer (RFC 5452 s9.2) */
		k.id = keep_id ? q->id : (uint16_t)rte_rand();
		/* hashed once: added, and deleted under it */
		sig = rte_hash_hash(t->h, &k);
		if ((pos = rte_hash_add_key_with_hash(t->h, &k, sig)) < 0)
			return NULL;	/* full */
		if ((uint32_t)pos >= t->cap) {
			/* past the entries: no rte_hash gives one, and none is made here */
			rte_hash_del_key_with_hash(t->h, &k, sig);
			return NULL;
		}
		e = &t->e[pos];
		if (e->in_use) {
			/* the ID is taken: that query's entry stays as it is */
			if (keep_id)
				return NULL;
			continue;
		}
		e->key = k;
		e->sig = sig;
		t->per_vm[vm]++;
		e->expires = now + DP_PENDING_SECONDS;
		e->vm_id = q->id;
		e->qtype = q->qtype;
		e->qclass = q->qclass;
		e->qname_len = q->qname_len;
		memcpy(e->qname, q->qname, q->qname_len);
		dns_name_caps(msg + DNS_HDR_LEN, q->qname_len, e->caps);
		e->in_use = true;
		e->would_block = false;
		e->judged.valid = false;
		return e;
	}
	return NULL;
}

/* Does the answer's question equal the one we forwarded? (RFC 5452 s9.1) */
static bool
dp_dns_same_question(const struct dp_pending_entry *e, const struct dns_msg *a)
{
	return a->qr && a->has_question && a->qtype == e->qtype && a->qclass == e->qclass &&
	    a->qname_len == e->qname_len && memcmp(a->qname, e->qname, e->qname_len) == 0;
}

struct dp_pending_entry *
dp_pending_match(struct dp_pending *t, const struct pkt *p, uint16_t vm, const struct dns_msg *a)
{
	struct dp_pending_key k;
	struct dp_pending_entry *e;
	int32_t pos;

	memset(&k, 0, sizeof(k));
	k.vm = vm;
	k.family = p->family;
	k.proto = p->proto;
	k.vm_port = p->dport;
	k.id = a->id;
	memcpy(k.resolver, p->src, p->family == 4 ? 4 : 16);
	if ((pos = rte_hash_lookup(t->h, &k)) < 0 || (uint32_t)pos >= t->cap)
		return NULL;
	e = &t->e[pos];
	return dp_dns_same_question(e, a) ? e : NULL;
}

uint64_t
dp_pending_mem(uint32_t cap, uint16_t nvms)
{
	struct dp_pending *t = NULL;

	return dp_mem_alloc(sizeof(*t)) + dp_mem_alloc((uint64_t)cap * sizeof(t->e[0])) +
	    dp_mem_alloc((uint64_t)(nvms + 1) * sizeof(t->per_vm[0])) +
	    dp_mem_hash(cap, sizeof(struct dp_pending_key));
}

uint32_t
dp_pending_count(const struct dp_pending *t, uint16_t vm)
{
	return vm <= t->nvms ? t->per_vm[vm] : 0;
}
